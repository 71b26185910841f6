"""The columnar data model of KPM indications and the generic (pycrate) decoder.

``UeSeries`` (one UE's metrics x granules), ``KpmColumns`` (UE x metric x granule arrays),
the ``IndicationDecoder`` protocol and ``GenericDecoder``. ``indication`` builds the public
API on it; ``fastpath``'s fast Format 3 decoder produces the same ``UeSeries``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from octoric.e2sm import codec
from octoric.e2sm.common import UeId
from octoric.e2sm.errors import E2smDecodeError
from octoric.e2sm.kpm import real_from_asn

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
        return _series_of(value)


def _series_of(value: dict[str, Any]) -> list[UeSeries]:
    """The series of a decoded E2SM-KPM-IndicationMessage; a Format 255 one (KPM v05.00) has
    its jobs' series, in job order."""
    try:
        kind, body = value["indicationMessage-formats"]
        if kind == "indicationMessage-Format255":
            return [
                s
                for item in body["multiReportIndicationMessageList"]
                for s in _series_of(item["indicationMessage"])
            ]
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
        raise E2smDecodeError("E2SM-KPM-IndicationMessage", f"{type(e).__name__}: {e}") from None
    raise E2smDecodeError("E2SM-KPM-IndicationMessage", f"unsupported format {kind}")
