"""A specialised aligned-PER decoder for E2SM-KPM-IndicationMessage Format 3 (the hot path).

Reads the bytes directly into numpy arrays, without building pycrate's value tree. It handles
what octoric's gNBs (and srsRAN) send: UEID gNB-UEID (with optional F1AP ID list / RAN UE ID)
or gNB-DU-UEID, measurements named or numbered with ``noLabel`` labels, integer / real /
noValue / notSatisfied records, optional granularity period. Anything else (an extension
present, another format, other label fields, a fragmented length) makes it hand the message
to the generic decoder, so its answer is always the generic decoder's answer;
tests/e2sm/test_indication.py checks that on random messages.

Bounds: the same input length limit as the generic codec; every read is bounds-checked (an
out-of-range read falls back to the generic decoder, which then reports the error).
"""

from __future__ import annotations

import math

import numpy as np

from octoric.e2sm import codec, e2ap
from octoric.e2sm.common import Guami, UeId
from octoric.e2sm.errors import E2smDecodeError
from octoric.e2sm.kpm_series import GenericDecoder, UeSeries

_PRINTABLE = frozenset(
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789 '()+,-./:=?"
)


class _Fallback(Exception):
    """The message uses something the fast path does not handle."""


class _Reader:
    __slots__ = ("data", "nbits", "pos")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0
        self.nbits = len(data) * 8

    def bits(self, n: int) -> int:
        p = self.pos
        end = p + n
        if end > self.nbits:
            raise _Fallback
        b0 = p >> 3
        b1 = (end + 7) >> 3
        v = int.from_bytes(self.data[b0:b1], "big") >> ((b1 << 3) - end)
        self.pos = end
        return v & ((1 << n) - 1)

    def align(self) -> None:
        self.pos = (self.pos + 7) & ~7

    def octets(self, n: int) -> bytes:
        self.pos = (self.pos + 7) & ~7
        b = self.pos >> 3
        if b + n > len(self.data):
            raise _Fallback
        self.pos += n << 3
        return self.data[b : b + n]

    def uint(self, nbytes: int) -> int:
        return int.from_bytes(self.octets(nbytes), "big")

    def length(self) -> int:
        """Unconstrained length determinant (aligned); fragments are not handled here."""
        self.pos = (self.pos + 7) & ~7
        b = self.pos >> 3
        if b >= len(self.data):
            raise _Fallback
        first = self.data[b]
        if first < 0x80:
            self.pos += 8
            return first
        if first < 0xC0:
            if b + 1 >= len(self.data):
                raise _Fallback
            self.pos += 16
            return ((first & 0x3F) << 8) | self.data[b + 1]
        raise _Fallback  # fragmented


def _open_type_content(r: _Reader) -> bytes:
    """The bytes of an open type (handles fragmentation: the Format 3 payload often is >16K)."""
    chunks = []
    while True:
        r.align()
        b = r.pos >> 3
        if b >= len(r.data):
            raise _Fallback
        first = r.data[b]
        if first >= 0xC0:
            m = first & 0x3F
            if not 1 <= m <= 4:
                raise _Fallback
            r.pos += 8
            chunks.append(r.octets(m * 16384))
            continue
        n = r.length()
        chunks.append(r.octets(n))
        return b"".join(chunks)


def _real(content: bytes) -> float:
    if not content:
        return 0.0
    first = content[0]
    if first & 0x80:
        if first & 0x3C:  # base 8/16 or a scaling factor: not CER/DER, the generic path refuses
            raise _Fallback
        sign = -1.0 if first & 0x40 else 1.0
        elen = first & 3
        i = 1
        if elen == 3:
            if len(content) < 2:
                raise _Fallback
            elen = content[1]
            i = 2
        else:
            elen += 1
        if len(content) <= i + elen:  # the mantissa has at least one octet
            raise _Fallback
        exp = int.from_bytes(content[i : i + elen], "big", signed=True)
        mant = int.from_bytes(content[i + elen :], "big")
        try:
            return sign * math.ldexp(float(mant), exp)
        except OverflowError:
            return sign * math.inf
    if first == 0x40:
        return math.inf
    if first == 0x41:
        return -math.inf
    if first == 0x42:
        return math.nan
    if first == 0x43:
        return -0.0
    raise _Fallback  # decimal encodings: rare, leave them to the generic decoder


