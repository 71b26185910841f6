"""``octoric eval ...``: paper experiments (schemes x traces -> JSON, table, plots).

``octoric eval occ --traces DIR --json OUT [--duration S] [--plots DIR]`` runs the OCC
paper's comparison (issue #7; logic in ``octoric.xapps.occ.evaluation``).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser("eval", help="paper experiments: schemes x traces -> tables, plots")
    sub = p.add_subparsers(dest="eval_command", metavar="EXPERIMENT")
    o = sub.add_parser(
        "occ", help="OCC-fed (OCC engine) vs GCC vs PBE-CC-style senders on Mahimahi traces"
    )
    o.add_argument("--traces", required=True, metavar="DIR", help="folder of Mahimahi *.down")
    o.add_argument("--json", required=True, metavar="OUT", help="write the results here")
    o.add_argument(
        "--duration", type=float, default=120.0, metavar="S",
        help="simulated seconds per run (default 120)",
    )  # fmt: skip
    o.add_argument("--plots", metavar="DIR", help="write PNG plots into DIR")
    o.add_argument("--plot-prefix", default="occ-eval", help="PNG file name prefix")
    o.add_argument("--seed", type=int, default=1)
    o.add_argument(
        "--only", action="append", metavar="NAME",
        help="only these traces (file name without .down; repeatable)",
    )  # fmt: skip
    o.add_argument(
        "--smooth-ms", type=int, default=0, metavar="MS",
        help="spread each trace's capacity evenly over blocks of MS ms, for every scheme "
        "(removes the traces' 1500-byte packet quantisation; default 0: raw traces)",
    )  # fmt: skip
    o.add_argument(
        "--no-contention", action="store_true", help="skip the multi-UE contention scenario"
    )
    o.set_defaults(func=_cmd_occ)

    def _help(args: argparse.Namespace) -> int:
        p.print_help()
        return 2

    p.set_defaults(func=_help)


def _cmd_occ(args: argparse.Namespace) -> int:
    from octoric.xapps.occ import evaluation as ev

    cases = ev.find_cases(Path(args.traces), contention=not args.no_contention)
    if args.only:
        known = {c.name for c in cases}
        missing = sorted(set(args.only) - known)
        if missing:
            raise ev.EvalError(f"--only: no trace {', '.join(missing)} in {args.traces}")
        cases = [c for c in cases if c.name in args.only or c.name == ev.CONTENTION]
    t0 = time.monotonic()
    if args.smooth_ms < 0:
        raise ev.EvalError("--smooth-ms must be >= 0")
    results = ev.run_all(
        cases, args.duration, args.seed, progress=ev.progress_to_stderr, smooth_ms=args.smooth_ms
    )
    out = Path(args.json)
    meta = {
        "duration_s": args.duration,
        "seed": args.seed,
        "smooth_ms": args.smooth_ms,
        "traces_dir": str(args.traces),
        "wall_seconds": round(time.monotonic() - t0, 1),
        "aggregation": "latency and stall rate over every flow's frames; bitrates mean per flow",
    }
    ev.write_json(results, out, meta)
    table = ev.markdown_table(results)
    md = out.with_suffix(".md")
    md.write_text(table)
    print(table)
    print(f"[eval] wrote {out} and {md}", file=sys.stderr)
    if args.plots:
        for path in ev.write_plots(results, Path(args.plots), args.plot_prefix):
            print(f"[eval] wrote {path}", file=sys.stderr)
    return 0
