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

The bits and length determinants are ``per``'s. The RIC indication envelope is read by
``envelope.decode_ric_indication``, re-exported here because the xApps import it from here.
"""

from __future__ import annotations

import math

import numpy as np

from octoric.e2sm import codec
from octoric.e2sm.common import Guami, UeId
from octoric.e2sm.envelope import decode_ric_indication as decode_ric_indication
from octoric.e2sm.errors import E2smDecodeError
from octoric.e2sm.kpm_series import GenericDecoder, UeSeries
from octoric.e2sm.per import BitReader

_PRINTABLE = frozenset(
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789 '()+,-./:=?"
)


class Fallback(Exception):
    """The message uses something the fast path does not handle."""


def check_input(message: object, asn_type: str) -> None:
    """The generic codec's input checks, before a fast decoder reads: bytes, not empty, not
    over its size limit (``E2smDecodeError`` otherwise)."""
    if not isinstance(message, bytes | bytearray) or not message:
        raise E2smDecodeError(asn_type, "empty input", "byte 0")
    if len(message) > codec.MAX_PDU_BYTES:
        raise E2smDecodeError(
            asn_type, f"{len(message)} bytes exceeds the {codec.MAX_PDU_BYTES}-byte limit"
        )


def read_real(content: bytes) -> float:
    """A REAL's contents octets (X.690 8.5, binary base 2, or a special value)."""
    if not content:
        return 0.0
    first = content[0]
    if first & 0x80:
        if first & 0x3C:  # base 8/16 or a scaling factor: not CER/DER, the generic path refuses
            raise Fallback
        sign = -1.0 if first & 0x40 else 1.0
        elen = first & 3
        i = 1
        if elen == 3:
            if len(content) < 2:
                raise Fallback
            elen = content[1]
            i = 2
        else:
            elen += 1
        if len(content) <= i + elen:  # the mantissa has at least one octet
            raise Fallback
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
        # X.690 minus zero; the generic decoder (pycrate) reads it as plus zero and the
        # fast paths give what it gives (a zero's sign means nothing to a KPM value)
        return 0.0
    raise Fallback  # decimal encodings: rare, leave them to the generic decoder


def read_ueid(r: BitReader) -> UeId:
    """A UEID: gNB-UEID or gNB-DU-UEID, what gNBs send (anything else raises ``Fallback``)."""
    head = r.bits(4)  # CHOICE ext bit + 3-bit index
    if head == 0b0000:  # gNB-UEID
        ext = r.bits(1)
        opts = r.bits(5)  # F1AP list, E1AP list, RAN UE ID, XnAP ID, global gNB ID
        if ext or opts & 0b01011:
            raise Fallback
        n = r.bits(3) + 1  # AMF-UE-NGAP-ID: 1..5 octets
        amf = r.uint(n)
        if r.bits(1):  # GUAMI extension
            raise Fallback
        plmn = r.octets(3)
        reg_set_ptr = r.bits(24)
        guami = Guami(plmn, reg_set_ptr >> 16, (reg_set_ptr >> 6) & 0x3FF, reg_set_ptr & 0x3F)
        f1ap: tuple[int, ...] = ()
        if opts & 0b10000:
            count = r.bits(2) + 1
            ids = []
            for _ in range(count):
                if r.bits(1):
                    raise Fallback
                ids.append(r.uint(r.bits(2) + 1))
            f1ap = tuple(ids)
        ran_ueid = r.octets(8) if opts & 0b00100 else None
        return UeId("gNB-UEID", amf, guami, f1ap, ran_ueid, None)
    if head == 0b0001:  # gNB-DU-UEID
        ext = r.bits(1)
        opt = r.bits(1)
        if ext:
            raise Fallback
        fid = r.uint(r.bits(2) + 1)
        ran_ueid = r.octets(8) if opt else None
        return UeId("gNB-DU-UEID", f1ap_ids=(fid,), ran_ueid=ran_ueid)
    raise Fallback


