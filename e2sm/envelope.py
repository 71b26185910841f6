"""The E2AP envelope, read and written without the generic codec: e2term's relay (it needs only
the PDU's kind, procedure code and RIC request ID, never the E2SM payload), the xApps' RIC
indication decode and the gNB agent's RIC indication encode.

Decoding whole PDUs with the generic codec costs milliseconds for a 100-UE KPM indication;
walking the aligned-PER envelope costs microseconds:

    E2AP-PDU       CHOICE (ext bit + 2-bit index) -> pad to octet
    procedureCode  INTEGER (0..255): 1 octet
    criticality    ENUMERATED (3): 2 bits -> pad
    value          open type: length determinant + octets
      SEQUENCE { protocolIEs, ... }: ext bit -> pad; IE count INTEGER (0..65535): 2 octets
      each IE: id 2 octets, criticality 2 bits -> pad, value: length determinant + octets

Length determinants are ``per``'s (X.691 10.9: 1 octet < 128, 2 octets < 16384, 16K fragments
above). The full codec (``e2ap``) stays the authority: tests/e2sm/test_envelope.py checks
``parse``/``build`` against it, tests/e2sm/test_indication.py ``decode_ric_indication`` and
tests/e2sm/test_fastenc.py ``encode_ric_indication``.
"""

from __future__ import annotations

from dataclasses import dataclass

from octoric.e2sm import codec, e2ap
from octoric.e2sm.errors import E2smDecodeError
from octoric.e2sm.per import PerError, Unsupported, length_prefixed, read_length_prefixed

INITIATING, SUCCESSFUL, UNSUCCESSFUL = 0, 1, 2
CRITICALITY = ("reject", "ignore", "notify")
REJECT, IGNORE = 0, 1

# E2AP protocol IE ids (E2AP v03.01, 9.3)
IE_RAN_FUNCTION_ID = 5
IE_RIC_ACTION_ID = 15
IE_RIC_CALL_PROCESS_ID = 20
IE_RIC_INDICATION_HEADER = 25
IE_RIC_INDICATION_MESSAGE = 26
IE_RIC_INDICATION_SN = 27
IE_RIC_INDICATION_TYPE = 28
IE_RIC_REQUEST_ID = 29
IE_TRANSACTION_ID = 49


class EnvelopeError(PerError):
    """The bytes are not a well-formed E2AP envelope; ``offset`` is where it went wrong."""

    def __init__(self, what: str, offset: int) -> None:
        super().__init__(f"E2AP envelope: {what}", offset)


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


def _read(data: bytes, pos: int) -> tuple[bytes, int]:
    try:
        return read_length_prefixed(data, pos)
    except PerError as e:
        raise EnvelopeError(e.what, e.offset) from None  # one error type for parse's callers


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
    value, end = _read(data, 3)
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
        ie_value, pos = _read(value, pos + 3)
        ies.append((ie_id, crit, ie_value))
    if pos != len(value):
        raise EnvelopeError(f"{len(value) - pos} bytes after the last IE", pos)
    return Envelope(kind, procedure, criticality, tuple(ies))


def build(kind: int, procedure: int, criticality: int, ies: list[tuple[int, int, bytes]]) -> bytes:
    """The inverse of :func:`parse` (contents of 16K or more are written in fragments)."""
    parts = [b"\x00", len(ies).to_bytes(2, "big")]
    for ie_id, crit, v in ies:
        parts.append(ie_id.to_bytes(2, "big") + bytes((crit << 6,)))
        parts.append(length_prefixed(v))
    head = bytes((kind << 5, procedure, criticality << 6))
    return head + length_prefixed(b"".join(parts))


def request_id_ie(requestor: int, instance: int) -> bytes:
    return bytes((0,)) + requestor.to_bytes(2, "big") + instance.to_bytes(2, "big")


def octet_string(ie_value: bytes) -> bytes:
    """The contents of an IE whose type is an unconstrained OCTET STRING (e.g. the indication
    header and message): its own length determinant, then the octets."""
    v, end = _read(ie_value, 0)
    if end != len(ie_value):
        raise EnvelopeError("bytes after the OCTET STRING", end)
    return v


# --- RIC indication: the gNB's encode and the xApps' decode ----------------------------------


