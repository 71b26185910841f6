"""Columnar view of a KPM indication: UE x metric x granule numpy arrays plus timestamps.

``parse_indication(header, message)`` is the hot path of the OCC xApp (one call per RIC
indication, every reporting period). It goes through ``IndicationDecoder``, so the decoder can
be swapped without touching callers: ``GenericDecoder`` walks the pycrate-decoded value;
``fastpath.FastFormat3Decoder`` reads Format 3 straight from the bytes and falls back to the
generic decoder for anything it does not handle; ``native.NativeFormat3Decoder`` (the default
where its library is built) does the same in Rust and hands the common case over as one array.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from octoric.e2sm.common import ntp_to_unix
from octoric.e2sm.envelope import decode_ric_indication
from octoric.e2sm.errors import E2smDecodeError
from octoric.e2sm.fastpath import FastFormat3Decoder
from octoric.e2sm.kpm import KpmIndicationHeader, decode_kpm
from octoric.e2sm.kpm_series import FloatArray as FloatArray
from octoric.e2sm.kpm_series import GenericDecoder as GenericDecoder
from octoric.e2sm.kpm_series import IndicationDecoder as IndicationDecoder
from octoric.e2sm.kpm_series import KpmColumns as KpmColumns
from octoric.e2sm.kpm_series import UeSeries as UeSeries
from octoric.e2sm.kpm_version import DEFAULT as DEFAULT_VERSION
from octoric.e2sm.kpm_version import KpmVersion

if TYPE_CHECKING:
    from octoric.e2sm.e2ap import RicIndication


def _default_decoder() -> IndicationDecoder:
    """The native decoder where ``make setup`` built it, else the Python fast path."""
    from octoric.e2sm.native import native_decoder

    return native_decoder() or FastFormat3Decoder()


_DEFAULT: IndicationDecoder | None = None


def collect_start_of(header: bytes, version: KpmVersion | None = None) -> float:
    """Unix time of an E2SM-KPM-IndicationHeader's colletStartTime.

    The usual header is format 1 with the time stamp alone: one octet of preamble (CHOICE and
    SEQUENCE extension bits, four absent optionals, padding: all zero) and the time stamp, 8
    octets (KPM v03.00 and later) or 4 (v02.03: whole seconds). Those are read directly (9 or
    5 bytes, first 0x00: the generic decoder reads exactly these); any other goes to the
    generic decoder, as the node's KPM ``version`` first."""
    if header[:1] == b"\0":
        if len(header) == 9:
            return ntp_to_unix(bytes(header[1:]))
        if len(header) == 5:
            return ntp_to_unix(bytes(header[1:]) + bytes(4))
    return collect_start_generic(header, version)


def collect_start_generic(header: bytes, version: KpmVersion | None = None) -> float:
    """``collect_start_of`` by the generic decoder alone (the fast path's oracle): the header
    as KPM ``version`` (default v04.00), then with the other time stamp size (a node whose
    announced version does not say which it writes: srsRAN_Project announces v02's OID and
    writes 8 octets)."""
    first = version or DEFAULT_VERSION
    other = KpmVersion.V4_00 if first.timestamp_octets == 4 else KpmVersion.V2_03
    error: E2smDecodeError | None = None
    for v in (first, other):
        try:
            return decode_kpm(KpmIndicationHeader, bytes(header), v).unix_time
        except E2smDecodeError as e:
            error = error or e
        except ValueError as e:  # another header format
            error = error or E2smDecodeError("E2SM-KPM-IndicationHeader", str(e))
    assert error is not None
    raise error


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


def default_decoder() -> IndicationDecoder:
    """The process's KPM message decoder: the native one where built, else the Python fast
    path (chosen on first use)."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = _default_decoder()
    return _DEFAULT


def parse_indication(
    header: bytes,
    message: bytes,
    decoder: IndicationDecoder | None = None,
    granularity_ms: int | None = None,
    version: KpmVersion | None = None,
) -> KpmColumns:
    """Columnar data of a KPM indication (header + message bytes of a RIC indication).
    ``granularity_ms`` is used when the message does not carry granulPeriod; ``version`` is the
    node's KPM version where known (it decides only for headers with optional fields)."""
    if decoder is None:
        decoder = default_decoder()
    start = collect_start_of(header, version)
    direct = getattr(decoder, "decode_columns", None)  # the native decoder's zero-copy path
    if direct is not None:
        cols: KpmColumns | None = direct(message, start, granularity_ms)
        if cols is not None:
            return cols
    return columns_from_series(decoder.decode_message(message), start, granularity_ms)


def parse_ric_indication(
    pdu: bytes,
    decoder: IndicationDecoder | None = None,
    granularity_ms: int | None = None,
    version: KpmVersion | None = None,
) -> tuple[RicIndication, KpmColumns]:
    """(RicIndication, columns) of an E2AP RIC indication PDU carrying KPM (the xApp hot path:
    the E2AP envelope is read by ``envelope.decode_ric_indication``)."""
    ind = decode_ric_indication(pdu)
    return ind, parse_indication(ind.header, ind.message, decoder, granularity_ms, version)
