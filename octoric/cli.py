"""``octoric``: one command, one subcommand per component.

Components add their own subcommands: a module ``octoric.<area>.cli`` that defines
``register(subparsers) -> None`` is picked up here. Until an area has one, its subcommand
says which issue will bring it instead of failing obscurely.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from collections.abc import Callable, Sequence

from octoric import __version__
from octoric.errors import OctoricError

Handler = Callable[[argparse.Namespace], int]

# area -> (module providing register(), help text, issue that builds it)
_PLUGGABLE: dict[str, tuple[str, str, str]] = {
    "run": ("octoric.deploy.cli", "the embedded deployment", "#2"),
    "ric": ("octoric.ric.cli", "the embedded near-RT RIC (up, down, status, nodes, subs)", "#5"),
    "sim": ("octoric.sim.cli", "the RAN and real-time-video simulator", "#6"),
    "e2sm": ("octoric.e2sm.cli", "decode/encode E2AP, E2SM-KPM and E2SM-RC PDUs", "#4"),
    "testbed": (
        "octoric.deploy.testbed.cli",
        "octoric against a real srsRAN gNB on this machine (testbed live)",
        "#39",
    ),
    "eval": (
        "octoric.experiments.cli",
        "paper experiments: schemes x traces -> tables and plots",
        "#7",
    ),
}


def _not_built(area: str, issue: str) -> Handler:
    def handler(args: argparse.Namespace) -> int:
        print(
            f"octoric {area}: not built yet; issue {issue} brings it. "
            "See `octoric --help` for what is available.",
            file=sys.stderr,
        )
        return 2

    return handler


def _register_pluggable(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    for area, (module, help_text, issue) in _PLUGGABLE.items():
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as e:
            if e.name is None or not module.startswith(e.name):
                raise  # a real missing dependency inside the module: surface it
            p = sub.add_parser(area, help=f"{help_text} (not built yet)")
            p.set_defaults(func=_not_built(area, issue))
            continue
        mod.register(sub)


def _cmd_version(args: argparse.Namespace) -> int:
    print(f"octoric {__version__}")
    return 0


def _cmd_doctor(args: argparse.Namespace) -> int:
    from octoric import doctor

    return doctor.main(as_json=args.json)


def _cmd_bench(args: argparse.Namespace) -> int:
    from octoric import bench

    return bench.main(
        args.names, write=args.write, quick=args.quick, as_json=args.json, minutes=args.minutes
    )


def _cmd_stop(args: argparse.Namespace) -> int:
    from octoric import lifeline

    return lifeline.stop_runs(args.run, list_only=args.list, out=sys.stdout)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="octoric",
        description="O-RAN near-RT RIC xApp suite for real-time video over 5G.",
    )
    parser.add_argument("--version", action="version", version=f"octoric {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    _register_pluggable(sub)

    p = sub.add_parser("bench", help="run benchmarks (baseline in the same run, as ratios)")
    p.add_argument("names", nargs="*", help="benchmark names or areas (default: all)")
    p.add_argument("--write", metavar="FILE", help="write the markdown report here")
    p.add_argument("--quick", action="store_true", help="short runs (smoke-test the benches)")
    p.add_argument("--json", action="store_true", help="print results as JSON")
    p.add_argument(
        "--minutes", type=float, help="how long a timed benchmark runs (soak; default 60)"
    )
    p.set_defaults(func=_cmd_bench)

    p = sub.add_parser("doctor", help="check this machine: Python, Redis, librmr, SCTP, helm")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=_cmd_doctor)

    p = sub.add_parser(
        "stop",
        help="stop octoric runs (a live one cleanly, with its report; an orphaned one's processes)",
        description="Finds every process an octoric run started (by the marker in its "
        "environment), names them by run, and stops them: a run whose supervisor still runs "
        "by SIGTERM (a clean stop that writes its report), the processes of one whose "
        "supervisor is gone (kill -9, OOM) by SIGKILL. Linux only.",
    )
    p.add_argument("run", nargs="?", help="only this run: its run folder or supervisor pid")
    p.add_argument("--list", action="store_true", help="only name the runs and their processes")
    p.set_defaults(func=_cmd_stop)

    p = sub.add_parser("version", help="print the version")
    p.set_defaults(func=_cmd_version)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        rc: int = args.func(args)
        sys.stdout.flush()  # a closed pipe shows here, inside the handler below
    except OctoricError as e:
        print(f"octoric: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # the reader went away (`octoric ... | head`): stop quietly, as a pipeline expects
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141  # 128 + SIGPIPE
    finally:
        logging.shutdown()
    return rc


if __name__ == "__main__":
    sys.exit(main())