def encode_ric_indication(
    requestor_id: int,
    instance_id: int,
    ran_function_id: int,
    action_id: int,
    header: bytes,
    message: bytes,
    sn: int | None = None,
    insert: bool = False,
) -> bytes:
    """``e2ap.encode_e2ap(RicIndication(...))`` (IE order and criticalities as the generic
    codec writes them; no call process ID). ``Unsupported`` for values out of range."""
    if not (0 <= requestor_id <= 65535 and 0 <= instance_id <= 65535):
        raise Unsupported("RIC request ID")
    if not 0 <= ran_function_id <= 4095 or not 0 <= action_id <= 255:
        raise Unsupported("RAN function / action ID")
    ies = [
        (IE_RIC_REQUEST_ID, REJECT, request_id_ie(requestor_id, instance_id)),
        (IE_RAN_FUNCTION_ID, REJECT, ran_function_id.to_bytes(2, "big")),
        (IE_RIC_ACTION_ID, REJECT, bytes((action_id,))),
    ]
    if sn is not None:
        if not 0 <= sn <= 65535:
            raise Unsupported("RICindicationSN")
        ies.append((IE_RIC_INDICATION_SN, REJECT, sn.to_bytes(2, "big")))
    # RICindicationType ENUMERATED {report, insert, ...}: ext bit 0, one value bit, padding
    ies.append((IE_RIC_INDICATION_TYPE, REJECT, b"\x40" if insert else b"\x00"))
    ies.append((IE_RIC_INDICATION_HEADER, REJECT, length_prefixed(header)))
    ies.append((IE_RIC_INDICATION_MESSAGE, REJECT, length_prefixed(message)))
    return build(INITIATING, e2ap.PROC_RIC_INDICATION, IGNORE, ies)


class _Fallback(Exception):
    """The indication uses something the fast decode does not handle."""


_MANDATORY = (
    IE_RIC_REQUEST_ID,
    IE_RAN_FUNCTION_ID,
    IE_RIC_ACTION_ID,
    IE_RIC_INDICATION_TYPE,
    IE_RIC_INDICATION_HEADER,
    IE_RIC_INDICATION_MESSAGE,
)


def _fixed_uint(content: bytes, nbytes: int, limit: int) -> int:
    if len(content) != nbytes:
        raise _Fallback
    v = int.from_bytes(content, "big")
    if v > limit:
        raise _Fallback
    return v


def _fast_ric_indication(data: bytes) -> e2ap.RicIndication:
    e = parse(data)
    if e.kind != INITIATING or e.procedure != e2ap.PROC_RIC_INDICATION:
        raise _Fallback
    found: dict[int, bytes] = {}
    order: list[tuple[int, str]] = []
    for ie_id, ie_crit, value in e.ies:
        if ie_crit > 2:
            raise _Fallback
        if ie_id not in found:  # a repeated IE: the first one counts
            found[ie_id] = value
            order.append((ie_id, CRITICALITY[ie_crit]))
    for mandatory in _MANDATORY:
        if mandatory not in found:
            raise _Fallback
    rid = found[IE_RIC_REQUEST_ID]
    if len(rid) != 5 or rid[0] != 0:  # RICrequestID: ext bit 0 + padding, 2 x 2 octets
        raise _Fallback
    ind_type = found[IE_RIC_INDICATION_TYPE]
    if len(ind_type) != 1 or ind_type[0] & 0xBF:  # ext bit 0, one value bit, zero padding
        raise _Fallback
    sn = found.get(IE_RIC_INDICATION_SN)
    cpid = found.get(IE_RIC_CALL_PROCESS_ID)
    msg = e2ap.RicIndication(
        e2ap.RicRequestId(int.from_bytes(rid[1:3], "big"), int.from_bytes(rid[3:5], "big")),
        _fixed_uint(found[IE_RAN_FUNCTION_ID], 2, 4095),
        _fixed_uint(found[IE_RIC_ACTION_ID], 1, 255),
        octet_string(found[IE_RIC_INDICATION_HEADER]),
        octet_string(found[IE_RIC_INDICATION_MESSAGE]),
        "insert" if ind_type[0] & 0x40 else "report",
        _fixed_uint(sn, 2, 65535) if sn is not None else None,
        octet_string(cpid) if cpid is not None else None,
    )
    msg.wire = e2ap.WireDetails(CRITICALITY[e.criticality], tuple(order))
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
