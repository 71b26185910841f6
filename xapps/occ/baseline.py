"""The naive estimator OCC is compared with: a trailing moving average of Eq. (1) over a
fixed window (PBE-CC style), without frame alignment, APP-limit margin or smoothing."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]


def moving_average(cp_bps: FloatArray, window_ms: int) -> FloatArray:
    """Trailing mean of a per-ms capacity series over ``window_ms`` samples (fewer at the
    start of the series)."""
    if window_ms < 1:
        raise ValueError("window_ms must be >= 1")
    c = np.concatenate(([0.0], np.cumsum(cp_bps, dtype=np.float64)))
    idx = np.arange(1, cp_bps.size + 1)
    lo = np.maximum(idx - window_ms, 0)
    out: FloatArray = (c[idx] - c[lo]) / (idx - lo)
    return out
