"""The one per-packet object of the simulator (kept small: __slots__, no dicts)."""

from __future__ import annotations

from typing import Protocol

from octoric.contracts.octopus_header import OctopusHeader


class Packet:
    """A UDP datagram of a flow. ``msg`` indexes the flow's message table (-1: none)."""

    __slots__ = ("arrive_us", "flow", "hdr", "msg", "send_us", "seq", "size")

    def __init__(
        self, flow: int, seq: int, size: int, send_us: int, msg: int = -1,
        hdr: OctopusHeader | None = None,
    ) -> None:  # fmt: skip
        self.flow = flow
        self.seq = seq
        self.size = size
        self.send_us = send_us
        self.arrive_us = 0
        self.msg = msg
        self.hdr = hdr


class PacketSink(Protocol):
    """Where the engine hands a flow's delivered packets (``t_us``: the end of the slot, or of
    the HARQ retransmission, that completed it)."""

    def on_packet(self, p: Packet, t_us: int) -> None: ...
