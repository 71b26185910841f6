"""Malformed input, UE lifecycle and configuration checks of the OCC engine."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from octoric.errors import OctoricError
from octoric.xapps.occ import OccConfig, OccConfigError, OccEngine, OccInputError
from octoric.xapps.occ import metrics as M
from octoric.xapps.occ.synthetic import random_batch

pytestmark = pytest.mark.unit

IDS = np.array([11, 22, 33])


def good(seed: int = 0, n: int = 3, g: int = 10) -> dict[str, Any]:
    return dict(random_batch(np.random.default_rng(seed), n, g))


def twins() -> tuple[OccEngine, OccEngine]:
    a, b = OccEngine(), OccEngine()
    for k in range(30):
        a.ingest(IDS, 10 * k, good(k))
        b.ingest(IDS, 10 * k, good(k))
    return a, b


def corrupt(kind: str) -> tuple[dict[str, Any], dict[str, Any]]:
    m = good(99)
    kw: dict[str, Any] = {}
    if kind == "missing_metric":
        del m[M.BITS_PER_PRB]
    elif kind == "shape":
        m[M.PRB_AVAIL] = m[M.PRB_AVAIL][:, :5]
    elif kind == "rows":
        m = good(99, n=2)
    elif kind == "one_d":
        m[M.PRB_USED] = m[M.PRB_USED][0]
    elif kind == "nan":
        m[M.PRB_USED][1, 3] = np.nan
    elif kind == "inf":
        m[M.BUFFER_BYTES][2, 0] = np.inf
    elif kind == "negative":
        m[M.ARRIVED_BYTES][0, 9] = -1.0
    elif kind == "dtype":
        m[M.ACTIVE_UES] = np.full((3, 10), "x")
    elif kind == "granularity":
        kw["granule_ms"] = 10
    return m, kw


@pytest.mark.parametrize(
    ("kind", "reason", "bad_ues"),
    [
        ("missing_metric", "missing_metric", ()),
        ("shape", "shape", ()),
        ("rows", "shape", ()),
        ("one_d", "shape", ()),
        ("nan", "nan", (22,)),
        ("inf", "nan", (33,)),
        ("negative", "negative", (11,)),
        ("dtype", "dtype", ()),
        ("granularity", "granularity", ()),
    ],
)
def test_malformed_batch_is_rejected_counted_and_changes_nothing(
    kind: str, reason: str, bad_ues: tuple[int, ...]
) -> None:
    eng, twin = twins()
    m, kw = corrupt(kind)
    with pytest.raises(OccInputError) as ei:
        eng.ingest(IDS, 300, m, **kw)
    assert isinstance(ei.value, OctoricError)
    assert ei.value.reason == reason
    assert ei.value.bad_ue_ids == bad_ues
    assert eng.stats.rejected_batches == 1
    assert eng.stats.rejected_by_reason == {reason: 1}
    # Every UE's state is as if the bad batch never came.
    nxt = good(7)
    a, b = eng.ingest(IDS, 300, nxt), twin.ingest(IDS, 300, nxt)
    np.testing.assert_array_equal(a.target_bps_granules, b.target_bps_granules)
    np.testing.assert_array_equal(a.frame_interval_ms, b.frame_interval_ms)


def test_bad_rows_can_be_dropped_and_the_rest_ingested() -> None:
    eng = OccEngine()
    m = good(1)
    m[M.PRB_USED][1, 0] = np.nan
    with pytest.raises(OccInputError) as ei:
        eng.ingest(IDS, 0, m)
    keep = ~np.isin(IDS, ei.value.bad_ue_ids)
    batch = eng.ingest(IDS[keep], 0, {k: v[keep] for k, v in m.items()})
    assert batch.ue_ids.tolist() == [11, 33]
    assert eng.ue_ids == [11, 33]  # the rejected batch created no state


@pytest.mark.parametrize(
    ("ids", "t0", "reason"),
    [
        (np.array([11, 11, 33]), 0, "ue_ids"),
        (np.array([1.5, 2.0, 3.0]), 0, "ue_ids"),
        (np.array([-1, 2, 3]), 0, "ue_ids"),
        (np.array([[1, 2, 3]]), 0, "shape"),
        (IDS, -5, "time"),
        (IDS, 1.0, "time"),
        (IDS, True, "time"),
    ],
)
def test_bad_ids_and_times(ids: Any, t0: Any, reason: str) -> None:
    eng = OccEngine()
    with pytest.raises(OccInputError) as ei:
        eng.ingest(ids, t0, good())
    assert ei.value.reason == reason
    assert eng.stats.rejected_by_reason == {reason: 1}
    assert eng.ue_ids == []


def test_time_must_advance_per_ue() -> None:
    eng = OccEngine()
    eng.ingest(IDS, 100, good())
    with pytest.raises(OccInputError) as ei:
        eng.ingest(np.array([33, 44]), 105, good(n=2))  # UE 33 already has t=100..109
    assert ei.value.reason == "time" and ei.value.bad_ue_ids == (33,)
    assert 44 not in eng.ue_ids
    eng.ingest(np.array([33, 44]), 110, good(n=2))  # the next period is fine
    assert eng.ue_ids == [11, 22, 33, 44]


def test_absent_ues_expire_and_come_back_fresh() -> None:
    cfg = OccConfig(expire_ms=1000)
    eng = OccEngine(cfg)
    for k in range(50):
        eng.ingest(IDS, 10 * k, good(k))
    for k in range(50, 200):  # UE 22 stops reporting at 500 ms
        eng.ingest(np.array([11, 33]), 10 * k, good(k, n=2))
    assert eng.ue_ids == [11, 33]
    assert eng.stats.ues_expired == 1
    back = eng.ingest(np.array([22]), 2000, good(5, n=1))
    fresh = OccEngine(cfg).ingest(np.array([22]), 2000, good(5, n=1))
    np.testing.assert_array_equal(back.target_bps_granules, fresh.target_bps_granules)
    assert eng.stats.ues_created == 4


def test_many_ues_join_and_capacity_grows() -> None:
    eng = OccEngine(capacity=1)
    ids = np.arange(500) * 7
    b = eng.ingest(ids, 0, good(n=500))
    assert len(b) == 500 and len(eng.ue_ids) == 500
    assert np.all(np.isfinite(b.target_bps))


def test_handover_of_an_unknown_ue_and_latest() -> None:
    eng = OccEngine()
    assert eng.latest(5) is None
    eng.on_handover(5, start=True, t_ms=0)
    latest = eng.latest(5)
    assert latest is not None and latest[1] is True
    b = eng.ingest(np.array([5]), 0, good(n=1))
    assert b.handover[0] and b.fallback[0]
    eng.on_handover(5, start=False, t_ms=10)
    latest = eng.latest(5)
    assert latest is not None and latest[1] is False


@pytest.mark.parametrize(
    "kwargs",
    [
        {"beta": 0.0},
        {"beta": 1.0},
        {"beta": float("nan")},
        {"d_th_ms": 0},
        {"d_th_ms": 40.5},
        {"window_l_ms": True},
        {"max_frame_interval_ms": 2},
        {"goodput_overhead": 1.0},
        {"prb_total_dl": 0.0},
        {"dl_slots_per_ms": -1.0},
        {"scheduler": "max_cqi"},
        {"smooth_duty_on": 0.5, "smooth_duty_off": 0.6},
        {"arrival_eps_bytes": -1.0},
        {"pf_window_ms": 0.5},
    ],
)
def test_config_validation(kwargs: dict[str, Any]) -> None:
    with pytest.raises(OccConfigError):
        OccConfig(**kwargs)


def test_config_defaults_are_the_papers() -> None:
    c = OccConfig()
    assert (c.beta, c.window_l_ms, c.d_th_ms) == (0.1, 500, 40)


def test_slot_level_sources_fold_into_granules_as_a_gnb_reports_them() -> None:
    """A slot-level source (the simulator at 30 kHz SCS) folds slots into the engine's 1 ms
    granules with the one KPM aggregation (``octoric.e2sm.granules``)."""
    from octoric.e2sm.granules import aggregate_granules

    names = [M.PRB_USED, M.BITS_PER_PRB, M.ARRIVED_BYTES, M.ACTIVE_UES, M.BUFFER_BYTES]
    slots = np.array(
        [[10.0, 20.0, 0.0, 4.0], [500.0, 600.0, 700.0, 800.0], [1.0, 2.0, 3.0, 4.0],
         [1.0, 3.0, 2.0, 2.0], [9.0, 8.0, 7.0, 6.0]]
    ).T[:, None, :]  # (slots, UEs, names)  # fmt: skip
    g = {n: aggregate_granules(slots, 2, names)[:, 0, i] for i, n in enumerate(names)}
    np.testing.assert_array_equal(g[M.PRB_USED], [15.0, 2.0])
    np.testing.assert_array_equal(g[M.BITS_PER_PRB], [600.0, 800.0])
    np.testing.assert_array_equal(g[M.ARRIVED_BYTES], [3.0, 7.0])
    np.testing.assert_array_equal(g[M.ACTIVE_UES], [3.0, 2.0])
    np.testing.assert_array_equal(g[M.BUFFER_BYTES], [8.0, 6.0])
