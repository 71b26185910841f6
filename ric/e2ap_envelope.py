"""A fast reader and writer for the E2AP envelope, for e2term's hot path.

e2term relays every RIC indication; it needs only the PDU's kind, procedure code and the
RIC request ID, never the E2SM payload. Decoding whole PDUs with the generic codec costs
milliseconds for a 100-UE KPM indication; walking the aligned-PER envelope costs microseconds:

    E2AP-PDU       CHOICE (ext bit + 2-bit index) -> pad to octet
    procedureCode  INTEGER (0..255): 1 octet
    criticality    ENUMERATED (3): 2 bits -> pad
    value          open type: length determinant + octets
      SEQUENCE { protocolIEs, ... }: ext bit -> pad; IE count INTEGER (0..65535): 2 octets
      each IE: id 2 octets, criticality 2 bits -> pad, value: length determinant + octets

Length determinants follow X.691 10.9 (1 octet < 128, 2 octets < 16384, 16K-fragments above).
The full codec (``octoric.e2sm``) stays the authority: tests check this reader against it.
"""

from __future__ import annotations

from dataclasses import dataclass

INITIATING, SUCCESSFUL, UNSUCCESSFUL = 0, 1, 2
IE_RIC_REQUEST_ID = 29
IE_RAN_FUNCTION_ID = 5
IE_TRANSACTION_ID = 49


class EnvelopeError(ValueError):
    """The bytes are not a well-formed E2AP envelope; ``offset`` is where it went wrong."""

    def __init__(self, what: str, offset: int) -> None:
        super().__init__(f"E2AP envelope: {what} at byte {offset}")
        self.offset = offset


@dataclass(frozen=True)
class Envelope:
    kind: int  # INITIATING / SUCCESSFUL / UNSUCCESSFUL
    procedure: int
    criticality: int
    ies: tuple[tuple[int, int, bytes], ...]  # (id, criticality, value bytes)

    def ie(self, ie_id: int) -> bytes | None:
        for i, _, v in self.ies:
            if i == ie_id:
                return v
        return None

    def request_id(self) -> tuple[int, int] | None:
        """(ricRequestorID, ricInstanceID) when the PDU carries a RIC request ID."""
        v = self.ie(IE_RIC_REQUEST_ID)
        if v is None:
            return None
        if len(v) < 5:
            raise EnvelopeError("RICrequestID too short", 0)
        return (v[1] << 8) | v[2], (v[3] << 8) | v[4]

    def ran_function_id(self) -> int | None:
        v = self.ie(IE_RAN_FUNCTION_ID)
        if v is None:
            return None
        if len(v) != 2:
            raise EnvelopeError("RANfunctionID is not 2 octets", 0)
        return (v[0] << 8) | v[1]


def _read_length(data: bytes, pos: int) -> tuple[bytes, int]:
    """An octet-aligned length determinant and the octets it announces (fragments joined)."""
    out = bytearray()
    n_total = len(data)
    while True:
        if pos >= n_total:
            raise EnvelopeError("length determinant missing", pos)
        b = data[pos]
        if b & 0x80 == 0:
            n, pos = b, pos + 1
            frag = False
        elif b & 0xC0 == 0x80:
            if pos + 1 >= n_total:
                raise EnvelopeError("2-octet length truncated", pos)
            n, pos = ((b & 0x3F) << 8) | data[pos + 1], pos + 2
            frag = False
        else:
            m = b & 0x3F
            if not 1 <= m <= 4:
                raise EnvelopeError(f"bad fragment multiplier {m}", pos)
            n, pos = m * 16384, pos + 1
            frag = True
        if pos + n > n_total:
            raise EnvelopeError(f"length {n} runs past the end ({n_total - pos} left)", pos)
        if not frag and not out:
            return data[pos : pos + n], pos + n
        out += data[pos : pos + n]
        pos += n
        if not frag:
            return bytes(out), pos


def parse(data: bytes) -> Envelope:
    if len(data) < 4:
        raise EnvelopeError("shorter than an E2AP header", 0)
    b0 = data[0]
    if b0 & 0x80:
        raise EnvelopeError("E2AP-PDU choice extension is not supported", 0)
    kind = (b0 >> 5) & 0x03
    if kind > UNSUCCESSFUL:
        raise EnvelopeError(f"bad E2AP-PDU choice index {kind}", 0)
    procedure = data[1]
    criticality = data[2] >> 6
    if criticality > 2:
        raise EnvelopeError("bad criticality", 2)
    value, end = _read_length(data, 3)
    if end != len(data):
        raise EnvelopeError(f"{len(data) - end} trailing bytes", end)
    if len(value) < 3:
        raise EnvelopeError("message value too short", 3)
    if value[0] & 0x80:
        raise EnvelopeError("message extension additions are not supported", 4)
    count = (value[1] << 8) | value[2]
    pos = 3
    ies = []
    for _ in range(count):
        if pos + 3 > len(value):
            raise EnvelopeError("IE header truncated", pos)
        ie_id = (value[pos] << 8) | value[pos + 1]
        crit = value[pos + 2] >> 6
        ie_value, pos = _read_length(value, pos + 3)
        ies.append((ie_id, crit, ie_value))
    if pos != len(value):
        raise EnvelopeError(f"{len(value) - pos} bytes after the last IE", pos)
    return Envelope(kind, procedure, criticality, tuple(ies))


def _write_length(n: int) -> bytes:
    if n < 128:
        return bytes((n,))
    if n < 16384:
        return bytes((0x80 | (n >> 8), n & 0xFF))
    raise ValueError("fragmented lengths are only read, never written here")


def build(kind: int, procedure: int, criticality: int, ies: list[tuple[int, int, bytes]]) -> bytes:
    """The inverse of :func:`parse` for PDUs under 16 KB (e2term's own small answers)."""
    body = bytearray(b"\x00")
    body += len(ies).to_bytes(2, "big")
    for ie_id, crit, v in ies:
        body += ie_id.to_bytes(2, "big") + bytes((crit << 6,)) + _write_length(len(v)) + v
    head = bytes((kind << 5, procedure, criticality << 6))
    return head + _write_length(len(body)) + bytes(body)


def request_id_ie(requestor: int, instance: int) -> bytes:
    return bytes((0,)) + requestor.to_bytes(2, "big") + instance.to_bytes(2, "big")


def octet_string(ie_value: bytes) -> bytes:
    """The contents of an IE whose type is an unconstrained OCTET STRING (e.g. the indication
    header and message): its own length determinant, then the octets."""
    v, end = _read_length(ie_value, 0)
    if end != len(ie_value):
        raise EnvelopeError("bytes after the OCTET STRING", end)
    return v