class FastFormat3Decoder:
    """``IndicationDecoder`` for Format 3, falling back to ``GenericDecoder`` otherwise."""

    def __init__(self) -> None:
        self.generic = GenericDecoder()
        self.fast = 0
        self.fallbacks = 0
        self._names: dict[bytes, str] = {}

    def decode_message(self, message: bytes) -> list[UeSeries]:
        check_input(message, "E2SM-KPM-IndicationMessage")
        try:
            out = self._decode(bytes(message))
        except (Fallback, IndexError, ValueError, KeyError, OverflowError):
            self.fallbacks += 1
            return self.generic.decode_message(message)
        self.fast += 1
        return out

    # -- the format ----------------------------------------------------------------------

    def _decode(self, data: bytes) -> list[UeSeries]:
        r = BitReader(data)
        # E2SM-KPM-IndicationMessage: ext bit 0; CHOICE ext bit 1 + normally-small index 0
        if r.bits(9) != 0b0_1_0_000000:
            raise Fallback
        content = r.length_prefixed()
        if not r.at_end():
            raise Fallback  # trailing bytes: let the generic decoder report them
        c = BitReader(content)
        if c.bits(1):  # Format3 extension
            raise Fallback
        c.align()
        n_ue = c.bits(16) + 1
        out = [self._ue_report(c) for _ in range(n_ue)]
        if not c.at_end():
            raise Fallback  # the open type holds more than the value: the generic path decides
        return out

    def _ue_report(self, r: BitReader) -> UeSeries:
        if r.bits(1):  # UEMeasurementReportItem extension
            raise Fallback
        ue = read_ueid(r)
        metrics, values, gp = self._format1(r)
        return UeSeries(ue, metrics, values, gp)

    def _format1(self, r: BitReader) -> tuple[list[str], np.ndarray, int | None]:
        head = r.bits(3)  # ext bit, measInfoList present, granulPeriod present
        if head & 0b100:
            raise Fallback
        r.align()
        n_rec = r.bits(16) + 1
        rows: list[list[float]] = []
        data = r.data
        dlen = len(data)
        nan = math.nan
        for _ in range(n_rec):
            if r.bits(2):  # item extension / incompleteFlag: rare, generic path
                raise Fallback
            n_val = r.length()
            row = [nan] * n_val
            pos = r.pos
            for j in range(n_val):
                b = pos >> 3
                if not pos & 7:
                    # the usual case: an integer item starting on an octet boundary is one
                    # header octet (ext bit, 2-bit index, 2-bit length, padding) + the octets
                    if b >= dlen:
                        raise Fallback
                    h = data[b]
                    if not h & 0xE0:
                        end = b + 2 + ((h >> 3) & 3)
                        if end > dlen:
                            raise Fallback
                        row[j] = int.from_bytes(data[b + 1 : end], "big")
                        pos = end << 3
                        continue
                # CHOICE ext bit + 2-bit index, then for integer a 2-bit length
                if b + 1 >= dlen:
                    raise Fallback
                five = (((data[b] << 8) | data[b + 1]) >> (11 - (pos & 7))) & 0x1F
                kind = five >> 2
                if kind == 0:  # integer: length (1..4 octets), aligned octets
                    start = (pos + 12) >> 3
                    end = start + (five & 3) + 1
                    if end > dlen:
                        raise Fallback
                    row[j] = int.from_bytes(data[start:end], "big")
                    pos = end << 3
                elif kind == 1:  # real
                    r.pos = pos + 3
                    row[j] = read_real(r.octets(r.length()))
                    pos = r.pos
                elif kind == 2:  # noValue
                    pos += 3
                elif kind >= 4:  # extension alternative: notSatisfied is index 0
                    r.pos = pos + 1
                    if r.bits(7) != 0 or r.length_prefixed() != b"\x00":
                        raise Fallback  # NULL in an open type is exactly one zero octet
                    pos = r.pos
                else:
                    raise Fallback
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

    def _meas_info(self, r: BitReader) -> list[str]:
        r.align()
        n = r.bits(16) + 1
        names = []
        for _ in range(n):
            head = r.bits(3)  # item ext bit, measType CHOICE ext bit, CHOICE index
            if head & 0b110:
                raise Fallback
            if head == 0:  # measName: size ext bit + 8-bit (length - 1), aligned chars
                if r.bits(1):
                    raise Fallback
                ln = r.bits(8) + 1
                raw = r.octets(ln)
                name = self._names.get(raw)
                if name is None:
                    if not set(raw) <= _PRINTABLE or ln > 150:
                        raise Fallback
                    name = raw.decode("ascii")
                    if len(self._names) >= 4096:  # bounded: names come from the peer
                        self._names.clear()
                    self._names[raw] = name
            else:  # measID INTEGER (1..65536, ...)
                if r.bits(1):
                    raise Fallback
                r.align()
                name = f"id:{r.bits(16) + 1}"
            n_labels = r.length()
            if n_labels != 1:
                raise Fallback  # per-label columns: generic path names them
            # LabelInfoItem ext bit, MeasurementLabel ext bit + 21 optional bits (noLabel
            # only), noLabel ENUMERATED ext bit
            if r.bits(24) != 0b0_0_100000000000000000000_0:
                raise Fallback
            names.append(name)
        return names
