"""The Octopus header (docs/octopus-header.md): 16 bytes at the start of the UDP payload.

Big-endian. Layout::

    0  u16 magic 0x4F43 ("OC")     2  u8 version (1)        3  u8 flags F|L|D|00000
    4  u16 stream id                6  u8 msg priority 0..7   7  u8 priority threshold 0..7
    8  u32 message id               12 u32 bitrate threshold (kbit/s, 0 = off)
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

MAGIC = 0x4F43
VERSION = 1
HEADER_LEN = 16
MAX_LEVELS = 8
FLAG_FIRST = 0x80
FLAG_LAST = 0x40
FLAG_DROP = 0x20
_RESERVED_FLAGS = 0x1F
_FMT = struct.Struct(">HBBHBBII")


class OctopusHeaderError(ValueError):
    """A payload does not start with a valid Octopus header."""


@dataclass(frozen=True, slots=True)
class OctopusHeader:
    stream_id: int
    msg_id: int
    first: bool
    last: bool
    priority: int = 0
    drop: bool = False
    priority_threshold: int = 0
    bitrate_threshold_kbps: int = 0

    def encode(self) -> bytes:
        if not 0 <= self.priority < MAX_LEVELS or not 0 <= self.priority_threshold < MAX_LEVELS:
            raise OctopusHeaderError("priority and priority threshold must be in 0..7")
        flags = (FLAG_FIRST if self.first else 0) | (FLAG_LAST if self.last else 0)
        flags |= FLAG_DROP if self.drop else 0
        return _FMT.pack(
            MAGIC, VERSION, flags, self.stream_id, self.priority, self.priority_threshold,
            self.msg_id & 0xFFFFFFFF, self.bitrate_threshold_kbps,
        )  # fmt: skip


@dataclass
class HeaderCounters:
    parsed: int = 0
    malformed: int = 0
    last_error: str = ""


def parse(payload: bytes, counters: HeaderCounters | None = None) -> OctopusHeader:
    """Parse the header at the start of ``payload``; raise OctopusHeaderError (and count it)."""
    try:
        h = _parse(payload)
    except OctopusHeaderError as e:
        if counters is not None:
            counters.malformed += 1
            counters.last_error = str(e)
        raise
    if counters is not None:
        counters.parsed += 1
    return h


def _parse(payload: bytes) -> OctopusHeader:
    if len(payload) < HEADER_LEN:
        raise OctopusHeaderError(f"octopus header: {len(payload)} bytes, need {HEADER_LEN}")
    magic, ver, flags, sid, prio, thr, mid, br = _FMT.unpack_from(payload)
    if magic != MAGIC:
        raise OctopusHeaderError(f"octopus header: bad magic 0x{magic:04x} (want 0x{MAGIC:04x})")
    if ver != VERSION:
        raise OctopusHeaderError(f"octopus header: unsupported version {ver} (want {VERSION})")
    if flags & _RESERVED_FLAGS:
        raise OctopusHeaderError(f"octopus header: reserved flag bits set (0x{flags:02x})")
    if prio >= MAX_LEVELS:
        raise OctopusHeaderError(f"octopus header: priority {prio} > 7")
    if thr >= MAX_LEVELS:
        raise OctopusHeaderError(f"octopus header: priority threshold {thr} > 7")
    return OctopusHeader(
        sid, mid, bool(flags & FLAG_FIRST), bool(flags & FLAG_LAST), prio,
        bool(flags & FLAG_DROP), thr, br,
    )  # fmt: skip


def serial_lt(a: int, b: int) -> bool:
    """a < b in 32-bit serial-number arithmetic (RFC 1982), so message ids may wrap."""
    return a != b and ((b - a) & 0xFFFFFFFF) < 0x80000000
