"""Per-UE DL RLC queue: packets with metadata and arrival times, optional Octopus dropper, or
PDrop instead (SEC'23 §7.2's baseline, after Bhattacharjee et al.'s MPEG frame discard: when the
buffer is full and a message of priority p arrives, the queued messages of lower priority, a
larger priority value, are dropped instead of it; whole messages: their later packets too).

A backlogged (bulk) flow is a byte counter, not packets: it always has data.
"""

from __future__ import annotations

from collections import deque

from octoric.contracts.octopus_header import HeaderCounters, OctopusHeaderError, parse
from octoric.sim.dropper import OctopusDropper
from octoric.sim.packets import Packet


class DlQueue:
    __slots__ = (
        "arrived_bytes", "backlogged", "bytes", "delivered", "dropped", "dropper", "head_sent",
        "header_counters", "limit_bytes", "pdrop", "pdropped_msgs", "pkts", "tail_dropped",
    )  # fmt: skip

    def __init__(self, limit_bytes: int = 4_000_000, dropper: OctopusDropper | None = None,
                 pdrop: bool = False) -> None:  # fmt: skip
        self.pkts: deque[Packet] = deque()
        self.bytes = 0  # bytes still to send (head's sent part excluded)
        self.head_sent = 0
        self.limit_bytes = limit_bytes
        self.dropper = dropper
        self.backlogged = False
        self.arrived_bytes = 0  # since the last measurement granule
        self.delivered: list[Packet] = []  # completed in the current slot (drained by engine)
        self.dropped: list[Packet] = []  # dropped by the dropper (drained by engine)
        self.tail_dropped: list[Packet] = []
        self.header_counters = HeaderCounters()
        self.pdrop = pdrop
        self.pdropped_msgs: set[tuple[int, int]] = set()  # (stream, msg) PDrop dropped

    def enqueue(self, pkt: Packet, now_us: int) -> None:
        h = pkt.hdr
        if self.pdrop and h is not None:
            key = (h.stream_id, h.msg_id)
            if key in self.pdropped_msgs:  # the rest of a message PDrop dropped
                self.dropped.append(pkt)
                if h.last:
                    self.pdropped_msgs.discard(key)
                return
            if self.bytes + pkt.size > self.limit_bytes:
                self._pdrop_below(h.priority)
        if self.bytes + pkt.size > self.limit_bytes:
            self.tail_dropped.append(pkt)
            return
        pkt.arrive_us = now_us
        self.pkts.append(pkt)
        self.bytes += pkt.size
        self.arrived_bytes += pkt.size
        if self.dropper is not None:
            self.dropper.on_enqueue(pkt, now_us)

    def _pdrop_below(self, priority: int) -> None:
        """PDrop: drop every queued message of a lower priority (a larger value) than the
        arriving one's, whole, except the message in transmission."""
        keep: deque[Packet] = deque()
        head = self.pkts[0].hdr if self.pkts and self.head_sent > 0 else None
        in_tx = (head.stream_id, head.msg_id) if head is not None else None
        for p in self.pkts:
            h = p.hdr
            if h is None or h.priority <= priority or (h.stream_id, h.msg_id) == in_tx:
                keep.append(p)
                continue
            self.bytes -= p.size
            self.dropped.append(p)
            if not h.last:
                self.pdropped_msgs.add((h.stream_id, h.msg_id))
        self.pkts = keep
        if len(self.pdropped_msgs) > 4096:  # messages whose last packet never came
            self.pdropped_msgs.clear()

    def enqueue_payload(self, pkt: Packet, payload: bytes, now_us: int) -> bool:
        """Enqueue a packet whose Octopus header is still raw bytes (the live path).

        A malformed header is counted and the packet is forwarded without metadata (the
        dropper leaves it alone), as a gNB must not lose user data over a bad header."""
        try:
            pkt.hdr = parse(payload, self.header_counters)
        except OctopusHeaderError:
            pkt.hdr = None
        self.enqueue(pkt, now_us)
        return pkt.hdr is not None

    def dequeue(self, budget: int, now_us: int) -> int:
        """Send up to ``budget`` bytes; completed packets go to ``self.delivered``."""
        if self.backlogged:
            return budget
        used = 0
        pkts = self.pkts
        dropper = self.dropper
        while budget > 0 and pkts:
            p = pkts[0]
            if self.head_sent == 0 and dropper is not None and dropper.should_drop(p, now_us):
                pkts.popleft()
                self.bytes -= p.size
                self.dropped.append(p)
                continue
            rem = p.size - self.head_sent
            if rem <= budget:
                budget -= rem
                used += rem
                pkts.popleft()
                self.bytes -= rem
                self.head_sent = 0
                self.delivered.append(p)
            else:
                self.head_sent += budget
                self.bytes -= budget
                used += budget
                budget = 0
        if dropper is not None:
            # called only for a slot that began with data: it stays busy while data is left;
            # a slot that ends with the queue empty ends the busy period (SEC'23 §5 discounts
            # the idle time; the authors' queue restarts its measurement then, as the srsRAN
            # patch does)
            dropper.on_slot(used, bool(pkts))
        return used
