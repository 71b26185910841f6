"""KPM granules: every measurement folds by its contracts.kpm.AGGREGATION rule."""

from __future__ import annotations


def test_aggregate_granules_follows_the_contract() -> None:
    import numpy as np

    from octoric.contracts import kpm as K
    from octoric.e2sm.granules import aggregate_granules

    names = (K.PRB_USED_DL, K.BITS_PER_PRB_DL, K.DL_ARRIVED_BYTES, K.ACTIVE_UES_DL)
    nan = np.nan
    v = np.array(
        [[4, 10, 100, 1], [2, 20, 50, 3], [nan, nan, nan, nan], [6, nan, 10, 2],
         [nan] * 4, [nan] * 4]
    )[:, None, :]  # fmt: skip
    g = aggregate_granules(v, 2, names)[:, 0, :]
    np.testing.assert_array_equal(g[0], [3, 20, 150, 3])  # mean, last, sum, max
    np.testing.assert_array_equal(g[1], [6, nan, 10, 2])  # NaN slots skipped; last as it is
    np.testing.assert_array_equal(g[2], [nan] * 4)  # a granule never served stays NaN
    assert aggregate_granules(v, 1, names) is v
