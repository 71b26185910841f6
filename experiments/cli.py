"""``octoric eval ...``: paper experiments (schemes x traces -> JSON, table, plots).

``octoric eval occ --traces DIR --json OUT [--duration S] [--plots DIR]`` runs the OCC
paper's comparison (issue #7; logic in ``octoric.experiments.occ_eval``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from octoric.errors import OctoricError

# ../shared beside the repository (docs/occ.md); the public Mahimahi traces otherwise
DEFAULT_TRACES = "../shared/traces/mahimahi"
DEFAULT_OUT = "build/occ-eval/results.json"


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser("eval", help="paper experiments: schemes x traces -> tables, plots")
    sub = p.add_subparsers(dest="eval_command", metavar="EXPERIMENT")
    o = sub.add_parser(
        "occ", help="OCC-fed (OCC engine) vs GCC vs PBE-CC-style senders on Mahimahi traces"
    )
    o.add_argument(
        "--traces", metavar="DIR",
        help=f"folder of Mahimahi *.down (default: $OCTORIC_TRACES, else {DEFAULT_TRACES})",
    )  # fmt: skip
    o.add_argument(
        "--json", metavar="OUT", default=DEFAULT_OUT,
        help="write the results here; plots beside it (default: %(default)s)",
    )  # fmt: skip
    o.add_argument(
        "--duration", type=float, default=120.0, metavar="S",
        help="simulated seconds per run (default 120)",
    )  # fmt: skip
    o.add_argument(
        "--quick", action="store_true",
        help="a smoke run: the first trace (by name) and the contention cell, 10 s each",
    )  # fmt: skip
    o.add_argument(
        "--plots", metavar="DIR", help="write PNG plots into DIR (default: OUT's folder)"
    )
    o.add_argument("--no-plots", action="store_true", help="write no plots")
    o.add_argument("--plot-prefix", default="occ-eval", help="PNG file name prefix")
    o.add_argument("--seed", type=int, default=1)
    o.add_argument(
        "--only", action="append", metavar="NAME",
        help="only these traces (file name without .down; repeatable)",
    )  # fmt: skip
    o.add_argument(
        "--csi-period-ms", type=int, default=20, metavar="MS",
        help="the gNB reports each trace's capacity over the previous MS ms as the UE's MCS "
        "(a CSI period; default 20, srsRAN_Project's CSI-RS period; 0: the delivered bytes "
        "of each ms, an MCS of zero between packets)",
    )  # fmt: skip
    o.add_argument(
        "--smooth-ms", type=int, default=0, metavar="MS",
        help="also spread each trace's deliveries evenly over blocks of MS ms, for every "
        "scheme (removes the traces' 1500-byte packet quantisation; default 0: as recorded)",
    )  # fmt: skip
    o.add_argument(
        "--occ-set", action="append", default=[], metavar="KEY=VALUE",
        help="change an OCC engine parameter for the occ runs (OccConfig field, e.g. "
        "outage_fallback=true; repeatable; occ runs start from the paper's configuration, "
        "occ-ext from the xApp's defaults)",
    )  # fmt: skip
    o.add_argument(
        "--timeseries", action="append", default=[], metavar="NAME",
        help="also plot OCC over time on this trace (target, capacity, outages, frame "
        "latency; default settings vs Eq. (5) as written; 60 s) into --plots (repeatable)",
    )  # fmt: skip
    o.add_argument(
        "--scheme", action="append", choices=("occ", "gcc", "pbe", "occ-ext"), metavar="NAME",
        help="only these schemes (occ: OCC as the paper specifies it; gcc; pbe; occ-ext: OCC "
        "with the project's extensions, an ablation; repeatable; default all four)",
    )  # fmt: skip
    o.add_argument(
        "--no-contention", action="store_true", help="skip the multi-UE contention scenario"
    )
    o.add_argument(
        "--routes", nargs="*", default=None, metavar="ROUTE",
        help="the OCC paper's PHY routes to run on a 51-PRB cell (default: good blockage "
        "poor; none: --routes with no name)",
    )  # fmt: skip
    o.add_argument(
        "--seeds", type=int, default=1, metavar="N",
        help="seeds per case (--seed .. --seed + N - 1; the claims table's spread; default 1)",
    )  # fmt: skip
    o.add_argument(
        "--video", choices=("webrtc", "lag"), default="webrtc",
        help="the senders' video: webrtc (the paper's: x264 in a 4-frame VBV, key frames "
        "every 3000 frames, 25 fps; default) or lag (issue #7's first model)",
    )  # fmt: skip
    o.add_argument(
        "--content", choices=("hdr", "lecture"), default="hdr",
        help="the paper's video: 2K HDR (13.9 Mbit/s, default) or lecture (7.6 Mbit/s): the "
        "encoder's cap (webrtc video only)",
    )  # fmt: skip
    o.set_defaults(func=_cmd_occ)

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

    def report_parser(name: str, help_: str, quick: str) -> argparse.ArgumentParser:
        r = sub.add_parser(name, help=help_)
        r.add_argument("--quick", action="store_true", help=quick)
        r.add_argument(
            "--out", metavar="MD", default=f"build/{name}-eval/results.md",
            help="the report (Markdown); the JSON and the PNG beside it (default: %(default)s)",
        )  # fmt: skip
        r.add_argument(
            "--from-json", metavar="JSON",
            help="no simulation: re-render the report (claims, verdicts) from an earlier run's "
            "JSON, e.g. after a change of the verdict rule; the plot is kept as it is",
        )  # fmt: skip
        return r

    du = report_parser("dumbo", "the Dumbo thesis: pulse-link convergence (RoCC/Copa with "
                       "and without Dumbo, GCC) and the comparison with GCC on cellular "
                       "traces; claims tables and plots",
                       "one seed (default: five) and one trace for 20 s")  # fmt: skip
    du.add_argument("--traces", metavar="DIR", default="../shared/traces/mahimahi",
                    help="Mahimahi cellular traces for §6.2's comparison with GCC "
                    "(default: %(default)s)")  # fmt: skip
    du.add_argument(
        "--no-cellular",
        action="store_true",
        help="only the pulse-link experiment (no traces needed)",
    )
    du.set_defaults(func=_cmd_dumbo)
    m = report_parser("morc", "MORC's Table 1: MORC vs CUBIC vs BBR utilization on varying "
                      "links", "3 of the 14 profiles, 10 s runs")  # fmt: skip
    m.add_argument("--duration", type=float, default=30.0, metavar="S",
                   help="simulated seconds per run (default 30; --quick: 10)")  # fmt: skip
    m.set_defaults(func=_cmd_morc)
    report_parser("ton22", "Octopus ToN'22: BBR-H vs BBR vs CUBIC under HSR, driving and "
                  "walking", "HSR only, one seed, 20 s").set_defaults(func=_cmd_ton22)  # fmt: skip
    sec = report_parser("sec23", "Octopus SEC'23: Octopus vs OctoBBR, WebRTC (GCC) and video "
                        "over BBR on LTE traces", "one trace, one seed, 20 s")  # fmt: skip
    sec.add_argument("--traces", metavar="DIR", default="../shared/traces/mahimahi",
                     help="Mahimahi traces (default: %(default)s)")  # fmt: skip
    sec.set_defaults(func=_cmd_sec23)
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
    sw.add_argument("--backend", choices=("pool", "ray"), default="pool")
    sw.add_argument("--workers", type=int, default=os.cpu_count() or 1)
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


def traces_dir(arg: str | None) -> Path:
    """``--traces``, else ``$OCTORIC_TRACES``, else ../shared/traces/mahimahi beside the repo."""
    path = Path(arg or os.environ.get("OCTORIC_TRACES") or DEFAULT_TRACES)
    if not path.is_dir():
        raise OctoricError(
            f"no trace folder {path}: give --traces DIR (the public Mahimahi cellular traces, "
            "github.com/ravinet/mahimahi, folder traces/; *.down files)"
        )
    return path


def _cmd_occ(args: argparse.Namespace) -> int:
    from octoric.experiments import occ_eval as ev

    routes = tuple(ev.ROUTES if args.routes is None else args.routes)
    cases = ev.find_cases(traces_dir(args.traces), contention=not args.no_contention,
                          routes=routes)  # fmt: skip
    if args.only:
        known = {c.name for c in cases}
        missing = sorted(set(args.only) - known)
        if missing:
            raise ev.EvalError(f"--only: no trace {', '.join(missing)} in {args.traces}")
        cases = [c for c in cases if c.name in args.only or c.trace is None]
    if args.quick:
        first = min((c.name for c in cases if c.trace is not None), default=None)
        route = next((c.name for c in cases if c.group == "routes"), None)
        cases = [c for c in cases if c.name in (first, ev.CONTENTION, route)]
        args.duration = min(args.duration, 10.0)
    unknown = sorted(set(args.timeseries) - {c.name for c in cases if c.trace is not None})
    if unknown:
        raise ev.EvalError(f"--timeseries: no trace {', '.join(unknown)} in this run")
    plots = None if args.no_plots else Path(args.plots or Path(args.json).parent)
    if args.timeseries and plots is None:
        raise ev.EvalError("--timeseries needs plots (drop --no-plots)")
    t0 = time.monotonic()
    opts = ev.EvalOptions(
        csi_period_ms=args.csi_period_ms,
        smooth_ms=args.smooth_ms,
        occ_overrides=ev.parse_occ_set(args.occ_set),
        video=args.video,
        content=args.content,
    )
    schemes = tuple(dict.fromkeys(args.scheme)) if args.scheme else ev.SCHEMES
    results = ev.run_all(
        cases, args.duration, args.seed, schemes, progress=ev.progress_to_stderr, opts=opts,
        seeds=args.seeds,
    )  # fmt: skip
    out = Path(args.json)
    meta = {
        "duration_s": args.duration,
        "seed": args.seed,
        "seeds": args.seeds,
        "video": args.video,
        "content": args.content,
        "routes": list(routes),
        "csi_period_ms": args.csi_period_ms,
        "smooth_ms": args.smooth_ms,
        "occ_set": args.occ_set,
        "traces_dir": str(args.traces),
        "wall_seconds": round(time.monotonic() - t0, 1),
        "aggregation": "latency and stall rate over every flow's frames; bitrates mean per flow",
    }
    found = ev.claims(results, cases)
    meta["claims"] = [c.to_json() for c in found]
    ev.write_json(results, out, meta)
    from octoric.experiments.claims import RULE_MD, claims_table

    table = ev.mean_table(results)
    if found:
        table += "\n" + RULE_MD + "\n\n" + "\n".join(claims_table(found)) + "\n"
    table += "\nEvery run:\n\n" + ev.markdown_table(results)
    md = out.with_suffix(".md")
    md.write_text(table)
    print(table)
    print(f"[eval] wrote {out} and {md}", file=sys.stderr)
    if plots is not None:
        for path in ev.write_plots(results, plots, args.plot_prefix):
            print(f"[eval] wrote {path}", file=sys.stderr)
        by_name = {c.name: c for c in cases}
        for name in args.timeseries:
            path = ev.write_timeseries_plot(
                by_name[name], plots, args.plot_prefix, seed=args.seed, opts=opts
            )
            print(f"[eval] wrote {path}", file=sys.stderr)
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


def _counter(n: int) -> Callable[[str], None]:
    """A progress line per run on stderr: ``[eval] k/n what``."""
    done = [0]

    def progress(what: str) -> None:
        done[0] += 1
        print(f"[eval] {done[0]}/{n} {what}", file=sys.stderr, flush=True)

    return progress


def _write_report(out: Path, markdown: Callable[[str], str], data: dict[str, Any],
                  plot: Callable[[Path], None] | None) -> int:  # fmt: skip
    """The report (``out``, Markdown naming the plot), its JSON and PNG beside it (``plot``
    None: a re-rendering, the PNG stays as it is)."""
    import json

    out.parent.mkdir(parents=True, exist_ok=True)
    png = out.with_suffix(".png")
    if plot is not None:
        plot(png)
    out.write_text(markdown(png.name))
    out.with_suffix(".json").write_text(json.dumps(data, indent=2, default=str))
    print(out.read_text())
    print(f"[eval] wrote {out}, {out.with_suffix('.json')}" + (f" and {png}" if plot else ""),
          file=sys.stderr)  # fmt: skip
    return 0


def _stored(args: argparse.Namespace) -> dict[str, Any] | None:
    """``--from-json``'s document, None without it."""
    import json

    if not args.from_json:
        return None
    try:
        doc: dict[str, Any] = json.loads(Path(args.from_json).read_text())
    except (OSError, ValueError) as e:
        raise OctoricError(f"--from-json {args.from_json}: {e}") from e
    return doc


