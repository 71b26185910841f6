"""The Octopus transport's send buffer (SEC'23 §4.2): datagrams wait here until the pacer
may send; Algorithm 1 runs on them exactly as in the gNB, drop-by-bitrate against the
transport's bandwidth estimate instead of the gNB's served rate."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from octoric.contracts.octopus_dropper import DropperConfig, DropperStats, OctopusDropper
from octoric.contracts.octopus_header import (
    HeaderCounters,
    OctopusHeader,
    OctopusHeaderError,
    parse,
)


@dataclass
class _Pkt:
    data: bytes
    hdr: OctopusHeader | None
    size: int


@dataclass
class BufferStats:
    queued: int = 0
    sent: int = 0
    dropped: int = 0
    header: HeaderCounters = field(default_factory=HeaderCounters)


class TransportBuffer:
    """``push`` what the application sends, ``pop`` when the pacer may send one datagram,
    ``set_estimate`` whenever congestion control updates its bandwidth estimate."""

    def __init__(self, cfg: DropperConfig | None = None) -> None:
        self._estimate: float | None = None
        self.dropper = OctopusDropper(1000, cfg, rate_source=lambda: self._estimate)
        self._q: deque[_Pkt] = deque()
        self.bytes = 0
        self.stats = BufferStats()

    def set_estimate(self, bps: float | None) -> None:
        self._estimate = bps

    def push(self, datagram: bytes, now_us: int) -> None:
        """Queue one datagram; one without a valid header is sent as is, never dropped."""
        try:
            hdr: OctopusHeader | None = parse(datagram, self.stats.header)
        except OctopusHeaderError:
            hdr = None
        p = _Pkt(datagram, hdr, len(datagram))
        self._q.append(p)
        self.bytes += p.size
        self.stats.queued += 1
        self.dropper.on_enqueue(p, now_us)

    def pop(self, now_us: int) -> bytes | None:
        """The next datagram to send (whole messages dropped on the way), None when empty."""
        while self._q:
            p = self._q.popleft()
            self.bytes -= p.size
            if self.dropper.should_drop(p, now_us):
                self.stats.dropped += 1
                continue
            self.stats.sent += 1
            return p.data
        return None

    def __len__(self) -> int:
        return len(self._q)

    @property
    def dropper_stats(self) -> DropperStats:
        return self.dropper.stats
