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
UE's served rate. A message whose head has been sent is never dropped.

The served rate is the queue's dequeue rate within its current *busy period* (SEC'23 §5: "the
dequeuing rate over a sliding time window of 50 ms, discounting the idle periods when the
queue is empty"), measured as the authors' reference queue does (their Mahimahi link queue):
between departures, over the last 50 ms but at least the last 5 departures; the bytes after
the first departure over the time from the first to the last. A busy period is a run of
slots at whose end the queue holds data (it served some, or waited with data and got
nothing: that time counts); a slot that ends with the queue empty ends it and the
measurement starts again. With fewer than two departures in the busy period the rate is
unknown and nothing is dropped by bitrate: a queue that keeps draining is not congested,
whatever rate its sparse departures would suggest. The caller says which slots were busy.
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
    levels: int = MAX_LEVELS  # priority levels honoured (RC action 100 parameter 3)


# the served rate spans at least this many departures (slots that served bytes), however long
# ago within the busy period: a slow link still gets a measurement (the reference queue's rule)
MIN_DEPARTURES = 5


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
        self.window_us = round(self.cfg.window_ms * 1000)
        self.top_level = min(max(self.cfg.levels, 1), MAX_LEVELS) - 1
        self.droppers: dict[int, list[int | None]] = {}
        self.in_drop: dict[int, int] = {}
        self.clock = 0  # busy slots so far: the time base of the served rate
        # (busy slot, bytes) of each departure in the window of the current busy period
        self.departures: deque[tuple[int, int]] = deque()
        self.departed = 0  # their bytes
        self.arrivals: deque[tuple[int, int, int]] = deque()  # (t_us, stream, bytes)
        self.stats = DropperStats()
        # (t_us, stream, msg id, priority, share bit/s or -1, cause: 0 kept, 1 msg, 2 bitrate)
        self.decision_log: list[tuple[int, int, int, int, float, int]] | None = None

    # --- measurement -------------------------------------------------------------------
    def on_slot(self, served_bytes: int, busy: bool) -> None:
        """Called once per slot in which the queue held data or was served. ``busy``: the queue
        holds data at the slot's end (served or not); False ends the busy period."""
        if not busy:
            self.departures.clear()
            self.departed = 0
            return
        self.clock += 1
        if served_bytes <= 0:
            return  # waiting with data: the time counts, at the next departure
        deps = self.departures
        deps.append((self.clock, served_bytes))
        self.departed += served_bytes
        oldest = self.clock - self.window_slots
        while len(deps) > MIN_DEPARTURES and deps[0][0] < oldest:
            self.departed -= deps.popleft()[1]

    def on_waiting_slots(self, slots: int) -> None:
        """``slots`` slots in which the queue held data and had no opportunity (a gNB that
        learns of them at its next opportunity): as many ``on_slot(0, True)``."""
        self.clock += slots

    def served_bps(self) -> float | None:
        if self.rate_source is not None:
            return self.rate_source()
        deps = self.departures
        if len(deps) < 2:
            return None
        first_slot, first_bytes = deps[0]
        return (
            (self.departed - first_bytes) * 8.0 * 1e6 / ((deps[-1][0] - first_slot) * self.slot_us)
        )

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
