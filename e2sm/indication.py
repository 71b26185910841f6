"""Columnar view of a KPM indication: UE x metric x granule numpy arrays plus timestamps.

``parse_indication(header, message)`` is the hot path of the OCC xApp (one call per RIC
indication, every reporting period). It goes through ``IndicationDecoder``, so the decoder can
be swapped without touching callers: ``GenericDecoder`` walks the pycrate-decoded value;
``fastpath.FastFormat3Decoder`` (the default) reads Format 3 straight from the bytes and falls
back to the generic decoder for anything it does not handle.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import numpy.typing as npt

from octoric.e2sm import codec
from octoric.e2sm.common import UeId, ntp_to_unix
from octoric.e2sm.errors import E2smDecodeError
from octoric.e2sm.kpm import real_from_asn

if TYPE_CHECKING:
    from octoric.e2sm.e2ap import RicIndication

FloatArray = npt.NDArray[np.float64]


@dataclass
class UeSeries:
    """One UE's (or, with ``ue_id=None``, the cell's) report: metric names and a
    metric x granule array (NaN for noValue / notSatisfied / missing)."""

    ue_id: UeId | None
    metrics: list[str]
    values: FloatArray  # shape (len(metrics), n_granules)
    granularity_ms: int | None


class IndicationDecoder(Protocol):
    """Turns E2SM-KPM-IndicationMessage bytes into per-UE series."""

    def decode_message(self, message: bytes) -> list[UeSeries]: ...


@dataclass
class KpmColumns:
    """A decoded indication. ``values[u, m, g]`` is metric ``metrics[m]`` of UE ``ue_ids[u]``
    in granule ``g`` (NaN = no value); ``timestamps[g]`` is the granule's start (unix s).
    Cell-level reports (format 1) have one row with ``ue_ids == [None]``."""

    ue_ids: list[UeId | None]
    metrics: list[str]
    values: FloatArray  # (n_ue, n_metric, n_granule)
    timestamps: FloatArray  # (n_granule,)
    granularity_ms: int | None
    collect_start: float

    def metric(self, name: str) -> FloatArray:
        """The (n_ue, n_granule) array of one metric (KeyError when absent)."""
        return self.values[:, self.metrics.index(name), :]


def _metric_names(meas_infos: list[dict[str, Any]] | None, n_values: int) -> list[str]:
    if meas_infos is None:
        return [f"#{i}" for i in range(n_values)]
    names: list[str] = []
    for m in meas_infos:
        kind, x = m["measType"]
        base = str(x) if kind == "measName" else f"id:{x}"
        labels = m["labelInfoList"]
        if len(labels) == 1:
            names.append(base)
        else:
            names.extend(f"{base}#{j}" for j in range(len(labels)))
    return names


def _record_value(item: tuple[str, Any]) -> float:
    kind, x = item
    if kind == "integer":
        return float(x)
    if kind == "real":
        return real_from_asn(x)
    return math.nan


def _series_from_format1(
    ue_id: UeId | None, f1: dict[str, Any], names: list[str] | None = None
) -> UeSeries:
    data = f1["measData"]
    width = max(len(r["measRecord"]) for r in data)
    if names is None:
        names = _metric_names(f1.get("measInfoList"), width)
    arr = np.full((len(names), len(data)), np.nan)
    for g, rec in enumerate(data):
        for m, item in enumerate(rec["measRecord"][: len(names)]):
            arr[m, g] = _record_value(item)
    gp = f1.get("granulPeriod")
    return UeSeries(ue_id, names, arr, None if gp is None else int(gp))


class GenericDecoder:
    """Decodes with the generic pycrate codec, then walks the value."""

    def decode_message(self, message: bytes) -> list[UeSeries]:
        value = codec.decode("E2SM-KPM-IndicationMessage", message)
        try:
            kind, body = value["indicationMessage-formats"]
            if kind == "indicationMessage-Format1":
                return [_series_from_format1(None, body)]
            if kind == "indicationMessage-Format3":
                return [
                    _series_from_format1(UeId.from_asn(r["ueID"]), r["measReport"])
                    for r in body["ueMeasReportList"]
                ]
            if kind == "indicationMessage-Format2":
                # one row: the conditions' measurements in order
                names = [
                    str(c["measType"][1])
                    if c["measType"][0] == "measName"
                    else f"id:{c['measType'][1]}"
                    for c in body["measCondUEidList"]
                ]
                f1 = {"measData": body["measData"], "granulPeriod": body.get("granulPeriod")}
                return [_series_from_format1(None, f1, names)]
        except (KeyError, ValueError, TypeError, IndexError) as e:
            raise E2smDecodeError(
                "E2SM-KPM-IndicationMessage", f"{type(e).__name__}: {e}"
            ) from None
        raise E2smDecodeError("E2SM-KPM-IndicationMessage", f"unsupported format {kind}")


def _default_decoder() -> IndicationDecoder:
    from octoric.e2sm.fastpath import FastFormat3Decoder

    return FastFormat3Decoder()


_DEFAULT: IndicationDecoder | None = None


def collect_start_of(header: bytes) -> float:
    """Unix time of an E2SM-KPM-IndicationHeader's colletStartTime."""
    value = codec.decode("E2SM-KPM-IndicationHeader", header)
    try:
        return ntp_to_unix(value["indicationHeader-formats"][1]["colletStartTime"])
    except (KeyError, ValueError, TypeError) as e:
        raise E2smDecodeError("E2SM-KPM-IndicationHeader", str(e)) from None


