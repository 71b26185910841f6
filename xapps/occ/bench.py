"""``octoric bench occ``: engine throughput in UE-samples/s (100 UEs x 10 granules of 1 ms
per KPM batch), against the scalar reference implementation measured in the same run.
Target (issue #7): >= 1,000,000 UE-samples/s on one core."""

from __future__ import annotations

import time

import numpy as np

from octoric.bench import Benchmark, BenchResult, median_of
from octoric.contracts import kpm as K
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


def _indications(n: int, seed: int = 11) -> list[bytes]:
    """``n`` RIC indications (100 UEs x 8 measurements x 10 granules of 1 ms, plausible values),
    10 ms apart: the same message with each one's collection start time."""
    from octoric.e2sm import e2ap, kpm
    from octoric.e2sm.common import Guami, UeId, ntp_timestamp

    rng = np.random.default_rng(seed)
    b = random_batch(rng, N_UE, N_GRANULE)
    extra = {K.MCS_DL: rng.integers(0, 28, (N_UE, N_GRANULE)).astype(np.float64),
             K.UE_THP_DL: rng.uniform(0, 50_000, (N_UE, N_GRANULE))}  # fmt: skip
    cols = [np.rint(b[m] if m in b else extra[m]).astype(int) for m in kpm.OCC_MEASUREMENTS]
    guami = Guami(b"\x00\xf1\x10", 2, 1, 1)
    reports = tuple(
        kpm.UeReport(
            UeId.gnb(1000 + u, guami, u),
            kpm.IndicationFormat1(
                tuple(kpm.MeasRecord(tuple(int(c[u, g]) for c in cols)) for g in range(N_GRANULE)),
                tuple(kpm.MeasInfo(m) for m in kpm.OCC_MEASUREMENTS),
                1,
            ),
        )
        for u in range(N_UE)
    )
    message = kpm.encode_kpm(kpm.KpmIndicationMessage(kpm.IndicationFormat3(reports)))
    t0 = time.time() - 3600.0

    def header(k: int) -> bytes:
        return kpm.encode_kpm(kpm.KpmIndicationHeader(ntp_timestamp(t0 + k * 0.01)))

    first = e2ap.encode_e2ap(
        e2ap.RicIndication(
            e2ap.RicRequestId(1, 1), kpm.RAN_FUNCTION_ID, 1, header(0), message, sn=1
        )
    )
    h0 = header(0)
    assert first.count(h0) == 1 and all(len(header(k)) == len(h0) for k in (1, n))
    return [first.replace(h0, header(k)) for k in range(n)]


def decode_and_update(native: bool, n: int) -> float:
    """UE-samples/s of the OCC xApp's per-indication work: RIC indication bytes -> engine
    input (envelope, KPM decode, checks) -> ABW update, with the native KPM decoder or the
    Python fast path."""
    from octoric.e2sm import indication
    from octoric.e2sm.fastpath import FastFormat3Decoder
    from octoric.e2sm.native import native_decoder
    from octoric.xapps.occ.kpm_input import engine_input

    pdus = _indications(n + 1)
    dec = native_decoder() if native else FastFormat3Decoder()
    if dec is None:
        return 0.0
    saved, indication._DEFAULT = indication._DEFAULT, dec
    try:
        engine = OccEngine()
        inp = engine_input(pdus[0])
        engine.ingest(inp.ue_ids, inp.t0_ms, inp.metrics)  # warm-up: kernel, UEs
        start = time.perf_counter()
        for pdu in pdus[1:]:
            inp = engine_input(pdu)
            engine.ingest(inp.ue_ids, inp.t0_ms, inp.metrics)
        return n * N_UE * N_GRANULE / (time.perf_counter() - start)
    finally:
        indication._DEFAULT = saved


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
    n = 100 if quick else 600
    nat = median_of(lambda: decode_and_update(True, n), reps)
    py = median_of(lambda: decode_and_update(False, n // 5), reps)
    return [
        BenchResult(
            name="RIC indication bytes -> ABW update (native KPM decode + engine)",
            value=nat,
            unit="UE-samples/s",
            baseline_name="the same with the Python fast-path decoder",
            baseline_value=py,
            target=f">= {TARGET:,.0f} UE-samples/s",
            target_met=nat >= TARGET,
            samples=reps,
            note=f"{N_UE} UEs x 8 measurements x {N_GRANULE} granules per indication, 10 ms "
            "apart; envelope, KPM decode, input checks, engine ingest; one core",
        ),
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
        ),
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
