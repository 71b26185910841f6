"""A specialised aligned-PER encoder for what a gNB sends at rate: the E2SM-KPM indication
header (format 1, collection start time only), indication message format 3 (per-UE format-1
reports, report styles 4/5). The bits and length determinants are ``per``'s; the E2AP
RICindication envelope around them is ``envelope.encode_ric_indication`` (re-exported here,
where the simulator's agent takes it from).

The generic codec (pycrate) needs ~20 ms for 8 UEs x 10 records; live reporting every 10 ms
cannot afford that. This module writes the bits directly. It covers: UEID gNB-UEID
(AMF-UE-NGAP-ID, GUAMI, optional gNB-CU-UE-F1AP-ID list and RAN UE ID); measurements named
or numbered with ``noLabel`` labels; integer / real / noValue / notSatisfied records,
``incompleteFlag``; optional measInfoList and granulPeriod. Anything else raises
``Unsupported`` (callers then use ``kpm.encode_kpm``). Its output is byte-identical to the
generic codec's: tests/e2sm/test_fastenc.py checks that on hypothesis-generated values.

Layouts (X.691 aligned variant), for reference:

    IndicationMessage: ext 0, CHOICE ext 1 + 7-bit extension index 0 (format 3), open type
    Format3: ext 0, align, 16-bit (count - 1)
    UE report item: ext 0, UEID CHOICE ext 0 + 3-bit index 0, UEID-GNB ext 0 + 5 optional
        bits, AMF-UE-NGAP-ID 3-bit (octets - 1) + aligned octets, GUAMI ext 0, PLMN (aligned
        3 octets), region/set/pointer 24 bits, F1AP list 2-bit (count - 1) + items (ext 0,
        2-bit (octets - 1), aligned octets), RAN UE ID 8 aligned octets
    Format1: ext 0, 2 optional bits, align, 16-bit (records - 1), records, measInfoList,
        granulPeriod 2-bit (octets - 1) + aligned octets of (value - 1)
    record: ext 0, incomplete bit, aligned length + items; item CHOICE ext + 2-bit index:
        integer 2-bit (octets - 1) + aligned octets; real aligned length + X.690 octets;
        noValue nothing; notSatisfied ext 1 + 7-bit index 0 + open type (0x01 0x00)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from octoric.e2sm import kpm
from octoric.e2sm.common import UeId
from octoric.e2sm.envelope import encode_ric_indication as encode_ric_indication
from octoric.e2sm.per import BitWriter as _Writer
from octoric.e2sm.per import Unsupported as Unsupported
from octoric.e2sm.per import length_prefixed


def _uint_octets(v: int) -> bytes:
    return v.to_bytes(max(1, (v.bit_length() + 7) >> 3), "big")


# --- REAL (X.690 binary, base 2, odd mantissa: what kpm.real_to_asn gives) ---------------


def real_content(x: float) -> bytes:
    if x == 0.0:
        return b""  # +0 and -0 (real_to_asn maps -0 to 0)
    m, _, e = kpm.real_to_asn(x)
    neg = m < 0
    m = -m if neg else m
    # minimal two's complement: -128 is one octet, 128 two
    eb = e.to_bytes(((e if e >= 0 else ~e).bit_length() + 8) >> 3, "big", signed=True)
    if len(eb) > 3:
        raise Unsupported("exponent too long")
    first = 0x80 | (0x40 if neg else 0) | (len(eb) - 1)
    return bytes((first,)) + eb + _uint_octets(m)


# --- pieces ---------------------------------------------------------------------------------

_U32 = 0xFFFFFFFF


def _write_value(w: _Writer, x: Any) -> None:
    if type(x) is int:
        if not 0 <= x <= _U32:
            raise Unsupported("integer record outside 0..2^32-1")
        b = _uint_octets(x)
        if w.n == 0:  # the usual case: one header octet, then the value octets
            w.buf.append((len(b) - 1) << 3)
            w.buf += b
            return
        w.bits(len(b) - 1, 5)  # ext 0, index 00, 2-bit length
        w.octets(b)
    elif type(x) is float:
        if math.isnan(x) or math.isinf(x):
            raise Unsupported("NaN or infinity")
        c = real_content(x)
        w.bits(0b001, 3)
        w.length(len(c))
        w.buf += c
    elif x is None:
        w.bits(0b010, 3)
    elif x is kpm.NOT_SATISFIED:
        w.bits(0b10000000, 8)
        w.octets(b"\x01\x00")
    else:
        raise Unsupported(f"record value {x!r}")


_CACHE_MAX = 65536


def _write_number(w: _Writer, x: float) -> None:
    """A non-NaN float record value: integer when integral within 0..2^32-1, else real."""
    _write_value(w, record_value(x))


def _meas_info_list(infos: Sequence[kpm.MeasInfo]) -> bytes:
    """A MeasurementInfoList starts aligned and ends aligned: cacheable bytes."""
    w = _Writer()
    if not 1 <= len(infos) <= 65535:
        raise Unsupported("measInfoList size")
    w.bits(len(infos) - 1, 16)
    for mi in infos:
        if mi.labels != (kpm.MeasLabel(),):
            raise Unsupported("labels other than one noLabel")
        if isinstance(mi.meas, str):
            raw = mi.meas.encode("ascii", "strict") if mi.meas.isascii() else b""
            if not 1 <= len(raw) <= 150 or not set(raw) <= _PRINTABLE:
                raise Unsupported("measurement name")
            w.bits(0b000, 3)  # item ext, CHOICE ext, measName
            w.bits(0, 1)  # size constraint ext
            w.bits(len(raw) - 1, 8)
            w.octets(raw)
        else:
            if not 1 <= mi.meas <= 65536:
                raise Unsupported("measurement ID")
            w.bits(0b001, 3)
            w.bits(0, 1)
            w.align()
            w.bits(mi.meas - 1, 16)
        w.length(1)
        w.bits(0b0_0_100000000000000000000_0, 24)
    return w.done()


_PRINTABLE = frozenset(
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789 '()+,-./:=?"
)


def _ue_id_bits(w: _Writer, ue: UeId) -> None:
    if ue.kind != "gNB-UEID" or ue.other is not None:
        raise Unsupported(f"UEID {ue.kind}")
    amf, g = ue.amf_ue_ngap_id, ue.guami
    if amf is None or g is None or not 0 <= amf <= 0xFF_FFFF_FFFF:
        raise Unsupported("AMF-UE-NGAP-ID / GUAMI")
    if len(g.plmn) != 3 or not (
        0 <= g.amf_region_id < 256 and 0 <= g.amf_set_id < 1024 and 0 <= g.amf_pointer < 64
    ):
        raise Unsupported("GUAMI")
    f1 = ue.f1ap_ids
    if len(f1) > 4:
        raise Unsupported("more than 4 F1AP IDs")
    if ue.ran_ueid is not None and len(ue.ran_ueid) != 8:
        raise Unsupported("RAN UE ID")
    opts = (0b10000 if f1 else 0) | (0b00100 if ue.ran_ueid is not None else 0)
    ab = _uint_octets(amf)
    # UEID CHOICE ext + index 0, UEID-GNB ext + 5 optional bits, 3-bit AMF ID length
    w.bits((opts << 3) | (len(ab) - 1), 13)
    w.octets(ab)
    w.bits(0, 1)  # GUAMI ext
    w.octets(g.plmn)
    w.bits((g.amf_region_id << 16) | (g.amf_set_id << 6) | g.amf_pointer, 24)
    if f1:
        w.bits(len(f1) - 1, 2)
        for i in f1:
            if not 0 <= i <= _U32:
                raise Unsupported("F1AP ID")
            b = _uint_octets(i)
            w.bits(len(b) - 1, 3)  # item ext 0 + 2-bit length
            w.octets(b)
    if ue.ran_ueid is not None:
        w.octets(ue.ran_ueid)


def _granul_bits(w: _Writer, gp: int) -> None:
    if not 1 <= gp <= _U32:
        raise Unsupported("granularity period")
    b = _uint_octets(gp - 1)
    w.bits(len(b) - 1, 2)
    w.octets(b)


def _format1(w: _Writer, f: kpm.IndicationFormat1, mil: bytes | None) -> None:
    recs = f.records
    if not 1 <= len(recs) <= 65535:
        raise Unsupported("record count")
    w.bits((0b01 if mil is not None else 0) << 1 | (f.granularity_ms is not None), 3)
    w.align()
    w.bits(len(recs) - 1, 16)
    for r in recs:
        vals = r.values
        if not vals:
            raise Unsupported("empty record")
        w.bits(0b01 if r.incomplete else 0, 2)
        w.length(len(vals))
        for x in vals:
            _write_value(w, x)
        if r.incomplete:
            w.bits(0, 1)  # incompleteFlag ENUMERATED {true, ...}: ext bit only
    if mil is not None:
        w.octets(mil)
    if f.granularity_ms is not None:
        _granul_bits(w, f.granularity_ms)


def _wrap_format3(content: bytes) -> bytes:
    # IndicationMessage ext 0, CHOICE ext 1, normally-small index 0 (9 bits), pad, open type
    return b"\x40\x00" + length_prefixed(content or b"\x00")


# --- public API ----------------------------------------------------------------------------


def encode_indication_header(collect_start_time: bytes, timestamp_octets: int = 8) -> bytes:
    """E2SM-KPM-IndicationHeader format 1 with only colletStartTime (8-byte NTP time); with
    ``timestamp_octets=4`` as KPM v02.03 has it (the seconds)."""
    if len(collect_start_time) != 8:
        raise Unsupported("a TimeStamp is 8 octets")
    if timestamp_octets not in (4, 8):
        raise Unsupported("a TimeStamp is 8 octets, or 4 in KPM v02.03")
    return b"\x00" + collect_start_time[:timestamp_octets]


def encode_header(h: kpm.KpmIndicationHeader) -> bytes:
    if any(
        x is not None for x in (h.file_format_version, h.sender_name, h.sender_type, h.vendor_name)
    ):
        raise Unsupported("optional header strings")
    return encode_indication_header(h.collect_start_time)


def encode_message(msg: kpm.KpmIndicationMessage) -> bytes:
    """``kpm.encode_kpm`` for a format-3 indication message (``Unsupported`` otherwise)."""
    f3 = msg.format
    if not isinstance(f3, kpm.IndicationFormat3):
        raise Unsupported("only format 3")
    if not 1 <= len(f3.reports) <= 65535:
        raise Unsupported("UE count")
    w = _Writer()
    w.buf.append(0)  # Format3 ext bit + padding: the 16-bit count is aligned
    w.bits(len(f3.reports) - 1, 16)
    cache: dict[tuple[kpm.MeasInfo, ...], bytes] = {}
    for rep in f3.reports:
        w.bits(0, 1)  # UEMeasurementReportItem ext
        _ue_id_bits(w, rep.ue_id)
        ms = rep.report.measurements
        mil = None
        if ms is not None:
            mil = cache.get(ms)
            if mil is None:
                mil = cache[ms] = _meas_info_list(ms)
        _format1(w, rep.report, mil)
    return _wrap_format3(w.done())


class Format3Encoder:
    """Encodes per-UE columns straight into a format-3 message (the live agent's path).

    ``values[u, g, m]``: UE ``u``, granule ``g``, measurement ``m``; NaN is noValue, an
    integral value within 0..2^32-1 is an integer record, anything else a real. Pieces that
    do not change between indications (each UE's ID prefix, the measInfoList) are cached.
    """

    def __init__(self, measurements: Sequence[str | int], granularity_ms: int | None = 1) -> None:
        self.measurements = tuple(measurements)
        self.mil = _meas_info_list(tuple(kpm.MeasInfo(m) for m in self.measurements))
        self.granularity_ms = granularity_ms
        gw = _Writer()
        if granularity_ms is not None:
            _granul_bits(gw, granularity_ms)
        self._gp = gw.done()
        self._ue_cache: dict[UeId, bytes] = {}
        # value -> its record item's bytes when it starts on an octet boundary (most do):
        # MCS, PRB counts and bits per PRB repeat from one indication to the next
        self._items: dict[float, bytes] = {}

    def _ue_prefix(self, ue: UeId) -> bytes:
        p = self._ue_cache.get(ue)
        if p is None:
            w = _Writer()
            w.bits(0, 1)  # item ext
            _ue_id_bits(w, ue)
            has_gp = self.granularity_ms is not None
            w.bits(0b010 | has_gp, 3)  # Format1 ext, measInfoList present, granulPeriod
            p = w.done()
            if len(self._ue_cache) > 4096:
                self._ue_cache.clear()
            self._ue_cache[ue] = p
        return p

    def encode(self, ue_ids: Sequence[UeId], values: npt.NDArray[np.float64]) -> bytes:
        n_ue = len(ue_ids)
        if values.ndim != 3 or values.shape[0] != n_ue or values.shape[2] != len(self.measurements):
            raise ValueError("values must be (UEs, granules, measurements)")
        if not 1 <= n_ue <= 65535 or not 1 <= values.shape[1] <= 65535:
            raise Unsupported("UE or record count")
        n_rec, n_meas = values.shape[1], values.shape[2]
        if n_meas >= 128:
            raise Unsupported("128 or more measurements")
        rows: list[list[list[float]]] = values.tolist()
        w = _Writer()
        buf = w.buf
        buf += b"\x00"  # Format3 ext + padding
        buf += (n_ue - 1).to_bytes(2, "big")
        rec_head = (n_rec - 1).to_bytes(2, "big")
        isnan = math.isnan
        cache = self._items
        cache_get = cache.get
        for u in range(n_ue):
            # every UE report starts aligned: the previous one ended with granulPeriod or
            # the measInfoList, both octet-aligned
            buf += self._ue_prefix(ue_ids[u])
            buf += rec_head
            for rec in rows[u]:
                if w.n:
                    w.bits(0, 2)
                    w.length(n_meas)
                else:
                    buf.append(0)
                    buf.append(n_meas)
                for x in rec:
                    if w.n == 0:
                        item = cache_get(x)
                        if item is not None:  # seen before: the item's aligned bytes
                            buf += item
                            continue
                    if isnan(x):
                        w.bits(0b010, 3)
                        continue
                    if w.n == 0:
                        start = len(buf)
                        _write_number(w, x)
                        if len(cache) >= _CACHE_MAX:
                            cache.clear()
                        cache[x] = bytes(buf[start:])
                    else:
                        _write_number(w, x)
            w.octets(self.mil)
            if self._gp:
                buf += self._gp
        return _wrap_format3(w.done())

    def records(
        self, ue_ids: Sequence[UeId], values: npt.NDArray[np.float64]
    ) -> kpm.KpmIndicationMessage:
        """The same message as dataclasses (for the generic codec and tests)."""
        infos = tuple(kpm.MeasInfo(m) for m in self.measurements)
        reps = []
        for u, ue in enumerate(ue_ids):
            recs = tuple(kpm.MeasRecord(tuple(record_value(x) for x in row)) for row in values[u])
            reps.append(kpm.UeReport(ue, kpm.IndicationFormat1(recs, infos, self.granularity_ms)))
        return kpm.KpmIndicationMessage(kpm.IndicationFormat3(tuple(reps)))


def record_value(x: float) -> kpm.MeasValue:
    """The record value a float column entry is sent as: NaN is noValue, an integral value
    within 0..2^32-1 an integer, anything else a real."""
    x = float(x)
    if math.isnan(x):
        return None
    if x.is_integer() and 0.0 <= x <= 4294967295.0:
        return int(x)
    return x
