"""OCC's degraded mode: the vendor inputs estimated from standard measurements."""

from __future__ import annotations

import numpy as np
import pytest

from octoric.contracts import kpm as K
from octoric.xapps.occ.degraded import DegradedInputs

pytestmark = pytest.mark.unit


def test_estimates_from_throughput_and_prbs() -> None:
    d = DegradedInputs(dl_slots_per_ms=2.0)  # 30 kHz SCS: PRB counts are per slot, 2 a ms
    ues = np.array([7, 8], dtype=np.int64)
    pu = np.array([[10.0, 0.0, 5.0], [0.0, 0.0, 0.0]])
    thp = np.array([[4000.0, 0.0, 1000.0], [0.0, 0.0, 0.0]])  # kbit/s
    out = d.complete(ues, {K.PRB_USED_DL: pu, K.PRB_AVAIL_DL: np.ones((2, 3)),
                           K.UE_THP_DL: thp}, 1)  # fmt: skip
    # UE 7: 4000 bits over 10 PRBs x 2 slots = 200 bits per PRB-slot; a half-empty granule
    # later (100) does not pull the estimate down, an idle one carries it
    np.testing.assert_array_equal(out[K.BITS_PER_PRB_DL][0], [200.0, 200.0, 200.0])
    np.testing.assert_array_equal(out[K.BITS_PER_PRB_DL][1], [0.0, 0.0, 0.0])  # never served
    np.testing.assert_array_equal(out[K.ACTIVE_UES_DL], [[1.0, 1.0, 1.0]] * 2)
    np.testing.assert_array_equal(out[K.DL_ARRIVED_BYTES][0], [500.0, 0.0, 125.0])
    assert not out[K.DL_BUFFER_BYTES].any()
    # the next indication starts from what this one learned
    nxt = d.complete(ues[:1], {K.PRB_USED_DL: np.zeros((1, 1)), K.PRB_AVAIL_DL: np.ones((1, 1)),
                               K.UE_THP_DL: np.zeros((1, 1))}, 1)  # fmt: skip
    assert nxt[K.BITS_PER_PRB_DL][0, 0] == 200.0


def test_bad_values_stay_bad_for_the_engine_to_reject() -> None:
    d = DegradedInputs(1.0)
    out = d.complete(np.array([1], dtype=np.int64),
                     {K.PRB_USED_DL: np.array([[np.nan, -1.0]]), K.PRB_AVAIL_DL: np.ones((1, 2)),
                      K.UE_THP_DL: np.array([[5.0, 5.0]])}, 1)  # fmt: skip
    assert np.isnan(out[K.BITS_PER_PRB_DL]).all()
