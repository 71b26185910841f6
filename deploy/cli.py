"""``octoric run``: the subcommand of the embedded deployment (docs/running.md)."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("run", help="run the embedded RIC, simulated gNBs, xApps and video flows")
    p.add_argument("-c", "--config", help="YAML config file (defaults need none)")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a config key")
    p.add_argument("--duration", type=float, help="stop after SECONDS (default: until Ctrl-C)")
    p.add_argument("--seed", type=int, help="simulator seed")
    p.add_argument("--no-live", action="store_true", help="no live status line, log lines only")
    p.add_argument("--print-config", action="store_true", help="print the merged config, exit")
    p.set_defaults(func=_run)
    r = sub.add_parser("report", help="write report.html (plots) for a run folder of octoric run")
    r.add_argument(
        "run_dir", nargs="?", help="the run folder (default: the latest under build/run)"
    )
    r.set_defaults(func=_report)


def _report(args: argparse.Namespace) -> int:
    from pathlib import Path

    from octoric.deploy import report
    from octoric.errors import OctoricError

    if args.run_dir:
        run_dir = Path(args.run_dir)
    else:
        runs = sorted(p for p in Path("build/run").glob("*") if (p / "report.json").is_file())
        if not runs:
            raise OctoricError("no run folder under build/run: give RUN_DIR (or `make run` first)")
        run_dir = runs[-1]
    if not (run_dir / "report.json").is_file():
        raise OctoricError(f"{run_dir} is not a run folder of octoric run (no report.json)")
    print(report.write(run_dir))
    return 0


def _run(args: argparse.Namespace) -> int:
    from octoric import config as cfgmod
    from octoric.deploy import embedded

    overrides = list(args.set or [])
    if args.duration is not None:
        overrides.append(f"duration={args.duration}")
    if args.seed is not None:
        overrides.append(f"sim.seed={args.seed}")
    cfg = cfgmod.load(args.config, overrides)
    if args.print_config:
        print(cfgmod.dump(cfg), end="")
        return 0
    return embedded.run(cfg, live=not args.no_live)