def _unique(names: list[str]) -> list[str]:
    """A measurement listed twice in one report gets a second column (``name~2``)."""
    if len(set(names)) == len(names):
        return names
    used: set[str] = set()
    out = []
    for n in names:
        cand, k = n, 1
        while cand in used:
            k += 1
            cand = f"{n}~{k}"
        used.add(cand)
        out.append(cand)
    return out


def columns_from_series(
    series: list[UeSeries], collect_start: float, granularity_ms: int | None = None
) -> KpmColumns:
    """Stack per-UE series into one (UE x metric x granule) array (metrics: union, in order
    of first appearance)."""
    metric_index: dict[str, int] = {}
    for s in series:
        s.metrics = _unique(s.metrics)
        for name in s.metrics:
            metric_index.setdefault(name, len(metric_index))
    n_gran = max((s.values.shape[1] for s in series), default=0)
    values = np.full((len(series), len(metric_index), n_gran), np.nan)
    for u, s in enumerate(series):
        if s.metrics and all(metric_index[n] == i for i, n in enumerate(s.metrics)):
            values[u, : len(s.metrics), : s.values.shape[1]] = s.values
        else:
            rows = [metric_index[n] for n in s.metrics]
            values[u, rows, : s.values.shape[1]] = s.values
    gp = granularity_ms
    if gp is None:
        gp = next((s.granularity_ms for s in series if s.granularity_ms), None)
    step = (gp or 0) / 1000.0
    timestamps = collect_start + step * np.arange(n_gran, dtype=np.float64)
    return KpmColumns(
        [s.ue_id for s in series], list(metric_index), values, timestamps, gp, collect_start
    )


def parse_indication(
    header: bytes,
    message: bytes,
    decoder: IndicationDecoder | None = None,
    granularity_ms: int | None = None,
) -> KpmColumns:
    """Columnar data of a KPM indication (header + message bytes of a RIC indication).
    ``granularity_ms`` is used when the message does not carry granulPeriod."""
    global _DEFAULT
    if decoder is None:
        if _DEFAULT is None:
            _DEFAULT = _default_decoder()
        decoder = _DEFAULT
    start = collect_start_of(header)
    return columns_from_series(decoder.decode_message(message), start, granularity_ms)


def parse_ric_indication(
    pdu: bytes, decoder: IndicationDecoder | None = None, granularity_ms: int | None = None
) -> tuple[RicIndication, KpmColumns]:
    """(RicIndication, columns) of an E2AP RIC indication PDU carrying KPM (the xApp hot path:
    the E2AP envelope is read by ``fastpath.decode_ric_indication``)."""
    from octoric.e2sm.fastpath import decode_ric_indication

    ind = decode_ric_indication(pdu)
    return ind, parse_indication(ind.header, ind.message, decoder, granularity_ms)
