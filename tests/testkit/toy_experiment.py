"""A small real Experiment for the runner's tests (issue #45): short simulator runs (the sweep's
``run_spec``: a built-in scenario, a scheme, a seed), so a grid of them runs in seconds on any
backend. Not registered on import: ``register_toy()`` adds it as ``octoric eval toy`` (a test
undoes it; a subprocess calls it before ``octoric.cli.main``).

Options: ``--duration S`` (simulated seconds per run), ``--alone SCHEME`` (that scheme's runs
need the machine to themselves), ``--fail SCHEME`` (that scheme's runs raise)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from octoric.experiments import sweep
from octoric.experiments.claims import ClaimResult
from octoric.experiments.experiment import EXPERIMENTS, Case, Experiment, RunOptions, grid, nest

SCENARIOS = ("static", "multi-ue")
SCHEMES = ("gcc", "fixed", "pbe")


class ToyError(Exception):
    pass


class Toy(Experiment):
    name = "toy"
    help = "a toy grid of short simulator runs (tests only)"
    quick_help = "one seed"
    traces_help = "not used"

    def add_arguments(self, p: Any) -> None:
        p.add_argument("--duration", type=float, default=1.0)
        p.add_argument("--alone", metavar="SCHEME")
        p.add_argument("--fail", metavar="SCHEME")

    def cases(self, opts: RunOptions) -> list[Case]:
        seeds = range(1, opts.seeds_or(2) + 1)
        cases = grid("runs", SCENARIOS, SCHEMES, seeds)
        alone = opts.extra.get("alone")
        return [Case(c.part, c.row, c.scheme, c.seed, c.label, alone=c.scheme == alone)
                for c in cases]  # fmt: skip

    def run_case(self, case: Case, opts: RunOptions) -> dict[str, Any]:
        if case.scheme == opts.extra.get("fail"):
            raise ToyError(f"{case.scheme} asked to fail")
        duration = float(opts.extra.get("duration") or 1.0)
        r = sweep.run_spec(sweep.RunSpec(0, case.row, case.scheme, case.seed, duration))
        flows = r["summary"]["flows"]
        return {"sha256": r["sha256"],
                "kbps": sum(f.get("valid_bitrate_kbps") or 0.0 for f in flows)}  # fmt: skip

    def results(self, opts: RunOptions, cases: list[Case], outputs: list[Any]) -> dict[str, Any]:
        return {"runs": nest(cases, outputs, "runs")}

    def claims(self, results: dict[str, Any]) -> list[ClaimResult]:
        return []

    def report(self, results: dict[str, Any]) -> str:
        lines = ["| scenario | scheme | kbit/s per seed |", "|---|---|---|"]
        for row, by in results["runs"].items():
            for scheme, runs in by.items():
                lines.append(f"| {row} | {scheme} | {', '.join(str(r['kbps']) for r in runs)} |")
        return "\n".join(lines) + "\n"

    def plots(self, results: dict[str, Any], outputs: list[Any], folder: Path,
              opts: RunOptions) -> list[Path]:  # fmt: skip
        return []


TOY = Toy()


def register_toy() -> Toy:
    EXPERIMENTS.setdefault(TOY.name, TOY)
    return TOY
