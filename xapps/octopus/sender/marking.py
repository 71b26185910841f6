"""Messages -> datagrams with the Octopus header (SEC'23 §4.2 "encoding dropping policies")."""

from __future__ import annotations

from dataclasses import dataclass

from octoric.contracts.octopus_header import HEADER_LEN, MAX_LEVELS, OctopusHeader


@dataclass(frozen=True)
class Role:
    """A message's dropping parameters. The default (all zero) disables adaptation (§4.2)."""

    priority: int = 0  # 0..7, higher = less important
    drop: bool = False  # a dropper message: newer than what it drops
    priority_threshold: int = 0  # drops older messages with priority >= this
    bitrate_threshold_kbps: int = 0  # dropped when the stream's share is below this; 0 = off

    def __post_init__(self) -> None:
        if not 0 <= self.priority < MAX_LEVELS or not 0 <= self.priority_threshold < MAX_LEVELS:
            raise ValueError("priority and priority threshold must be in 0..7")
        if not 0 <= self.bitrate_threshold_kbps < 2**32:
            raise ValueError("bitrate threshold must be in 0..2^32-1 kbit/s")


class MessageMarker:
    """One stream's message sequence space: ``datagrams(payload, role)`` gives the UDP
    payloads of one message (header + at most ``mtu - 16`` bytes of it each)."""

    def __init__(self, stream_id: int, mtu: int = 1200, first_msg_id: int = 0) -> None:
        if not 0 <= stream_id < 2**16:
            raise ValueError("stream id must be in 0..65535")
        if mtu <= HEADER_LEN:
            raise ValueError(f"mtu must exceed the {HEADER_LEN}-byte header")
        self.stream_id, self.mtu = stream_id, mtu
        self.msg_id = first_msg_id & 0xFFFFFFFF  # the last one used

    def datagrams(self, payload: bytes, role: Role = Role()) -> list[bytes]:
        self.msg_id = (self.msg_id + 1) & 0xFFFFFFFF
        room = self.mtu - HEADER_LEN
        chunks = [payload[i : i + room] for i in range(0, len(payload), room)] or [b""]
        out = []
        for i, chunk in enumerate(chunks):
            h = OctopusHeader(
                self.stream_id, self.msg_id, i == 0, i == len(chunks) - 1, role.priority,
                role.drop, role.priority_threshold, role.bitrate_threshold_kbps,
            )  # fmt: skip
            out.append(h.encode() + chunk)
        return out