def _cmd_dumbo(args: argparse.Namespace) -> int:
    from octoric.experiments import dumbo_cellular as cell
    from octoric.experiments import dumbo_eval as ev

    stored = _stored(args)
    if stored is not None:
        if "runs" not in stored:
            raise OctoricError(f"--from-json {args.from_json}: no per-run pulse-link results "
                               "(written before issue #46): run the report again")  # fmt: skip
        runs, seeds = ev.from_json(stored["runs"]), int(stored["seeds"])
        cellular = None if args.no_cellular else stored.get("cellular")
    else:
        seeds = 1 if args.quick else ev.SEEDS
        traces = Path(args.traces)
        if not args.no_cellular and not cell.find_traces(traces):
            raise OctoricError(f"no Mahimahi traces (*.down) in {traces}: give --traces DIR, or "
                               "--no-cellular for the pulse-link experiment only")  # fmt: skip
        n_cell = (0 if args.no_cellular else len(cell.SCHEMES) * (
            1 if args.quick else cell.SEEDS * len(cell.find_traces(traces))))  # fmt: skip
        count = _counter(seeds * len(ev.SCHEMES) + n_cell)
        runs = ev.run_all(seeds, count)
        cellular = (None if args.no_cellular
                    else cell.run_all(traces, args.quick, ev.ENCODER_LAG_MS, count))  # fmt: skip
    data: dict[str, Any] = {"claims": ev.claims_json(runs), "schemes": ev.scheme_table(runs),
                            "seeds": seeds, "runs": ev.runs_json(runs)}  # fmt: skip
    if cellular is not None:
        cellular = {k: v for k, v in cellular.items() if k != "claims"}
        data["cellular"] = {**cellular, "claims": [c.to_json() for c in cell.claims(cellular)]}
    out = Path(args.out)
    cell_png = out.with_name(f"{out.stem}-cellular.png")

    def markdown(png: str) -> str:
        text = ev.markdown(runs, seeds, png, cellular=cellular is not None)
        if cellular is None:
            return text
        extra = cell.markdown(cellular)
        extra += ["", f"![network delay against SSIM per run]({cell_png.name})", ""]
        return text + "\n".join(extra)

    def plot(png: Path) -> None:
        ev.plot(runs, png)
        if cellular is not None:
            cell.plot(cellular, cell_png)

    return _write_report(out, markdown, data, None if stored is not None else plot)