class FastFormat3Decoder:
    """``IndicationDecoder`` for Format 3, falling back to ``GenericDecoder`` otherwise."""

    def __init__(self) -> None:
        self.generic = GenericDecoder()
        self.fast = 0
        self.fallbacks = 0
        self._names: dict[bytes, str] = {}

    def decode_message(self, message: bytes) -> list[UeSeries]:
        if not isinstance(message, bytes | bytearray) or not message:
            raise E2smDecodeError("E2SM-KPM-IndicationMessage", "empty input", "byte 0")
        if len(message) > codec.MAX_PDU_BYTES:
            raise E2smDecodeError(
                "E2SM-KPM-IndicationMessage",
                f"{len(message)} bytes exceeds the {codec.MAX_PDU_BYTES}-byte limit",
            )
        try:
            out = self._decode(bytes(message))
        except (_Fallback, IndexError, ValueError, KeyError, OverflowError):
            self.fallbacks += 1
            return self.generic.decode_message(message)
        self.fast += 1
        return out

    # -- the format ----------------------------------------------------------------------

    def _decode(self, data: bytes) -> list[UeSeries]:
        r = _Reader(data)
        # E2SM-KPM-IndicationMessage: ext bit 0; CHOICE ext bit 1 + normally-small index 0
        if r.bits(9) != 0b0_1_0_000000:
            raise _Fallback
        content = _open_type_content(r)
        if (r.pos + 7) >> 3 != len(data):
            raise _Fallback  # trailing bytes: let the generic decoder report them
        c = _Reader(content)
        if c.bits(1):  # Format3 extension
            raise _Fallback
        c.align()
        n_ue = c.bits(16) + 1
        out = [self._ue_report(c) for _ in range(n_ue)]
        if (c.pos + 7) >> 3 != len(content):
            raise _Fallback  # the open type holds more than the value: the generic path decides
        return out

    def _ue_report(self, r: _Reader) -> UeSeries:
        if r.bits(1):  # UEMeasurementReportItem extension
            raise _Fallback
        ue = self._ueid(r)
        metrics, values, gp = self._format1(r)
        return UeSeries(ue, metrics, values, gp)

    def _ueid(self, r: _Reader) -> UeId:
        head = r.bits(4)  # CHOICE ext bit + 3-bit index
        if head == 0b0000:  # gNB-UEID
            ext = r.bits(1)
            opts = r.bits(5)  # F1AP list, E1AP list, RAN UE ID, XnAP ID, global gNB ID
            if ext or opts & 0b01011:
                raise _Fallback
            n = r.bits(3) + 1  # AMF-UE-NGAP-ID: 1..5 octets
            amf = r.uint(n)
            if r.bits(1):  # GUAMI extension
                raise _Fallback
            plmn = r.octets(3)
            reg_set_ptr = r.bits(24)
            guami = Guami(plmn, reg_set_ptr >> 16, (reg_set_ptr >> 6) & 0x3FF, reg_set_ptr & 0x3F)
            f1ap: tuple[int, ...] = ()
            if opts & 0b10000:
                count = r.bits(2) + 1
                ids = []
                for _ in range(count):
                    if r.bits(1):
                        raise _Fallback
                    ids.append(r.uint(r.bits(2) + 1))
                f1ap = tuple(ids)
            ran_ueid = r.octets(8) if opts & 0b00100 else None
            return UeId("gNB-UEID", amf, guami, f1ap, ran_ueid, None)
        if head == 0b0001:  # gNB-DU-UEID
            ext = r.bits(1)
            opt = r.bits(1)
            if ext:
                raise _Fallback
            fid = r.uint(r.bits(2) + 1)
            ran_ueid = r.octets(8) if opt else None
            return UeId("gNB-DU-UEID", f1ap_ids=(fid,), ran_ueid=ran_ueid)
        raise _Fallback

    def _format1(self, r: _Reader) -> tuple[list[str], np.ndarray, int | None]:
        head = r.bits(3)  # ext bit, measInfoList present, granulPeriod present
        if head & 0b100:
            raise _Fallback
        r.align()
        n_rec = r.bits(16) + 1
        rows: list[list[float]] = []
        data = r.data
        dlen = len(data)
        nan = math.nan
        for _ in range(n_rec):
            if r.bits(2):  # item extension / incompleteFlag: rare, generic path
                raise _Fallback
            n_val = r.length()
            row = [nan] * n_val
            pos = r.pos
            for j in range(n_val):
                b = pos >> 3
                if not pos & 7:
                    # the usual case: an integer item starting on an octet boundary is one
                    # header octet (ext bit, 2-bit index, 2-bit length, padding) + the octets
                    if b >= dlen:
                        raise _Fallback
                    h = data[b]
                    if not h & 0xE0:
                        end = b + 2 + ((h >> 3) & 3)
                        if end > dlen:
                            raise _Fallback
                        row[j] = int.from_bytes(data[b + 1 : end], "big")
                        pos = end << 3
                        continue
                # CHOICE ext bit + 2-bit index, then for integer a 2-bit length
                if b + 1 >= dlen:
                    raise _Fallback
                five = (((data[b] << 8) | data[b + 1]) >> (11 - (pos & 7))) & 0x1F
                kind = five >> 2
                if kind == 0:  # integer: length (1..4 octets), aligned octets
                    start = (pos + 12) >> 3
                    end = start + (five & 3) + 1
                    if end > dlen:
                        raise _Fallback
                    row[j] = int.from_bytes(data[start:end], "big")
                    pos = end << 3
                elif kind == 1:  # real
                    r.pos = pos + 3
                    row[j] = _real(r.octets(r.length()))
                    pos = r.pos
                elif kind == 2:  # noValue
                    pos += 3
                elif kind >= 4:  # extension alternative: notSatisfied is index 0
                    r.pos = pos + 1
                    if r.bits(7) != 0 or _open_type_content(r) != b"\x00":
                        raise _Fallback  # NULL in an open type is exactly one zero octet
                    pos = r.pos
                else:
                    raise _Fallback
            r.pos = pos
            rows.append(row)
        metrics: list[str]
        if head & 0b010:
            metrics = self._meas_info(r)
        else:
            metrics = [f"#{i}" for i in range(max(len(x) for x in rows))]
        gp = None
        if head & 0b001:
            gp = r.uint(r.bits(2) + 1) + 1
        arr = np.full((len(metrics), n_rec), np.nan)
        width = len(metrics)
        for g, row in enumerate(rows):
            k = min(width, len(row))
            arr[:k, g] = row[:k]
        return metrics, arr, gp

    def _meas_info(self, r: _Reader) -> list[str]:
        r.align()
        n = r.bits(16) + 1
        names = []
        for _ in range(n):
            head = r.bits(3)  # item ext bit, measType CHOICE ext bit, CHOICE index
            if head & 0b110:
                raise _Fallback
            if head == 0:  # measName: size ext bit + 8-bit (length - 1), aligned chars
                if r.bits(1):
                    raise _Fallback
                ln = r.bits(8) + 1
                raw = r.octets(ln)
                name = self._names.get(raw)
                if name is None:
                    if not set(raw) <= _PRINTABLE or ln > 150:
                        raise _Fallback
                    name = raw.decode("ascii")
                    if len(self._names) >= 4096:  # bounded: names come from the peer
                        self._names.clear()
                    self._names[raw] = name
            else:  # measID INTEGER (1..65536, ...)
                if r.bits(1):
                    raise _Fallback
                r.align()
                name = f"id:{r.bits(16) + 1}"
            n_labels = r.length()
            if n_labels != 1:
                raise _Fallback  # per-label columns: generic path names them
            # LabelInfoItem ext bit, MeasurementLabel ext bit + 21 optional bits (noLabel
            # only), noLabel ENUMERATED ext bit
            if r.bits(24) != 0b0_0_100000000000000000000_0:
                raise _Fallback
            names.append(name)
        return names


