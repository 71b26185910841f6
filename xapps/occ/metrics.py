"""KPM measurement names the engine reads (ARCHITECTURE.md's table) and the checks that turn
one indication's columns into the engine's input block, or reject it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from octoric.contracts import kpm as K
from octoric.xapps.occ.errors import OccInputError
from octoric.xapps.occ.kernel import rows_ok

PRB_USED = K.PRB_USED_DL  # UE: PRBs allocated, average per DL slot (P_alloc)
PRB_AVAIL = K.PRB_AVAIL_DL  # cell: idle PRBs, average per DL slot (P_idle)
ACTIVE_UES = K.ACTIVE_UES_DL  # cell: UEs with DL data or a grant (N_user)
BITS_PER_PRB = K.BITS_PER_PRB_DL  # UE: bits per PRB per slot at the latest MCS (R_mcs)
BUFFER_BYTES = K.DL_BUFFER_BYTES  # UE: RLC DL buffer at the end of the granule
ARRIVED_BYTES = K.DL_ARRIVED_BYTES  # UE: bytes that arrived in the granule
PRB_TOTAL = K.PRB_TOTAL_DL  # optional, cell: PRBs of the carrier (P_total); else config

REQUIRED: tuple[str, ...] = K.OCC_ENGINE_INPUTS
# Row order of the block handed to the kernel.
BLOCK_ROWS: tuple[str, ...] = (*REQUIRED, PRB_TOTAL)
# Measurements that count what happened in the granule (a sum); the others are the state at its
# end (the last report's value). A noValue granule of a sum counts nothing; of a state, the state
# has not changed that anyone saw.
SUMS: tuple[str, ...] = (ARRIVED_BYTES,)

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


def ue_id_array(ue_ids: object) -> IntArray:
    """The batch's UE ids as a 1-D int64 array (rejects floats and negatives)."""
    arr = np.asarray(ue_ids)
    if arr.ndim != 1:
        raise OccInputError("shape", f"ue_ids must be 1-D, got shape {arr.shape}")
    if arr.size and arr.dtype.kind not in "iu":
        raise OccInputError("ue_ids", f"ue_ids must be integers, got dtype {arr.dtype}")
    ids = arr.astype(np.int64, copy=False)
    if ids.size and int(ids.min()) < 0:
        raise OccInputError("ue_ids", "ue_ids must be >= 0")
    return ids


def check_unique(ids: IntArray) -> None:
    """Reject a batch that names a UE twice."""
    if ids.size > 1 and np.unique(ids).size != ids.size:
        raise OccInputError("ue_ids", "duplicate ue_ids in one batch")


def fill_no_value(metrics: dict[str, FloatArray]) -> int:
    """Fill, in place, the granules a gNB reported as noValue (NaN) where the meaning is clear:
    a sum (``SUMS``) counts 0; a state holds the UE's previous granule's value in the report, or
    its first reported one for leading granules. A real gNB sends noValue for a UE's MCS in every
    granule in which it got no PRBs (srsRAN with octoric's patch: OCC.McsDl "of the latest report
    with PDSCH PRBs"), and for a whole granule now and then when the scheduler's report came late.
    Rows with no value at all stay NaN (``build_block`` rejects them). Returns how many values
    were filled."""
    filled = 0
    for name, a in metrics.items():
        nan = np.isnan(a)
        if not nan.any():
            continue
        if name in SUMS:
            filled += int(nan.sum())
            a[nan] = 0.0
            continue
        n_g = a.shape[1]
        cols = np.arange(n_g)
        # forward: the index of the latest valid granule at or before each granule
        fwd = np.maximum.accumulate(np.where(nan, 0, cols), axis=1)
        first = np.argmax(~nan, axis=1)  # the first valid granule of each row (0 if none)
        fwd = np.maximum(fwd, first[:, None])  # leading noValue: the first reported value
        filled_a = np.take_along_axis(a, fwd, axis=1)
        filled += int((nan & ~np.isnan(filled_a)).sum())
        a[...] = filled_a
    return filled


def carry_mcs(
    ue_ids: IntArray, metrics: Mapping[str, object], last_r: Callable[[int], float]
) -> tuple[Mapping[str, object], int]:
    """A UE the gNB served without a grant for a whole batch has no MCS in it (noValue:
    srsRAN with octoric's patch reports OCC.McsDl only for granules with PDSCH PRBs) while
    its PRBs (none), its buffer and the cell's idle PRBs are news: its row takes the UE's
    last known bits per PRB (``last_r(ue)``, > 0 when known), so an outage or a cell taken
    by others reaches the estimator instead of the UE's last estimate standing. A UE with
    no known MCS, or a row the gNB did not serve at all (no PRB count either), is left
    NaN (``build_block`` rejects it). Returns the metrics (a copy where changed) and how
    many rows were carried."""
    b = metrics.get(BITS_PER_PRB)
    used = metrics.get(PRB_USED)
    if b is None or used is None:
        return metrics, 0
    a = np.asarray(b)
    u = np.asarray(used)
    if a.ndim != 2 or a.dtype.kind != "f" or u.shape != a.shape or a.shape[0] != len(ue_ids):
        return metrics, 0
    empty = np.isnan(a).all(axis=1) & np.isfinite(u).any(axis=1)
    if not empty.any():
        return metrics, 0
    a = a.copy()
    n = 0
    for i in np.flatnonzero(empty).tolist():
        r = last_r(int(ue_ids[i]))
        if r > 0.0:
            a[i] = r
            n += 1
    return ({**metrics, BITS_PER_PRB: a} if n else metrics), n


def build_block(
    ue_ids: IntArray, metrics: Mapping[str, object], prb_total_default: float
) -> FloatArray:
    """Stack the metrics into one C-contiguous (len(BLOCK_ROWS), n_ue, n_granule) float64
    block. Raises ``OccInputError`` for a missing metric, a wrong shape, or a NaN/inf/negative
    value (naming the UEs whose rows are bad)."""
    n_ue = ue_ids.shape[0]
    missing = [m for m in REQUIRED if m not in metrics]
    if missing:
        raise OccInputError("missing_metric", f"missing metrics {missing}")
    first = np.asarray(metrics[PRB_USED])
    if first.ndim != 2 or first.shape[0] != n_ue or first.shape[1] < 1:
        raise OccInputError(
            "shape", f"{PRB_USED} must have shape (n_ue={n_ue}, n_granule>=1), got {first.shape}"
        )
    shape = first.shape
    cols: list[npt.NDArray[Any]] = []
    for name in BLOCK_ROWS:
        if name == PRB_TOTAL and name not in metrics:
            cols.append(np.full(shape, prb_total_default))
            continue
        a = np.asarray(metrics[name])
        if a.shape != shape:
            raise OccInputError("shape", f"{name} has shape {a.shape}, expected {shape}")
        if a.dtype.kind not in "iuf":
            raise OccInputError("dtype", f"{name} must be numeric, got dtype {a.dtype}")
        cols.append(a)
    try:
        block = np.stack(cols).astype(np.float64, copy=False)
    except (TypeError, ValueError) as e:  # pragma: no cover - guarded by the checks above
        raise OccInputError("dtype", str(e)) from None
    block = np.ascontiguousarray(block)
    ok = rows_ok(block)
    if not ok.all():
        bad = ue_ids[~ok]
        reason = "nan" if not np.isfinite(block).all() else "negative"
        raise OccInputError(
            reason,
            f"{bad.size} UE row(s) with NaN/inf or negative values (first: {int(bad[0])})",
            bad.tolist(),
        )
    return block
