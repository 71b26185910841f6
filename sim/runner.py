"""Offline runs: simulated time, as fast as possible (the ``offline`` clock)."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

from octoric.sim.engine import Engine, progress_to_stderr
from octoric.sim.measurements import AbwSource
from octoric.sim.scenario import Scenario
from octoric.sim.summary import build_summary


@dataclass
class RunResult:
    engine: Engine
    summary: dict[str, Any]
    wall_seconds: float


def run_offline(
    scenario: Scenario, seed: int = 1, progress: bool = False, abw_source: AbwSource | None = None
) -> RunResult:
    eng = Engine(scenario, seed, progress_to_stderr() if progress else None, abw_source)
    wall = eng.run()
    if progress:
        print(file=sys.stderr)
    return RunResult(eng, build_summary(eng, wall), wall)