def _cmd_morc(args: argparse.Namespace) -> int:
    from octoric.experiments import morc_eval as ev

    stored = _stored(args)
    if stored is not None:
        rows, downloads, duration = (stored["profiles"], stored["downloads"],
                                     float(stored["duration_s"]))  # fmt: skip
    else:
        duration = 10.0 if args.quick else args.duration
        seeds = 1 if args.quick else ev.TABLE1_SEEDS
        n = (len(ev.QUICK) if args.quick else len(ev.PROFILES)) * len(ev.SCHEMES) * seeds
        n += len(ev.DOWNLOADS) * len(ev.DOWNLOAD_SCHEMES) * (1 if args.quick
                                                             else ev.DOWNLOAD_SEEDS)  # fmt: skip
        count = _counter(n)
        rows = ev.run_all(args.quick, duration, seeds, progress=count)
        downloads = ev.run_downloads(args.quick, progress=count)
    found = ev.claims(rows) + ev.download_claims(downloads)
    data = {"claims": [c.to_json() for c in found], "profiles": rows, "downloads": downloads,
            "duration_s": duration}  # fmt: skip
    return _write_report(Path(args.out), lambda png: ev.markdown(rows, duration, png, downloads),
                         data, None if stored is not None
                         else lambda png: ev.plot(rows, png))  # fmt: skip


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
    count = _counter(len(specs))
    res = sw.sweep(specs, args.backend, args.workers,
                   lambda r: count(f"{r['scenario']} {r['scheme']} seed {r['seed']}"))  # fmt: skip
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


