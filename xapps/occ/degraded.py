"""OCC's degraded mode: the engine's vendor inputs estimated from the standard measurements
a stock gNB reports (3GPP TS 28.552: ``DRB.UEThpDl``, ``RRU.PrbUsedDl``, ``RRU.PrbAvailDl``).

OCC's Eq. (1)-(3) need, per UE and 1 ms granule, the PRBs it got (P_alloc), the cell's idle
PRBs (P_idle), the number of users N_user, the bits one PRB carries at the current MCS (R_mcs)
and, for frame detection, the bytes that arrived in its buffer. A stock srsRAN_Project gNB
reports the first two, not the rest. Here:

- **R_mcs** from what the UE achieved: bits delivered per PRB-slot (``DRB.UEThpDl`` over
  ``RRU.PrbUsedDl``), the best of its last ``WINDOW`` served granules. One granule's ratio
  reads low whenever PRBs were not full (the tail of a burst, padding) or lost to HARQ, and
  OCC's minimum over L would take each such dip for a channel collapse; the best recent one
  is the MCS's rate. Without service the estimate carries over; before any it is 0 and the
  engine falls back (outage, no ABW).
- **N_user**: the UEs of the indication that got PRBs in the granule (at least 1). An
  indication covers one E2 node; a node with several cells is counted as one cell, which
  over-counts N_user and under-estimates the idle share: conservative.
- **arrivals**: the bytes delivered in the granule (``DRB.UEThpDl`` x granule / 8). Frames are
  detected when they drain, not when they arrive; the frame interval is the same.
- **buffer**: 0 (unknown). It only feeds the bottleneck classification, not the rate.

Pure: numpy and ``contracts`` only (the pure-cores contract). State: each UE's last R_mcs.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping

import numpy as np
import numpy.typing as npt

from octoric.contracts import kpm as K

# what a node must report for the degraded mode, and what the mode estimates
STANDARD: tuple[str, ...] = K.STANDARD_MEASUREMENTS
ESTIMATED: tuple[str, ...] = tuple(m for m in K.OCC_ENGINE_INPUTS if m not in STANDARD)
MAX_UES = 100_000  # UEs whose sums are kept (oldest forgotten first)
# R_mcs is the best bits-per-PRB of the UE's last WINDOW served granules: a PRB carries its
# MCS's full rate unless it is the half-empty tail of a burst or lost to HARQ, both of which
# only read lower, and OCC's minimum over L would take them for a channel collapse
WINDOW = 16

FloatArray = npt.NDArray[np.float64]


class DegradedInputs:
    """Completes an indication's standard measurements into the engine's input block."""

    def __init__(self, dl_slots_per_ms: float, window: int = WINDOW) -> None:
        self.k = dl_slots_per_ms * 1000.0  # bit/s per (PRB x bit-per-PRB-per-slot)
        self.window = window
        self.recent: dict[int, deque[float]] = {}  # per UE: bits per PRB-slot, last granules

    def complete(
        self, ue_ids: npt.NDArray[np.int64], metrics: Mapping[str, FloatArray], granule_ms: int
    ) -> dict[str, FloatArray]:
        """``metrics`` (each (n_ue, n_granule), the three STANDARD ones at least) plus the
        ESTIMATED ones. Values that are NaN or negative stay so: the engine rejects them."""
        pu = np.asarray(metrics[K.PRB_USED_DL], dtype=np.float64)
        thp = np.asarray(metrics[K.UE_THP_DL], dtype=np.float64)  # kbit/s
        bits = thp * granule_ms  # kbit/s x ms = bits delivered in the granule
        slots = granule_ms * self.k / 1000.0  # DL slots in a granule
        bpp = np.zeros_like(pu)
        for i, ue in enumerate(ue_ids.tolist()):
            recent = self.recent.pop(ue, None) or deque(maxlen=self.window)
            for j in range(pu.shape[1]):
                p, b = pu[i, j], bits[i, j]
                if not (p >= 0.0 and b >= 0.0):  # NaN or negative: the engine rejects the row
                    bpp[i, j] = np.nan
                    continue
                if p > 0.0 and b > 0.0:  # a granule the UE was served in
                    recent.append(b / (p * slots))
                bpp[i, j] = max(recent) if recent else 0.0
            self.recent[ue] = recent
        while len(self.recent) > MAX_UES:
            del self.recent[next(iter(self.recent))]
        served = np.maximum((pu > 0.0).sum(axis=0, keepdims=True), 1).astype(np.float64)
        out = dict(metrics)
        out[K.ACTIVE_UES_DL] = np.ascontiguousarray(np.broadcast_to(served, pu.shape))
        out[K.BITS_PER_PRB_DL] = bpp
        out[K.DL_BUFFER_BYTES] = np.zeros_like(pu)
        out[K.DL_ARRIVED_BYTES] = thp * granule_ms / 8.0  # kbit/s x ms = bits; / 8: bytes
        return out
