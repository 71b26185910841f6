"""``octoric testbed live``: the embedded RIC and the three xApps against a real srsRAN gNB built
by ``srsran_agent/build.sh``, with no radio (docs/testbed.md, "Rehearse without radios")."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

BUILD_ENV = "OCTORIC_SRSRAN_BUILD"


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("testbed", help="octoric against a real srsRAN gNB on this machine")
    ts = p.add_subparsers(dest="testbed_command", metavar="COMMAND", required=True)
    live = ts.add_parser(
        "live",
        help="the RIC and the xApps against a real srsRAN gNB with no radio (ru_dummy, "
        "test-mode UEs), every step checked",
    )
    live.add_argument(
        "--srsran-build",
        default=os.environ.get(BUILD_ENV),
        metavar="DIR",
        help=f"build directory of srsran_agent/build.sh (default: ${BUILD_ENV})",
    )
    live.add_argument("--duration", type=float, default=120.0, help="seconds (default 120)")
    live.add_argument(
        "--ues", type=int, default=4, help="test UEs in all, spread evenly over the cells"
    )
    live.add_argument(
        "--cells",
        type=int,
        default=2,
        help="cells of the gNB, 1-4 (default 2); srsRAN's test mode puts as many UEs on each, "
        "so --cells 4 --ues 4 gives every UE a cell of its own",
    )
    live.add_argument(
        "--time-scaling",
        type=float,
        default=1.0,
        help="the dummy radio's slot length factor (1: real time; 2: half speed, for a host "
        "that cannot keep up)",
    )
    live.add_argument(
        "--inject",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="send OCC-fed Octopus video into the CU-UP's N3 for the test UE with a DRB (the "
        "Octopus checks need it; --no-inject leaves that UE idle; default: on)",
    )
    live.add_argument(
        "--stock-kpm",
        action="store_true",
        help="the DU offers only the stock KPM measurements, no OCC.* (e2.e2sm_kpm_occ_enabled: "
        "false, patch 0017): the OCC xApp runs in its degraded mode",
    )
    live.add_argument("--report-dir", default="build/testbed", help="where run folders go")
    live.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a run key")
    live.add_argument("--no-live", action="store_true", help="no live status line")
    live.set_defaults(func=_live)


def _live(args: argparse.Namespace) -> int:
    from octoric import config as cfgmod
    from octoric.deploy.testbed import compose
    from octoric.errors import OctoricError

    if not args.srsran_build:
        raise OctoricError(
            f"give --srsran-build DIR or set {BUILD_ENV}: the build directory of "
            "srsran_agent/build.sh (docs/testbed.md, 'Rehearse without radios')"
        )
    from octoric.deploy.testbed.gnb import MAX_CELLS

    if not 1 <= args.cells <= MAX_CELLS:
        raise OctoricError(f"--cells must be 1..{MAX_CELLS}")
    if args.ues < args.cells or args.ues % args.cells:
        raise OctoricError(
            f"--ues must be a multiple of --cells ({args.cells}): srsRAN's test mode puts as "
            "many test UEs on each cell"
        )
    if args.time_scaling <= 0:
        raise OctoricError("--time-scaling must be > 0")
    overrides = [f"duration={args.duration}", f"report_dir={args.report_dir}"]
    overrides += list(args.set or [])
    cfg = cfgmod.load(None, overrides)
    opts = compose.TestbedOptions(
        build_dir=Path(args.srsran_build),
        ues=args.ues,
        cells=args.cells,
        time_scaling=args.time_scaling,
        inject=args.inject,
        stock_kpm=args.stock_kpm,
    )
    return compose.run(cfg, opts, live=not args.no_live)
