"""``octoric sim ...``: run scenarios offline, list them, check files."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from octoric.sim.errors import SimError
from octoric.sim.scenario import BUILTIN, load


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser("sim", help="the RAN and real-time-video simulator")
    sub = p.add_subparsers(dest="sim_command", metavar="SUBCOMMAND")
    r = sub.add_parser("run", help="run a scenario (offline: simulated time, as fast as possible)")
    r.add_argument(
        "--scenario",
        default="static",
        help=f"a YAML file or a built-in: {', '.join(BUILTIN)} (default: static)",
    )
    r.add_argument(
        "--traffic", choices=["video", "backlogged"], help="override every flow's traffic"
    )
    r.add_argument("--scheme", help="override every video flow's rate-control scheme")
    r.add_argument(
        "--abw",
        choices=["stand-in", "occ-engine"],
        help="ABW source of occ flows: the labelled stand-in (default) or the OCC xApp engine",
    )
    r.add_argument("--duration", type=float, metavar="SECONDS", help="simulated seconds")
    r.add_argument("--seed", type=int, default=1)
    r.add_argument("--json", metavar="OUT", help="write the summary here (time series beside it)")
    r.add_argument("--plot", action="store_true", help="write PNG plots beside OUT")
    r.add_argument("--live", action="store_true", help="wall-clock mode with E2 (not built yet)")
    r.add_argument("--quiet", action="store_true", help="no progress line on stderr")
    r.set_defaults(func=_cmd_run)
    ls = sub.add_parser("scenarios", help="list the built-in scenarios and schemes")
    ls.set_defaults(func=_cmd_list)

    def _help(args: argparse.Namespace) -> int:
        p.print_help()
        return 2

    p.set_defaults(func=_help)


def _cmd_list(args: argparse.Namespace) -> int:
    from octoric.sim.ratecontrol import SCHEMES

    print("scenarios:", ", ".join(BUILTIN), "(or a YAML file; see docs/sim.md)")
    print("schemes:  ", ", ".join(sorted(SCHEMES)))
    return 0


def _cmd_run(args: argparse.Namespace) -> int:
    if args.live:
        raise SimError(
            "live mode needs the embedded RIC (issue #5) and the E2 node agent; "
            "run without --live for the offline simulator"
        )
    from octoric.sim.runner import run_offline
    from octoric.sim.summary import write_outputs

    sc = load(args.scenario)
    if args.duration is not None:
        if args.duration <= 0:
            raise SimError("--duration must be > 0")
        sc.duration_s = args.duration
    if args.abw:
        sc.abw_source = args.abw
    for ue in sc.ues:
        for f in ue.flows:
            if args.traffic:
                f.traffic = args.traffic
            if args.scheme:
                f.scheme = args.scheme
    progress = (not args.quiet and sys.stderr.isatty()) or (not args.quiet and sc.duration_s >= 60)
    res = run_offline(sc, args.seed, progress=progress)
    speed = res.summary["sim_seconds"] / max(res.wall_seconds, 1e-9)
    print(
        f"sim: {sc.name}: {res.summary['sim_seconds']} s simulated in {res.wall_seconds:.2f} s "
        f"({speed:.0f}x real time)", file=sys.stderr,
    )  # fmt: skip
    if args.json:
        out = Path(args.json)
        files = write_outputs(res.engine, res.summary, out)
        if args.plot:
            from octoric.sim.plots import write_plots

            files += write_plots(res.engine, out.with_suffix(""))
        for path in files:
            print(f"wrote {path}", file=sys.stderr)
    else:
        print(json.dumps(res.summary, indent=2))
    return 0