# --- the E2AP envelope of a RIC indication ---------------------------------------------------

_CRITICALITY = ("reject", "ignore", "notify")


def _octet_string(content: bytes) -> bytes:
    """An unconstrained OCTET STRING that fills an open type exactly."""
    r = _Reader(content)
    value = _open_type_content(r)  # same length / fragment scheme as an open type
    if (r.pos + 7) >> 3 != len(content):
        raise _Fallback
    return value


def _fixed_uint(content: bytes, nbytes: int, limit: int) -> int:
    if len(content) != nbytes:
        raise _Fallback
    v = int.from_bytes(content, "big")
    if v > limit:
        raise _Fallback
    return v


def _fast_ric_indication(data: bytes) -> e2ap.RicIndication:
    r = _Reader(data)
    if r.bits(3) != 0:  # E2AP-PDU: ext bit, initiatingMessage
        raise _Fallback
    if r.octets(1)[0] != e2ap.PROC_RIC_INDICATION:
        raise _Fallback
    crit = r.bits(2)
    if crit > 2:
        raise _Fallback
    content = _open_type_content(r)
    if (r.pos + 7) >> 3 != len(data):
        raise _Fallback
    c = _Reader(content)
    if c.bits(1):  # RICindication extension
        raise _Fallback
    n = c.uint(2)
    found: dict[int, bytes] = {}
    order: list[tuple[int, str]] = []
    for _ in range(n):
        ie_id = c.uint(2)
        ie_crit = c.bits(2)
        if ie_crit > 2:
            raise _Fallback
        value = _open_type_content(c)
        if ie_id not in found:
            found[ie_id] = value
            order.append((ie_id, _CRITICALITY[ie_crit]))
    if (c.pos + 7) >> 3 != len(content):
        raise _Fallback
    for mandatory in (29, 5, 15, 28, 25, 26):
        if mandatory not in found:
            raise _Fallback
    rid = found[29]
    if len(rid) != 5 or rid[0] != 0:  # RICrequestID: ext bit 0 + padding, 2 x 2 octets
        raise _Fallback
    ind_type = found[28]
    if len(ind_type) != 1 or ind_type[0] & 0xBF:  # ext bit 0, one value bit, zero padding
        raise _Fallback
    msg = e2ap.RicIndication(
        e2ap.RicRequestId(int.from_bytes(rid[1:3], "big"), int.from_bytes(rid[3:5], "big")),
        _fixed_uint(found[5], 2, 4095),
        _fixed_uint(found[15], 1, 255),
        _octet_string(found[25]),
        _octet_string(found[26]),
        "insert" if ind_type[0] & 0x40 else "report",
        _fixed_uint(found[27], 2, 65535) if 27 in found else None,
        _octet_string(found[20]) if 20 in found else None,
    )
    msg.wire = e2ap.WireDetails(_CRITICALITY[crit], tuple(order))
    return msg


def decode_ric_indication(data: bytes) -> e2ap.RicIndication:
    """``e2ap.decode_e2ap`` for RIC indications, reading the E2AP envelope directly (the
    xApps' hot path). Anything unusual goes to the generic decoder, which also reports
    errors; a PDU that is not a RIC indication raises ``E2smDecodeError``."""
    if isinstance(data, bytes | bytearray) and len(data) <= codec.MAX_PDU_BYTES:
        try:
            return _fast_ric_indication(bytes(data))
        except (_Fallback, IndexError, ValueError):
            pass
    msg = e2ap.decode_e2ap(data)
    if not isinstance(msg, e2ap.RicIndication):
        raise E2smDecodeError("E2AP-PDU", f"expected a RICindication, got {type(msg).__name__}")
    return msg
