"""One RIC indication (E2AP bytes) -> the OCC engine's input: UE ids, start time and the
metric -> (n_ue, n_granule) arrays.

Faults are ``IndicationError`` with a stable ``reason`` (the counter key): ``undecodable``
(E2AP or E2SM-KPM bytes), ``not_kpm`` (another RAN function), ``not_ue_level`` (format 1/2:
no per-UE reports), ``granularity`` (not 1 ms), ``missing_metric``, ``empty``. Rows of UEs the
engine cannot key are dropped and counted as ``unknown_ue``; an indication with none left is
rejected with that reason. A UEID-GNB row is keyed by its AMF-UE-NGAP-ID, a UEID-GNB-DU row
(srsRAN's DU) by the node and its gNB-CU-UE-F1AP-ID (``contracts.ue_key``); other kinds, or
a UEID-GNB without the AMF's ID, cannot be keyed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from octoric.contracts import kpm as K
from octoric.contracts import ue_key
from octoric.e2sm import kpm
from octoric.e2sm.e2ap import RicIndication
from octoric.e2sm.errors import E2smError
from octoric.e2sm.fastpath import decode_ric_indication
from octoric.e2sm.indication import default_decoder, parse_indication
from octoric.e2sm.kpm_series import KpmColumns
from octoric.e2sm.kpm_version import KpmVersion
from octoric.xapps.base.errors import XappError
from octoric.xapps.occ import metrics as M
from octoric.xapps.occ.degraded import ESTIMATED, STANDARD, DegradedInputs
from octoric.xapps.occ.records import guami_str

FloatArray = npt.NDArray[np.float64]
# kept beside the engine's inputs for /metrics only (kpis.py): the engine ignores them
SHOWN: tuple[str, ...] = (K.MCS_DL, K.UE_THP_DL)


class IndicationError(XappError):
    def __init__(self, reason: str, message: str) -> None:
        self.reason = reason
        super().__init__(f"indication rejected ({reason}): {message}")


@dataclass
class EngineInput:
    sn: int | None  # RICindicationSN (optional in E2AP)
    ran_function_id: int
    t0_ms: int
    ue_ids: npt.NDArray[np.int64]
    guamis: list[str | None]
    metrics: dict[str, FloatArray]
    n_granules: int
    dropped: dict[str, int] = field(default_factory=dict)  # reason -> rows dropped
    no_value_filled: int = 0  # noValue granules filled (metrics.fill_no_value)


def decode_indication(pdu: bytes) -> RicIndication:
    """The E2AP RIC indication envelope (header and message stay bytes)."""
    try:
        return decode_ric_indication(pdu)
    except E2smError as e:
        raise IndicationError("undecodable", str(e)) from None


def engine_input(
    pdu: bytes | RicIndication,
    granularity_ms: int = 1,
    degraded: DegradedInputs | None = None,
    version: KpmVersion | None = None,
    meid: str = "",
) -> EngineInput:
    """``degraded``: when the indication has none of OCC's vendor measurements but has the
    standard ones, estimate the former (OCC's degraded mode, ``degraded.py``) instead of
    rejecting it. ``version``: the node's E2SM-KPM version where known (it decides how a
    header with optional fields is read; the usual header of every version is read directly).
    ``meid``: the reporting node, part of the key of a UE it names by gNB-DU-UEID only.

    PDU bytes go through the native decoder's whole-PDU path when it is built and the PDU is
    the usual one (``native.decode_ric_indication``); any other goes through the envelope
    reader and ``parse_indication``, with the same result where both apply."""
    if isinstance(pdu, bytes | bytearray):
        fused = _native(pdu)
        if fused is not None:
            nind, cols = fused
            if nind.ran_function_id != kpm.RAN_FUNCTION_ID:
                raise _not_kpm(nind.ran_function_id)
            return _from_columns(
                nind.sn, nind.ran_function_id, cols, granularity_ms, degraded, meid
            )
    ind = pdu if isinstance(pdu, RicIndication) else decode_indication(pdu)
    if ind.ran_function_id != kpm.RAN_FUNCTION_ID:
        raise _not_kpm(ind.ran_function_id)
    try:
        cols = parse_indication(ind.header, ind.message, version=version)
    except E2smError as e:
        raise IndicationError("undecodable", str(e)) from None
    return _from_columns(ind.sn, ind.ran_function_id, cols, granularity_ms, degraded, meid)


def _not_kpm(ran_function_id: int) -> IndicationError:
    return IndicationError(
        "not_kpm", f"RAN function {ran_function_id}, expected KPM ({kpm.RAN_FUNCTION_ID})"
    )


def _native(pdu: bytes | bytearray) -> tuple[Any, KpmColumns] | None:
    dec = default_decoder()
    whole = getattr(dec, "decode_ric_indication", None)
    if whole is None:
        return None
    out: tuple[Any, KpmColumns] | None = whole(pdu, None)
    return out


def _from_columns(
    sn: int | None,
    ran_function_id: int,
    cols: KpmColumns,
    granularity_ms: int,
    degraded: DegradedInputs | None,
    meid: str,
) -> EngineInput:
    if cols.ue_ids == [None] or not cols.ue_ids:
        raise IndicationError("not_ue_level", "no per-UE reports (KPM format 3 expected)")
    if cols.granularity_ms is None:
        cols.granularity_ms = granularity_ms  # not in the message: the subscription's
    if cols.granularity_ms != granularity_ms:
        raise IndicationError(
            "granularity", f"granularity {cols.granularity_ms} ms, expected {granularity_ms} ms"
        )
    n_g = cols.values.shape[2]
    if n_g == 0:
        raise IndicationError("empty", "no granules")
    missing = [m for m in M.REQUIRED if m not in cols.metrics]
    # the degraded mode is for a node that reports none of OCC's vendor measurements; one that
    # lost some of them is malformed, not a stock gNB
    estimate = (
        bool(missing)
        and degraded is not None
        and not any(m in cols.metrics for m in ESTIMATED)
        and all(m in cols.metrics for m in STANDARD)
    )
    if missing and not estimate:
        raise IndicationError("missing_metric", f"missing measurements {missing}")
    keep, ids, guamis = _ue_rows(cols.ue_ids, meid)
    dropped = {}
    if len(keep) < len(cols.ue_ids):
        dropped["unknown_ue"] = len(cols.ue_ids) - len(keep)
    if not len(keep):
        raise IndicationError(
            "unknown_ue",
            "no UE carries an AMF-UE-NGAP-ID (UEID-GNB) or a gNB-CU-UE-F1AP-ID (UEID-GNB-DU)",
        )
    names = [n for n in (*M.REQUIRED, M.PRB_TOTAL, *(STANDARD if estimate else ()), *SHOWN)
             if n in cols.metrics]  # fmt: skip
    idx = [cols.metrics.index(n) for n in names]
    vals = cols.values if len(keep) == len(cols.ue_ids) else cols.values[keep]
    # one copy, metric-major: each metric's (UE, granule) array is a contiguous view of it
    stacked = np.ascontiguousarray(vals[:, idx, :].transpose(1, 0, 2))
    metrics = {n: stacked[i] for i, n in enumerate(names)}
    filled = M.fill_no_value(metrics) if np.isnan(stacked).any() else 0
    ue_ids = ids.copy()
    if estimate and degraded is not None:
        metrics = degraded.complete(ue_ids, metrics, granularity_ms)
    return EngineInput(
        sn,
        ran_function_id,
        round(cols.collect_start * 1000.0),
        ue_ids,
        list(guamis),
        metrics,
        n_g,
        dropped,
        filled,
    )


# UE lists the decoder handed out, by identity and node (it hands out the same list for the
# same UEs, report after report, and two DUs may report the same F1AP IDs): (that list, rows
# kept, their UE keys, their GUAMIs)
_Rows = tuple[npt.NDArray[np.intp], npt.NDArray[np.int64], list[str | None]]
_UE_ROWS: dict[tuple[int, str], tuple[list[Any], _Rows]] = {}


def _ue_rows(ues: list[Any], meid: str) -> _Rows:
    """The rows that can be keyed, their UE keys (``contracts.ue_key``) and GUAMIs (None for
    a DU's UE); the per-UE loop runs once per UE list the decoder returns."""
    hit = _UE_ROWS.get((id(ues), meid))
    if hit is not None and hit[0] is ues:
        return hit[1]
    keep = []
    ids = []
    guamis: list[str | None] = []
    for i, u in enumerate(ues):
        if u is None:
            continue
        if u.kind == "gNB-UEID" and u.amf_ue_ngap_id is not None:
            ids.append(u.amf_ue_ngap_id)
            guamis.append(guami_str(u.guami))
        elif u.kind == "gNB-DU-UEID" and len(u.f1ap_ids) == 1:
            ids.append(ue_key.du_key(meid, u.f1ap_ids[0]))
            guamis.append(None)
        else:
            continue
        keep.append(i)
    out = (np.asarray(keep, dtype=np.intp), np.asarray(ids, dtype=np.int64), guamis)
    if len(_UE_ROWS) >= 256:
        _UE_ROWS.clear()
    _UE_ROWS[(id(ues), meid)] = (ues, out)  # the list is held: its id is not reused meanwhile
    return out


def without_rows(inp: EngineInput, bad_ue_ids: tuple[int, ...], reason: str) -> EngineInput | None:
    """``inp`` minus the rows of ``bad_ue_ids`` (None if nothing is left)."""
    bad = np.isin(inp.ue_ids, np.asarray(bad_ue_ids, dtype=np.int64))
    if bad.all():
        return None
    keep = ~bad
    dropped = dict(inp.dropped)
    dropped[reason] = dropped.get(reason, 0) + int(bad.sum())
    return EngineInput(
        inp.sn,
        inp.ran_function_id,
        inp.t0_ms,
        inp.ue_ids[keep],
        [g for g, k in zip(inp.guamis, keep.tolist(), strict=True) if k],
        {k: np.ascontiguousarray(v[keep]) for k, v in inp.metrics.items()},
        inp.n_granules,
        dropped,
        inp.no_value_filled,
    )