def _cmd_sec23(args: argparse.Namespace) -> int:
    from octoric.experiments import sec23_eval as ev

    res = _stored(args)
    if res is None:
        traces = Path(args.traces)
        missing = [t for t in ev.TRACES[: 1 if args.quick else None]
                   if not (traces / f"{t}.down").is_file()]  # fmt: skip
        if missing:
            print(f"octoric eval sec23: {traces} lacks {', '.join(m + '.down' for m in missing)} "
                  "(give --traces DIR)", file=sys.stderr)  # fmt: skip
            return 2
        n = (1 if args.quick else len(ev.TRACES) * ev.SEEDS) * (
            len(ev.SCHEMES) + len(ev.CASE1_SCHEMES)
        )
        res = ev.run_all(traces, args.quick, _counter(n))
    res = {k: v for k, v in res.items() if k != "claims"}
    data = {"claims": [c.to_json() for c in ev.claims(res)], **res}
    return _write_report(Path(args.out), lambda png: ev.markdown(res, png), data,
                         None if args.from_json else lambda png: ev.plot(res, png))  # fmt: skip


def _cmd_ton22(args: argparse.Namespace) -> int:
    from octoric.experiments import ton22_eval as ev

    res = _stored(args)
    if res is None:
        seeds = 1 if args.quick else ev.SEEDS
        n = (1 if args.quick else len(ev.MOBILITY)) * seeds * len(ev.SCHEMES)
        n += seeds * 2 * len(ev.ABR_RULES)  # DASH and DASH-H per ABR rule, on HSR
        res = ev.run_all(args.quick, _counter(n))
    res = {k: v for k, v in res.items() if k != "claims"}
    data = {"claims": [c.to_json() for c in ev.claims(res)], **res}
    return _write_report(Path(args.out), lambda png: ev.markdown(res, png), data,
                         None if args.from_json else lambda png: ev.plot(res, png))  # fmt: skip
