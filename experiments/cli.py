"""``octoric eval ...``: the paper experiments (one subcommand each, the same options for
every one: ``experiments/experiment.py``), ``octoric eval report DIR`` (a report again from its
stored results), and the other harness tools (handover, rate-quality, sweep).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from octoric.errors import OctoricError
from octoric.experiments.experiment import DEFAULT_TRACES, RunOptions
from octoric.experiments.registry import EXPERIMENTS, Experiment
from octoric.experiments.runner import Backend, Progress, cores, rebuild

# the options every experiment takes; the rest of a namespace is the experiment's own
COMMON = ("quick", "seeds", "traces", "out", "no_plots", "workers", "serial", "ray", "func",
          "command", "eval_command")  # fmt: skip


def _backend_options(e: argparse.ArgumentParser) -> None:
    """Where the runs execute (experiments/runner.py): every local core by default."""
    e.add_argument("--workers", type=int, metavar="N", default=cores(),
                   help="runs in parallel on a local process pool (default: the %(default)s "
                   "cores this process may use; with --ray local: the cluster's CPUs)")  # fmt: skip
    where = e.add_mutually_exclusive_group()
    where.add_argument("--serial", action="store_true",
                       help="one run at a time in this process (no pool)")  # fmt: skip
    where.add_argument("--ray", metavar="ADDRESS",
                       help="run on Ray: 'auto' (the cluster `ray start` runs here), a head's "
                       "address (HOST:6379), or 'local' (a cluster of --workers CPUs started "
                       "for this command and stopped at its end)")  # fmt: skip


def backend_of(args: argparse.Namespace) -> Backend:
    if args.serial:
        return Backend("serial", 1)
    if args.ray:
        return Backend("ray", args.workers, args.ray)
    return Backend("pool", args.workers)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser("eval", help="paper experiments: schemes x traces -> tables, plots")
    sub = p.add_subparsers(dest="eval_command", metavar="EXPERIMENT")
    for exp in EXPERIMENTS.values():
        e = sub.add_parser(exp.name, help=exp.help)
        e.add_argument("--quick", action="store_true", help=exp.quick_help)
        e.add_argument("--seeds", type=int, metavar="N",
                       help="seeds per case (default: the experiment's; --quick: 1)")  # fmt: skip
        e.add_argument("--traces", metavar="DIR", help=f"{exp.traces_help} (default: "
                       f"$OCTORIC_TRACES, else {DEFAULT_TRACES})")  # fmt: skip
        e.add_argument("--out", metavar="DIR", type=Path, default=Path(f"build/{exp.name}-eval"),
                       help="writes runs.jsonl (every run as it finishes: a re-run with "
                       "the same options skips those), report.md, results.json and the PNGs "
                       "here (default: %(default)s)")  # fmt: skip
        e.add_argument("--no-plots", action="store_true", help="write no PNGs")
        _backend_options(e)
        exp.add_arguments(e)
        e.set_defaults(func=_runner(exp))
    r = sub.add_parser("report", help="rebuild a report from its stored runs (not run "
                       "again; the claims judged again, the PNGs kept)")  # fmt: skip
    r.add_argument(
        "dir",
        type=Path,
        metavar="DIR",
        help="an `octoric eval NAME --out DIR` folder (its runs.jsonl, else its "
        "results.json), or a results JSON",
    )
    r.add_argument(
        "--out",
        type=Path,
        metavar="MD",
        help="write the report here (default: DIR/report.md; for a JSON, the .md beside it)",
    )
    r.set_defaults(func=_cmd_report)

    h = sub.add_parser(
        "handover",
        help="octoric run on high-speed rail across gNBs; handover events vs the ground truth",
    )
    h.add_argument(
        "--detection", action="append", choices=("rc", "kpm", "auto"), metavar="PATH",
        help="detection path(s) to run (rc, kpm, auto; repeatable; default: rc and kpm)",
    )  # fmt: skip
    h.add_argument("--duration", type=float, default=300.0, metavar="S",
                   help="seconds per run (default 300)")  # fmt: skip
    h.add_argument("--cells", type=int, default=4, help="cells, one gNB each (default 4)")
    h.add_argument("--ues", type=int, default=8, help="UEs (default 8)")
    h.add_argument("--seed", type=int, default=1)
    h.add_argument(
        "--out", metavar="DIR", default="build/handover-eval",
        help="run folders, results.json and results.md (default: %(default)s)",
    )  # fmt: skip
    h.set_defaults(func=_cmd_handover)

    rq = sub.add_parser("rate-quality", help="measure the simulator's rate -> SSIM/PSNR model "
                        "with libx264 on clips you give (needs ffmpeg)")  # fmt: skip
    rq.add_argument("--clip", action="append", required=True, metavar="NAME=PATH",
                    help="a clip to encode (repeatable); NAME names its model")  # fmt: skip
    rq.add_argument(
        "--out",
        metavar="JSON",
        default="sim/rate_quality.json",
        help="the model file (default: %(default)s, the one the simulator loads)",
    )
    rq.add_argument(
        "--vbv-frames",
        type=float,
        default=4.0,
        help="x264's VBV in frames at the target rate (default 4, as WebRTC's)",
    )
    rq.set_defaults(func=_cmd_rate_quality)
    sw = sub.add_parser("sweep", help="many simulator runs on a process pool or a local Ray "
                        "cluster; identical results for the same seeds")  # fmt: skip
    sw.add_argument("--runs", type=int, default=100, help="runs in the grid (default 100)")
    sw.add_argument("--duration", type=float, default=5.0, metavar="S",
                    help="simulated seconds per run (default 5)")  # fmt: skip
    sw.add_argument("--backend", choices=("pool", "ray"), default="pool",
                    help="ray: a local Ray cluster of --workers CPUs")  # fmt: skip
    sw.add_argument("--workers", type=int, default=cores())
    sw.add_argument("--out", metavar="JSON", default="build/sweep/results.json")
    sw.add_argument("--compare", metavar="JSON",
                    help="check the results run by run against this earlier sweep")  # fmt: skip
    sw.set_defaults(func=_cmd_sweep)

    def _help(args: argparse.Namespace) -> int:
        p.print_help()
        return 2

    p.set_defaults(func=_help)


def _cmd_rate_quality(args: argparse.Namespace) -> int:
    from octoric.experiments import rate_quality as rq

    clips = []
    for item in args.clip:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise OctoricError(f"--clip {item!r}: give NAME=PATH")
        clips.append((name, Path(path)))
    doc = rq.measure(clips, Path(args.out), vbv_frames=args.vbv_frames)
    for name, m in doc["models"].items():
        f = m["ssim_db"]
        print(f"{name}: SSIM_dB = {f['intercept']:.2f} + {f['slope']:.2f} ln(bpp) "
              f"(r2 {f['r2']:.3f}, max residual {f['max_residual']:.2f} dB)")  # fmt: skip
    print(f"wrote {args.out}")
    return 0


def _cmd_handover(args: argparse.Namespace) -> int:
    from octoric.experiments import handover_eval as hev

    if args.duration < 30:
        raise hev.HandoverEvalError("--duration must be >= 30 s (10 s warm-up, then handovers)")
    if args.cells < 2:
        raise hev.HandoverEvalError("--cells must be >= 2 (handovers between gNBs)")
    opts = hev.HandoverEvalOptions(args.duration, args.cells, args.ues, args.seed)
    doc = hev.run_eval(args.detection or ["rc", "kpm"], opts, Path(args.out))
    print((Path(args.out) / "results.md").read_text(), end="")
    print(f"[eval] wrote {args.out}/results.json and results.md", file=sys.stderr)
    return 0 if doc["ok"] else 1


def _cmd_report(args: argparse.Namespace) -> int:
    rebuild(args.dir, args.out)
    return 0


def _runner(exp: Experiment) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        from octoric.experiments import experiment, runner

        extra = {k: v for k, v in vars(args).items() if k not in COMMON}
        opts = RunOptions(args.out, args.quick, args.seeds, args.traces, not args.no_plots,
                          extra)  # fmt: skip
        try:  # bad options: a usage error, before anything runs
            if args.workers < 1:
                raise OctoricError("--workers must be >= 1")
            experiment.validate(exp, opts)
        except OctoricError as e:
            print(f"octoric eval {exp.name}: {e}", file=sys.stderr)
            return 2
        return 0 if runner.run(exp, opts, backend_of(args)).doc is not None else 1

    return run


def _cmd_sweep(args: argparse.Namespace) -> int:
    import json

    from octoric.experiments import sweep as sw

    if args.runs < 1 or args.workers < 1 or args.duration <= 0:
        print("octoric eval sweep: --runs and --workers must be >= 1, --duration > 0",
              file=sys.stderr)  # fmt: skip
        return 2
    other = None
    if args.compare:
        try:
            other = json.loads(Path(args.compare).read_text())
        except (OSError, ValueError) as e:
            print(f"octoric eval sweep: --compare {args.compare}: {e}", file=sys.stderr)
            return 2
    specs = sw.grid(args.runs, args.duration)
    progress = Progress(len(specs))
    res = sw.sweep(specs, args.backend, args.workers,
                   lambda r: progress.finished(f"{r['scenario']} {r['scheme']} seed "
                                               f"{r['seed']}"))  # fmt: skip
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(res, default=str))
    print(f"[eval] sweep: {len(specs)} runs on {args.backend} ({args.workers} workers) in "
          f"{res['wall_seconds']:.1f} s; wrote {out}", file=sys.stderr)  # fmt: skip
    if other is not None:
        diff = sw.compare(res, other)
        if diff:
            print("\n".join(diff[:20]), file=sys.stderr)
            print(f"[eval] sweep: {len(diff)} runs differ from {args.compare}", file=sys.stderr)
            return 1
        print(f"[eval] sweep: all {len(specs)} runs identical to {args.compare}",
              file=sys.stderr)  # fmt: skip
    return 0
