"""KPM granules: how a gNB summarises a reporting granule of several slots.

Each measurement follows its rule in ``contracts.kpm.AGGREGATION`` (mean, last, sum, max;
N_user is the max, see docs/e2-interfaces.md). The simulator's live E2 agent, the paper
harness's offline OCC source and the OCC xApp's slot-level input all fold slots with this one
function, so the OCC engine sees the same numbers whichever way they came.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from octoric.contracts import kpm as K


@lru_cache(maxsize=64)
def _columns_by_rule(names: tuple[str, ...]) -> dict[str, list[int]]:
    by: dict[str, list[int]] = {K.MEAN: [], K.LAST: [], K.SUM: [], K.MAX: []}
    for i, n in enumerate(names):
        by[K.AGGREGATION[n]].append(i)
    return by


def aggregate_granules(
    values: np.ndarray, slots_per_granule: int, names: Sequence[str]
) -> np.ndarray:
    """Per-slot values -> per-granule values, each measurement by its ``contracts.kpm.AGGREGATION``
    rule (mean, last, sum, max).

    ``values`` is (slots, ..., len(names)), the last axis the measurements ``names``; the result
    is (slots // slots_per_granule, ..., len(names)) (a partial last granule is dropped). NaN
    (not served) is skipped by mean, sum and max, and a granule NaN in all its slots stays NaN;
    ``last`` is the granule's last slot as it is.
    """
    k = int(slots_per_granule)
    if k <= 1:
        return values
    n = values.shape[0] // k
    v = values[: n * k].reshape(n, k, *values.shape[1:])
    out = np.full((n, *values.shape[1:]), np.nan)
    by = _columns_by_rule(tuple(names))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN granules stay NaN
        if by[K.MEAN]:
            out[..., by[K.MEAN]] = np.nanmean(v[..., by[K.MEAN]], axis=1)
        if by[K.LAST]:
            out[..., by[K.LAST]] = v[:, -1][..., by[K.LAST]]
        if by[K.SUM]:
            s = v[..., by[K.SUM]]
            any_ok = ~np.isnan(s).all(axis=1)
            out[..., by[K.SUM]] = np.where(any_ok, np.nansum(s, axis=1), np.nan)
        if by[K.MAX]:
            out[..., by[K.MAX]] = np.nanmax(v[..., by[K.MAX]], axis=1)
    return out
