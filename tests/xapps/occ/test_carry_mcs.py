"""A UE served without a grant for a whole report has no MCS in it (noValue): the engine takes
its last one, so its zero PRBs and the cell's state reach Eq. (5) (issue #46: found when OCC
first met gNB-like input; before, the row was rejected and the UE's last estimate stood)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from octoric.xapps.occ import OccEngine, OccInputError
from octoric.xapps.occ import metrics as M
from octoric.xapps.occ.reference import ReferenceEngine

pytestmark = pytest.mark.unit
G = 10  # granules (ms) per batch
N_PRB = 106.0


def batch(bits: float, own: float, idle: float, active: float, buf: float) -> dict[str, Any]:
    """One UE, G granules of the same state; ``bits`` NaN: no MCS in the whole batch."""

    def full(v: float) -> np.ndarray:
        return np.full((1, G), float(v))

    return {
        M.PRB_USED: full(own), M.PRB_AVAIL: full(idle), M.ACTIVE_UES: full(active),
        M.BITS_PER_PRB: full(bits), M.BUFFER_BYTES: full(buf), M.ARRIVED_BYTES: full(0.0),
    }  # fmt: skip


def _served(eng: Any) -> None:
    ids = np.array([7])
    for k in range(20):  # 200 ms at MCS ~10, the UE alone, using half the cell
        eng.ingest(ids, G * k, batch(300.0, 53.0, 53.0, 1.0, 5000.0))


@pytest.mark.parametrize("engine", [OccEngine, ReferenceEngine])
def test_a_report_without_an_mcs_takes_the_last_one(engine: type) -> None:
    eng = engine()
    _served(eng)
    before = eng.latest(7)
    assert before is not None and before[0] > 0
    # others take the cell: no PDSCH, no idle PRBs, one more active UE, the buffer waiting
    out = eng.ingest(np.array([7]), 200, batch(np.nan, 0.0, 0.0, 2.0, 20000.0))
    assert eng.stats.mcs_carried == 1
    # the estimator saw it: no PRBs for a report pulls Eq. (5)'s minimum down (rejected, the
    # row left the last estimate standing)
    assert out.target_bps[0] < 0.9 * before[0], (out.target_bps[0], before)
    assert out.cp_bps[0] == 0.0


def test_both_engines_agree_on_carried_rows() -> None:
    a, b = OccEngine(), ReferenceEngine()
    _served(a)
    _served(b)
    for k, m in enumerate([batch(np.nan, 0.0, 0.0, 2.0, 9000.0),
                           batch(np.nan, 0.0, 106.0, 0.0, 0.0),
                           batch(250.0, 20.0, 86.0, 1.0, 100.0)]):  # fmt: skip
        x = a.ingest(np.array([7]), 200 + G * k, {n: v.copy() for n, v in m.items()})
        y = b.ingest(np.array([7]), 200 + G * k, {n: v.copy() for n, v in m.items()})
        assert np.allclose(x.target_bps_granules, y.target_bps_granules, equal_nan=True)
        assert np.allclose(x.cp_bps_granules, y.cp_bps_granules)
    assert a.stats.mcs_carried == b.stats.mcs_carried == 2


@pytest.mark.parametrize("engine", [OccEngine, ReferenceEngine])
def test_no_mcs_known_or_not_served_is_still_rejected(engine: type) -> None:
    eng = engine()
    # a UE never reported with an MCS: nothing to carry, its row is rejected by name
    with pytest.raises(OccInputError) as e:
        eng.ingest(np.array([9]), 0, batch(np.nan, 0.0, 106.0, 0.0, 0.0))
    assert tuple(e.value.bad_ue_ids) == (9,)
    _served(eng)
    # a row the gNB did not serve at all (no PRB count either) is not this UE's report
    m = batch(np.nan, 0.0, 106.0, 0.0, 0.0)
    m[M.PRB_USED][:] = np.nan
    with pytest.raises(OccInputError) as e:
        eng.ingest(np.array([7]), 200, m)
    assert tuple(e.value.bad_ue_ids) == (7,) and eng.stats.mcs_carried == 0


def test_a_handover_forgets_the_last_mcs() -> None:
    eng = OccEngine()
    _served(eng)
    eng.on_handover(7, True, 200)
    eng.on_handover(7, False, 210)
    with pytest.raises(OccInputError):
        eng.ingest(np.array([7]), 210, batch(np.nan, 0.0, 106.0, 0.0, 0.0))
