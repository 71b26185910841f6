"""A specialised aligned-PER decoder for E2SM-RC-IndicationMessage Format 2 (per-UE RAN
parameters: what REPORT style 4, UE information, sends on every handover step).

The handover xApp decodes one of these per UE event; pycrate's generic decoder takes ~130 µs
for a one-UE message, which alone is most of the xApp's 2 ms detection budget at 10 gNBs x
100 UEs. This reads the bytes straight into ``rc.RcIndicationMessage``. It handles Format 2
with gNB-UEID / gNB-DU-UEID identities and every RAN parameter value type (elements,
structures, lists) with boolean, integer, real, bit-string and octet-string values. Anything
else (Format 1/3/5/6, an extension present, a PrintableString value, a fragmented length,
trailing bytes) goes to the generic decoder, so its answer is always the generic decoder's
answer; tests/e2sm/test_rc_fast.py checks that on random and corrupted messages.

Bounds: the generic codec's input limit; every read is bounds-checked; nesting is limited to
``MAX_DEPTH`` levels (deeper messages go to the generic decoder, which decides).
"""

from __future__ import annotations

from octoric.e2sm import rc
from octoric.e2sm.fastpath import Fallback, check_input, read_real, read_ueid
from octoric.e2sm.per import BitReader

MAX_DEPTH = 16
_ID_MAX = 4294967295  # RANParameter-ID ::= INTEGER (1..4294967295, ...)


class RcIndicationDecoder:
    """Decodes E2SM-RC-IndicationMessage bytes; counts fast decodes and fallbacks."""

    def __init__(self) -> None:
        self.fast = 0
        self.fallbacks = 0

    def decode(self, message: bytes) -> rc.RcIndicationMessage:
        check_input(message, "E2SM-RC-IndicationMessage")
        try:
            out = _format2(bytes(message))
        except (Fallback, IndexError, ValueError, KeyError, OverflowError):
            self.fallbacks += 1
            return rc.decode_rc(rc.RcIndicationMessage, message)
        self.fast += 1
        return out


def _format2(data: bytes) -> rc.RcIndicationMessage:
    r = BitReader(data)
    # IndicationMessage ext bit, formats CHOICE ext bit + 3-bit index (1 = Format 2),
    # Format2 ext bit
    if r.bits(6) != 0b0_0_001_0:
        raise Fallback
    r.align()
    n_ue = r.bits(16) + 1
    ues = []
    for _ in range(n_ue):
        if r.bits(1):  # Format2-Item extension
            raise Fallback
        ue = read_ueid(r)
        ues.append((ue, _params(r, 0)))
    if not r.at_end():
        raise Fallback  # trailing bytes: the generic decoder reports them
    return rc.RcIndicationMessage(ue_params=tuple(ues))


def _params(r: BitReader, depth: int) -> tuple[rc.RanParam, ...]:
    """SEQUENCE (SIZE(1..65535)) OF items {ranParameter-ID, ranParameter-valueType, ...}."""
    if depth > MAX_DEPTH:
        raise Fallback
    r.align()
    n = r.bits(16) + 1
    out = []
    for _ in range(n):
        # item ext bit, RANParameter-ID ext bit + 2-bit octet count
        head = r.bits(4)
        if head & 0b1100:
            raise Fallback
        pid = r.uint((head & 3) + 1) + 1
        if pid > _ID_MAX:
            raise Fallback
        out.append(rc.RanParam(pid, _value_type(r, depth)))
    return tuple(out)


def _value_type(r: BitReader, depth: int) -> rc.Element | rc.Structure | rc.ListValue:
    kind = r.bits(3)  # CHOICE ext bit + 2-bit index
    if kind == 0:  # ElementTrue: ext bit, value
        if r.bits(1):
            raise Fallback
        return rc.Element(_value(r), key=True)
    if kind == 1:  # ElementFalse: ext bit, value present
        head = r.bits(2)
        if head & 0b10:
            raise Fallback
        return rc.Element(_value(r) if head else None)
    if kind == 2:  # Structure: Choice-Structure ext bit, then a RANParameter-STRUCTURE
        if r.bits(1):
            raise Fallback
        return _structure(r, depth)
    if kind == 3:  # List: Choice-List ext bit, RANParameter-LIST ext bit, 1..65535 structures
        if r.bits(2):
            raise Fallback
        r.align()
        n = r.bits(16) + 1
        return rc.ListValue(tuple(_structure(r, depth) for _ in range(n)))
    raise Fallback


def _structure(r: BitReader, depth: int) -> rc.Structure:
    head = r.bits(2)  # ext bit, sequence-of-ranParameters present
    if head & 0b10:
        raise Fallback
    return rc.Structure(_params(r, depth + 1) if head else None)


def _value(r: BitReader) -> rc.ParamValue:
    """RANParameter-Value: CHOICE ext bit + 3-bit index, then the alternative."""
    kind = r.bits(4)
    if kind == 0:  # BOOLEAN
        return bool(r.bits(1))
    if kind == 1:  # unconstrained INTEGER: length, two's complement octets
        n = r.length()
        if n == 0:
            raise Fallback
        return int.from_bytes(r.octets(n), "big", signed=True)
    if kind == 2:  # REAL
        return read_real(r.octets(r.length()))
    if kind == 3:  # unconstrained BIT STRING: length in bits, the bits (aligned)
        nbits = r.length()
        return rc.Bits(r.bits(nbits) if nbits else 0, nbits)
    if kind == 4:  # unconstrained OCTET STRING
        return bytes(r.octets(r.length()))
    raise Fallback  # PrintableString or an extension: the generic decoder
