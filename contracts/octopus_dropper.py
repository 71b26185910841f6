"""The Octopus dropper (SEC'23 Algorithm 1): what a gNB queue (the simulator's ``sim/rlc.py``)
and a sender's transport buffer (``xapps/octopus/sender``) run, with the same decisions.
It is a contract: liboctopus (``srsran_agent/liboctopus``, the gNB's C++ version) must decide
exactly as this module does (``tests/liboctopus`` replays recorded traces through both).
Standard library only; a packet is anything with ``hdr`` (an OctopusHeader or None) and
``size``.

drop-by-message: per stream, a table indexed by priority threshold (0..7) holds the id of the
latest dropper message (updated when its tail packet is enqueued). When the head packet of
a message is dequeued, the message is dropped if a newer dropper exists at any threshold
<= its priority, or if its bitrate threshold exceeds the stream's max-min fair share of the
UE's served rate. The served rate is measured over the last 50 ms of *busy* time: slots in
which the queue held data (it served some, or waited with data and got nothing), so only the
time the queue is empty is discounted (SEC'23 §5; the caller says which slots were busy). A
message whose head has been sent is never dropped.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from octoric.contracts.octopus_header import MAX_LEVELS, OctopusHeader, serial_lt


class Packet(Protocol):
    hdr: OctopusHeader | None
    size: int


@dataclass
class DropperStats:
    dropped_packets: int = 0
    dropped_bytes: int = 0
    dropped_msgs_by_msg: int = 0
    dropped_msgs_by_bitrate: int = 0
    decisions: int = 0


@dataclass
class DropperConfig:
    window_ms: float = 50.0
    drop_by_msg: bool = True
    drop_by_bitrate: bool = True
    min_busy_ms: float = 5.0  # below this much busy time the served rate is unknown: no drops
    levels: int = MAX_LEVELS  # priority levels honoured (RC action 100 parameter 3)


def max_min_share(total: float, demands: dict[int, float]) -> dict[int, float]:
    """Water-filling: each stream gets min(demand, equal share of what is left); streams in
    ascending (demand, stream id) order, the largest takes the rest."""
    out: dict[int, float] = {}
    left = total
    pending = sorted(demands.items(), key=lambda kv: (kv[1], kv[0]))
    n = len(pending)
    for i, (sid, d) in enumerate(pending):
        share = left / (n - i)
        give = min(d, share)
        out[sid] = give if i < n - 1 else share  # the largest stream takes the rest
        left -= give
    return out


class OctopusDropper:
    def __init__(
        self,
        slot_us: int,
        cfg: DropperConfig | None = None,
        rate_source: Callable[[], float | None] | None = None,
    ) -> None:
        """``rate_source``: where drop-by-bitrate reads the available rate (bit/s, None while
        unknown) instead of the served-rate measurement, e.g. a sender's congestion-control
        estimate in its transport buffer (SEC'23 §4.2)."""
        self.cfg = cfg or DropperConfig()
        self.rate_source = rate_source
        self.slot_us = slot_us
        self.window_slots = max(1, round(self.cfg.window_ms * 1000 / slot_us))
        self.min_busy_slots = max(1, round(self.cfg.min_busy_ms * 1000 / slot_us))
        self.window_us = round(self.cfg.window_ms * 1000)
        self.top_level = min(max(self.cfg.levels, 1), MAX_LEVELS) - 1
        self.droppers: dict[int, list[int | None]] = {}
        self.in_drop: dict[int, int] = {}
        self.busy: deque[int] = deque()  # bytes served in each of the last busy slots
        self.busy_sum = 0
        self.arrivals: deque[tuple[int, int, int]] = deque()  # (t_us, stream, bytes)
        self.stats = DropperStats()
        # (t_us, stream, msg id, priority, share bit/s or -1, cause: 0 kept, 1 msg, 2 bitrate)
        self.decision_log: list[tuple[int, int, int, int, float, int]] | None = None

    # --- measurement -------------------------------------------------------------------
    def on_slot(self, served_bytes: int, saturated: bool) -> None:
        """Called once per slot in which the queue was served (or held data)."""
        if not saturated:
            return
        self.busy.append(served_bytes)
        self.busy_sum += served_bytes
        if len(self.busy) > self.window_slots:
            self.busy_sum -= self.busy.popleft()

    def served_bps(self) -> float | None:
        if self.rate_source is not None:
            return self.rate_source()
        n = len(self.busy)
        if n < self.min_busy_slots:
            return None
        return self.busy_sum * 8.0 * 1e6 / (n * self.slot_us)

    def stream_share_bps(self, sid: int, now_us: int) -> float | None:
        bw = self.served_bps()
        if bw is None:
            return None
        arr = self.arrivals
        self._expire(now_us)
        demand: dict[int, float] = {}
        for _, s, b in arr:
            demand[s] = demand.get(s, 0.0) + b
        if len(demand) <= 1:
            return bw
        k = 8.0 * 1e6 / self.window_us
        shares = max_min_share(bw, {s: b * k for s, b in demand.items()})
        return shares.get(sid, bw)

    def _expire(self, now_us: int) -> None:
        arr = self.arrivals
        cutoff = now_us - self.window_us
        while arr and arr[0][0] < cutoff:
            arr.popleft()

    # --- Algorithm 1 -------------------------------------------------------------------
    def on_enqueue(self, pkt: Packet, now_us: int) -> None:
        h = pkt.hdr
        if h is None:
            return
        sid = h.stream_id
        if self.cfg.drop_by_bitrate:
            self._expire(now_us)  # bounded memory; time only grows, so no decision changes
            self.arrivals.append((now_us, sid, pkt.size))
        if h.drop and h.last and self.cfg.drop_by_msg:
            table = self.droppers.get(sid)
            if table is None:
                table = self.droppers[sid] = [None] * MAX_LEVELS
            table[min(h.priority_threshold, self.top_level)] = h.msg_id

    def should_drop(self, pkt: Packet, now_us: int) -> bool:
        """Called for a packet at the queue head before any of its bytes are sent."""
        h = pkt.hdr
        if h is None:
            return False
        sid, mid = h.stream_id, h.msg_id
        if h.first:
            self.stats.decisions += 1
            drop = False
            by_bitrate = False
            if self.cfg.drop_by_msg:
                table = self.droppers.get(sid)
                if table is not None:
                    for thr in range(min(h.priority, self.top_level) + 1):
                        d = table[thr]
                        if d is not None and serial_lt(mid, d):
                            drop = True
                            break
            bw = None
            if not drop and self.cfg.drop_by_bitrate and h.bitrate_threshold_kbps > 0:
                bw = self.stream_share_bps(sid, now_us)
                if bw is not None and h.bitrate_threshold_kbps * 1000.0 > bw:
                    drop = by_bitrate = True
            if self.decision_log is not None:
                cause = (2 if by_bitrate else 1) if drop else 0
                bwv = -1.0 if bw is None else bw
                self.decision_log.append((now_us, sid, mid, h.priority, bwv, cause))
            if drop:
                self.in_drop[sid] = mid
                if by_bitrate:
                    self.stats.dropped_msgs_by_bitrate += 1
                else:
                    self.stats.dropped_msgs_by_msg += 1
        if self.in_drop.get(sid) == mid:
            self.stats.dropped_packets += 1
            self.stats.dropped_bytes += pkt.size
            return True
        return False
