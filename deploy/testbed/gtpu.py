"""Downlink user-plane packets as a UPF sends them to a gNB's CU-UP on N3.

One G-PDU (3GPP TS 29.281 §5.1) with the PDU Session Container extension header
(TS 38.415 §5.5.2.1, DL PDU SESSION INFORMATION carrying the QoS flow identifier), around an
IPv4/UDP packet to the UE. Written here rather than taken from a packet library (scapy) because
the injector needs only this one encoding, on its hot path, and the 16-byte header is fixed.
"""

from __future__ import annotations

import struct

GTPU_PORT = 2152
G_PDU = 0xFF
# version 1, protocol type GTP, E (extension header present): S and PN unset, but with E set the
# 4 optional octets (sequence number, N-PDU number, next extension header type) are present
_FLAGS = 0x34
PDU_SESSION_CONTAINER = 0x85
_DL_PDU_SESSION_INFORMATION = 0
IPV4_HEADER_LEN = 20
UDP_HEADER_LEN = 8
GTPU_HEADER_LEN = 16


def _checksum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    total: int = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def ipv4_udp(src: bytes, dst: bytes, sport: int, dport: int, payload: bytes, ident: int) -> bytes:
    """An IPv4 packet (no options, DF, TTL 64) carrying one UDP datagram (checksum 0: none,
    as RFC 768 allows over IPv4). ``src``/``dst``: 4-byte addresses."""
    total = IPV4_HEADER_LEN + UDP_HEADER_LEN + len(payload)
    if total > 0xFFFF:
        raise ValueError(f"an IPv4 packet carries at most 65535 bytes, this one {total}")
    hdr = struct.pack("!BBHHHBBH4s4s", 0x45, 0, total, ident & 0xFFFF, 0x4000, 64, 17, 0, src, dst)
    hdr = hdr[:10] + struct.pack("!H", _checksum(hdr)) + hdr[12:]
    return hdr + struct.pack("!HHHH", sport, dport, UDP_HEADER_LEN + len(payload), 0) + payload


def g_pdu(teid: int, qfi: int, inner: bytes) -> bytes:
    """A G-PDU to tunnel ``teid`` whose PDU Session Container names QoS flow ``qfi``."""
    if not 0 <= teid <= 0xFFFFFFFF:
        raise ValueError(f"TEID {teid} is outside 0..2^32-1")
    if not 0 <= qfi <= 63:
        raise ValueError(f"QFI {qfi} is outside 0..63")
    # extension: length 1 (x 4 octets), PDU type in the high nibble, QFI, next type 0 (none)
    ext = struct.pack("!BBBB", 1, _DL_PDU_SESSION_INFORMATION << 4, qfi, 0)
    length = 4 + len(ext) + len(inner)  # the length counts what follows the mandatory 8 octets
    return struct.pack("!BBHIHBB", _FLAGS, G_PDU, length, teid, 0, 0, PDU_SESSION_CONTAINER) + (
        ext + inner
    )


def parse_g_pdu(data: bytes) -> tuple[int, int | None, bytes]:
    """(TEID, QFI or None, inner packet) of a G-PDU; ValueError if it is not one. For tests and
    for reading a capture."""
    if len(data) < 8:
        raise ValueError("shorter than a GTP-U header")
    flags, mtype, length, teid = struct.unpack("!BBHI", data[:8])
    if flags >> 5 != 1 or not flags & 0x10:
        raise ValueError(f"not GTPv1-U (flags {flags:#04x})")
    if mtype != G_PDU:
        raise ValueError(f"not a G-PDU (message type {mtype})")
    if len(data) != 8 + length:
        raise ValueError(f"length field {length} does not match {len(data) - 8} bytes")
    pos, qfi = 8, None
    if flags & 0x07:
        nxt = data[pos + 3]
        pos += 4
        while nxt:
            n = data[pos] * 4
            if n == 0 or pos + n > len(data):
                raise ValueError("bad extension header length")
            if nxt == PDU_SESSION_CONTAINER:
                qfi = data[pos + 2] & 0x3F
            nxt = data[pos + n - 1]
            pos += n
    return teid, qfi, data[pos:]
