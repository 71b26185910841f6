"""``octoric bench occ``: engine throughput in UE-samples/s (100 UEs x 10 granules of 1 ms
per KPM batch), against the scalar reference implementation measured in the same run.
Target (issue #7): >= 1,000,000 UE-samples/s on one core."""

from __future__ import annotations

import time

import numpy as np

from octoric.bench import Benchmark, BenchResult, median_of
from octoric.xapps.occ import kernel
from octoric.xapps.occ.engine import OccEngine
from octoric.xapps.occ.reference import ReferenceEngine
from octoric.xapps.occ.synthetic import random_batch

TARGET = 1_000_000.0
N_UE = 100
N_GRANULE = 10


def _throughput(engine: OccEngine | ReferenceEngine, n_batches: int, seed: int = 7) -> float:
    """UE-samples/s of ``engine.ingest`` over ``n_batches`` pre-built batches."""
    rng = np.random.default_rng(seed)
    ids = np.arange(N_UE, dtype=np.int64) + 1000
    batches = [random_batch(rng, N_UE, N_GRANULE) for _ in range(n_batches)]
    engine.ingest(ids, 0, batches[0])  # warm-up: compiles the kernel, creates the UEs
    t = N_GRANULE
    start = time.perf_counter()
    for b in batches:
        engine.ingest(ids, t, b)
        t += N_GRANULE
    return n_batches * N_UE * N_GRANULE / (time.perf_counter() - start)


def bench_engine(quick: bool = False) -> dict[str, float]:
    """The engine's figure for ``octoric bench occ --json``: {"ue_samples_per_s": ...}."""
    n = 300 if quick else 2000
    reps = 1 if quick else 3
    return {"ue_samples_per_s": median_of(lambda: _throughput(OccEngine(), n), reps)}


def _run(quick: bool) -> list[BenchResult]:
    reps = 1 if quick else 5
    ours = median_of(lambda: _throughput(OccEngine(), 300 if quick else 2000), reps)
    ref = median_of(lambda: _throughput(ReferenceEngine(), 5 if quick else 30), 1 if quick else 3)
    how = "numba-compiled kernel" if kernel.compiled() else "pure Python (numba missing)"
    return [
        BenchResult(
            name=f"engine, {N_UE} UEs x {N_GRANULE} granules per batch",
            value=ours,
            unit="UE-samples/s",
            baseline_name="scalar reference (same equations, pure Python)",
            baseline_value=ref,
            target=f">= {TARGET:,.0f} UE-samples/s",
            target_met=ours >= TARGET,
            samples=reps,
            note=f"one core, {how}; input validation and UE-id mapping included",
        )
    ]


BENCHMARKS = [
    Benchmark(
        name="occ engine throughput",
        area="occ",
        run=_run,
        description="OCC engine UE-samples/s for 100 UEs x 10 granules per KPM batch",
    )
]


def cli_json(quick: bool = False) -> dict[str, float]:
    """``octoric bench occ --json`` prints this (octoric.bench's single-area JSON hook)."""
    return bench_engine(quick)
