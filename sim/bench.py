"""``make bench`` for the simulator: offline speed, 1 cell x 16 UEs with video flows.

There is no external baseline for this figure (no other simulator runs the same model), so
each row reports the speed factor against the issue's target of >= 20x real time.
"""

from __future__ import annotations

import time
from functools import partial

from octoric.bench import Benchmark, BenchResult, median_of
from octoric.sim.engine import Engine
from octoric.sim.scenario import ChannelSpec, FlowSpec, RanSpec, Scenario, UeSpec

TARGET = 20.0


def _scenario(seconds: float, scheme: str, rate_mbps: float | None) -> Scenario:
    flow = FlowSpec(scheme=scheme, rate_mbps=rate_mbps,
                    start_mbps=rate_mbps if rate_mbps else 0.3)  # fmt: skip
    ue = UeSpec(count=16, channel=ChannelSpec("fading", mean_snr_db=15.0), flows=[flow])
    return Scenario(name="bench", duration_s=seconds, ran=RanSpec(n_prb=106, slot_ms=1.0), ues=[ue])


def _speed(seconds: float, scheme: str, rate_mbps: float | None) -> float:
    eng = Engine(_scenario(seconds, scheme, rate_mbps), seed=1)
    t0 = time.perf_counter()
    eng.run()
    return seconds / (time.perf_counter() - t0)


def _run(quick: bool) -> list[BenchResult]:
    seconds = 10.0 if quick else 60.0
    reps = 1 if quick else 3
    rows = []
    for label, scheme, rate in (
        ("16 UEs x GCC video, 1 ms slots, 106 PRB", "gcc", None),
        ("16 UEs x 2.5 Mbit/s video (~70% of PRBs used), 1 ms slots", "fixed", 2.5),
    ):
        v = median_of(partial(_speed, seconds, scheme, rate), reps)
        rows.append(
            BenchResult(
                name=f"offline speed, {label}",
                value=v,
                unit="x real time",
                target=f">= {TARGET:.0f}x real time",
                target_met=v >= TARGET,
                samples=reps,
                note=f"{seconds:.0f} simulated s per run; no external baseline exists",
            )
        )
    return rows


BENCHMARKS = [
    Benchmark(
        name="sim offline speed",
        area="sim",
        run=_run,
        description="simulated seconds per wall second, 1 cell x 16 UEs with video flows",
    )
]
