"""Issue #7 point 6: the compiled engine equals the scalar reference on random input, with
UEs joining, leaving, expiring, skipping indications and handing over."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest

from octoric.xapps.occ import AbwBatch, OccConfig, OccEngine, ReferenceEngine
from octoric.xapps.occ import metrics as M

pytestmark = pytest.mark.unit

FLOAT_FIELDS = (
    "target_bps_granules", "frame_abw_bps_granules", "cp_bps_granules", "target_bps",
    "cp_bps", "frame_abw_bps", "fair_share_bps", "cp_prime_bps",
)  # fmt: skip
EXACT_FIELDS = (
    "ue_ids", "frame_interval_ms", "frame_aware", "bottleneck", "handover", "fallback", "outage",
)  # fmt: skip


def random_metrics(
    rng: np.random.Generator, ids: npt.NDArray[np.int64], t0: int, g: int
) -> dict[str, npt.NDArray[np.float64]]:
    n = ids.size
    shape = (n, g)
    busy = rng.random(shape) < 0.6
    # Frame-like arrivals: each UE has its own period, plus some noise and paced stretches.
    period = 20 + (ids[:, None] % 7) * 5
    tt = t0 + np.arange(g)[None, :]
    frames = ((tt + ids[:, None]) % period) == 0
    arrived = np.where(frames, rng.uniform(1e3, 6e4, shape), 0.0)
    arrived += np.where(rng.random(shape) < 0.1, 60.0, 0.0)  # control noise below eps
    paced = (ids[:, None] % 5 == 0) & (rng.random((n, 1)) < 0.5)
    arrived = np.where(paced, rng.uniform(500, 3000, shape), arrived)
    return {
        M.PRB_USED: rng.uniform(0, 30, shape) * busy,
        M.PRB_AVAIL: rng.uniform(0, 40, shape) * (rng.random(shape) < 0.7),
        M.ACTIVE_UES: rng.integers(0, 6, shape).astype(float),
        # no MCS (an outage) in a few granules and, for some UEs, whole batches
        M.BITS_PER_PRB: rng.uniform(0, 1200, shape)
        * (rng.random(shape) > 0.05)
        * (rng.random((n, 1)) > 0.1),
        M.BUFFER_BYTES: rng.uniform(0, 1e5, shape) * (rng.random(shape) < 0.5),
        M.ARRIVED_BYTES: arrived,
    }


def assert_same(a: AbwBatch, b: AbwBatch, where: str) -> None:
    assert a.t_ms == b.t_ms
    for f in FLOAT_FIELDS:
        np.testing.assert_allclose(
            getattr(a, f), getattr(b, f), rtol=1e-9, atol=1e-6, err_msg=f"{f} at {where}"
        )
    for f in EXACT_FIELDS:
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f), err_msg=f"{f} at {where}")


CONFIGS = [
    OccConfig(window_l_ms=60, bottleneck_window_ms=30, expire_ms=150, outage_fallback=False),
    OccConfig(
        scheduler="proportional_fair",
        window_l_ms=25,
        d_th_ms=15,
        max_frame_interval_ms=60,
        bottleneck_window_ms=20,
        expire_ms=80,
        probe_bypasses_min=False,
        pf_window_ms=7,
    ),
    OccConfig(
        scheduler="proportional_fair",
        beta=0.3,
        min_idle_ms=1,
        min_frame_interval_ms=1,
        bottleneck_window_ms=10,
        smooth_duty_on=0.5,
        smooth_duty_off=0.2,
        expire_ms=300,
        dl_slots_per_ms=2.0,
        goodput_overhead=0.0,
    ),
    OccConfig(),  # defaults
    OccConfig(outage_fallback=True, window_l_ms=40, bottleneck_window_ms=30, expire_ms=150),
    OccConfig(outage_fallback=True, scheduler="proportional_fair", probe_bypasses_min=False),
]


@pytest.mark.parametrize("cfg_index", range(len(CONFIGS)))
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_engine_matches_reference_on_random_streams(cfg_index: int, seed: int) -> None:
    cfg = CONFIGS[cfg_index]
    rng = np.random.default_rng(seed * 100 + cfg_index)
    fast = OccEngine(cfg, capacity=2)  # small start capacity: exercises growing
    ref = ReferenceEngine(cfg)
    t = 0
    seen_aware = seen_internet = seen_wireless = seen_outage = 0
    for k in range(400):
        n = int(rng.integers(1, 15))
        g = int(rng.choice([1, 2, 5, 10, 10, 10, 13]))
        ids = rng.choice(40, n, replace=False).astype(np.int64)
        if rng.random() < 0.3:  # a stable subset for a while, like a real subscription
            ids = np.arange(int(rng.integers(1, 12)), dtype=np.int64)
        t += int(rng.choice([1, 1, 1, 2, 15, 60, 400]))  # gaps, some beyond expiry
        for _ in range(int(rng.poisson(0.3))):
            ue, start = int(rng.integers(40)), bool(rng.random() < 0.5)
            fast.on_handover(ue, start, t)
            ref.on_handover(ue, start, t)
        m = random_metrics(rng, ids, t, g)
        a = fast.ingest(ids, t, m)
        b = ref.ingest(ids, t, m)
        assert_same(a, b, f"batch {k}")
        assert fast.ue_ids == sorted(ref.ues)
        t += g - 1
        seen_aware += int(a.frame_aware.sum())
        seen_internet += int((a.bottleneck == 2).sum())
        seen_wireless += int((a.bottleneck == 1).sum())
        seen_outage += int(a.outage.sum())
        assert not (a.outage & ~a.fallback).any()
    for ue in range(40):
        la, lb = fast.latest(ue), ref.latest(ue)
        assert (la is None) == (lb is None)
        if la is not None and lb is not None:
            assert la[1] == lb[1]
            np.testing.assert_allclose(la[0], lb[0], rtol=1e-9)
    assert fast.stats == ref.stats
    # The random streams reached the interesting branches.
    assert seen_aware > 0 and seen_wireless > 0
    assert fast.stats.handover_events > 0
    if cfg.expire_ms < 1000:
        assert fast.stats.ues_expired > 0
    if cfg_index == 2:
        assert seen_internet > 0
    # an outage (no MCS) sets fallback only when the option is on
    assert (seen_outage > 0) == cfg.outage_fallback


def test_long_run_prefix_rebase_keeps_equality() -> None:
    """Running sums are rebased past 1e9; the result must not drift from the reference."""
    cfg = OccConfig(window_l_ms=50)
    fast, ref = OccEngine(cfg), ReferenceEngine(cfg)
    rng = np.random.default_rng(5)
    ids = np.array([1, 2])
    big = {
        M.PRB_USED: np.full((2, 10), 4e5),
        M.PRB_AVAIL: np.full((2, 10), 1e5),
        M.ACTIVE_UES: np.ones((2, 10)),
        M.BITS_PER_PRB: np.full((2, 10), 100.0),
        M.BUFFER_BYTES: np.zeros((2, 10)),
        M.ARRIVED_BYTES: np.zeros((2, 10)),
    }
    for k in range(300):  # 3000 samples x 5e5 PRBs > 1e9
        m = dict(big)
        m[M.PRB_USED] = big[M.PRB_USED] * rng.uniform(0.5, 1.0, (2, 10))
        assert_same(fast.ingest(ids, 10 * k, m), ref.ingest(ids, 10 * k, m), f"batch {k}")
