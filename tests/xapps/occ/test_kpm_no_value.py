"""Issue #39: KPM noValue granules as a real gNB sends them (srsRAN with octoric's patches: a UE's
OCC.McsDl is noValue in every granule in which it got no PRBs; a granule now and then has no
scheduler report at all). The OCC xApp fills what has a clear meaning instead of rejecting the
whole indication, counts what it filled, and still rejects rows with no value at all."""

from __future__ import annotations

import numpy as np
import pytest

from octoric.xapps.occ import metrics as M
from octoric.xapps.occ.errors import OccInputError

pytestmark = pytest.mark.unit
nan = float("nan")


def test_state_holds_the_previous_granule_and_leading_granules_take_the_first_value() -> None:
    mcs = np.array([[nan, 27, nan, 24, nan], [5, nan, nan, nan, 7]], dtype=float)
    filled = M.fill_no_value({M.BITS_PER_PRB: mcs})
    assert mcs.tolist() == [[27, 27, 27, 24, 24], [5, 5, 5, 5, 7]]
    assert filled == 6


def test_a_sum_counts_nothing_in_a_no_value_granule() -> None:
    arrived = np.array([[nan, 1200, nan]], dtype=float)
    assert M.fill_no_value({M.ARRIVED_BYTES: arrived}) == 2
    assert arrived.tolist() == [[0, 1200, 0]]


def test_a_row_with_no_value_at_all_stays_and_is_rejected() -> None:
    n_ue, n_g = 2, 3
    metrics = {name: np.ones((n_ue, n_g)) for name in M.REQUIRED}
    metrics[M.BITS_PER_PRB][1, :] = nan
    M.fill_no_value(metrics)
    assert np.isnan(metrics[M.BITS_PER_PRB][1]).all()
    with pytest.raises(OccInputError) as e:
        M.build_block(np.array([7, 8]), metrics, 52.0)
    assert e.value.reason == "nan" and list(e.value.bad_ue_ids) == [8]


def test_no_nan_no_change() -> None:
    a = np.arange(6, dtype=float).reshape(2, 3)
    assert M.fill_no_value({M.BUFFER_BYTES: a}) == 0
    assert a.tolist() == [[0, 1, 2], [3, 4, 5]]
