"""MORC (Mangiante et al., "Congestion Control for Future Mobile Networks", CHANTS 2018): PCC
Allegro's online learning (Dong et al., NSDI 2015) with a mobile-network utility, on the
packet-level transport as a paced, rate-based sender.

- Utility of a monitor interval (MI): u = T (1 - p_L - p_RTT), T the received throughput in
  Mbit/s, p_L = 10 L (L the share of the MI's packets not acknowledged), p_RTT = 5e-4 x
  |RTT - RTT_target| with RTT_target = RTT_min + 60 ms (RTT the mean of the MI's samples, ms).
- T is the MI's acknowledged bytes over the time its ACKs took to arrive (at least the MI's
  own duration), so a queue that spreads them out shows as the rate the link delivered.
- MIs last one smoothed RTT (MORC; Allegro drew 1.7-2.2 RTTs). An MI's result is known once a
  packet sent after it has been acknowledged and RACK's reordering window (min RTT / 4) has
  passed; what is unacknowledged then counts as lost. MIs run back to back: while the next
  decision waits for results, the sender keeps its rate (those MIs are not evaluated).
- Slow start: the rate doubles every MI while the utility grows (losses allowed); at the first
  decrease the rate falls back to the best MI's and decision making starts. The next doubling
  waits for the last one's result (MIs between run at the best rate so far): with one-RTT MIs
  and results an RTT late, doubling blindly would reach 8x the capacity before the first
  decrease is seen, and its queue would take seconds to drain.
- Decision making (Allegro): two pairs of MIs at r (1 + eps) and r (1 - eps), each pair in a
  random order; if both pairs favour one direction the rate moves eps that way, otherwise eps
  grows by eps_min (1 %) up to eps_max (5 %) and the trial repeats.
- Rate adjusting (Allegro): after a decision the rate moves r_n = r_{n-1} (1 + n eps_min dir)
  per MI while the utility keeps growing; at the first decrease it returns to the previous
  rate and decides again.
- MORC's shortcuts, with our thresholds (the paper gives examples, not values): when the
  last MI's RTT was within 5 ms of RTT_min (buffers empty) the rate moves up without a trial;
  when its received rate was under half the sending rate or its RTT over RTT_target + 60 ms
  (queues full) it moves down without one, and keeps moving down while they stay full even
  when an MI's utility is worse than the last (the paper: with queues full "sending at
  higher rates is unlikely to improve utility"; Allegro's return to the previous, higher
  rate kept the model at 3x the link, losing 70 % of its packets, for whole runs: at that
  loss every MI's utility is noise around -6 T).
- No congestion window (PCC is rate-based): what is in flight is bounded only by the pace.
  Before the first RTT sample the rate is 10 packets per 100 ms.
"""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass

from octoric.sim.transport import (
    RateSample,
    TransportSender,
    WindowContext,
    WindowScheme,
    register_window_scheme,
)

EPS_MIN, EPS_MAX = 0.01, 0.05
TARGET_MARGIN_MS = 60.0
EMPTY_QUEUE_MS = 5.0  # RTT within this of RTT_min: buffers empty, probe no lower
FULL_QUEUE_MS = 60.0  # RTT beyond RTT_target + this: queues full, probe no higher
LOW_DELIVERY = 0.5  # received under half the sending rate: probe no higher
NO_WINDOW = 1 << 40
SLOW_START, DECIDE, ADJUST = "slow_start", "decide", "adjust"


def utility(throughput_mbps: float, loss: float, rtt_ms: float, rtt_min_ms: float) -> float:
    """MORC's utility u = T (1 - 10 L - 5e-4 |RTT - (RTT_min + 60)|) (CHANTS'18 §3.1)."""
    return throughput_mbps * (1 - 10 * loss - 5e-4 * abs(rtt_ms - (rtt_min_ms + TARGET_MARGIN_MS)))


@dataclass
class _Mi:
    rate_bps: float
    role: str  # "ss" | "trial+" | "trial-" | "adjust" | "filler"
    start_us: int
    first_seq: int
    end_us: int = 0
    last_seq: int = -1  # -1 while sending
    acked: int = 0
    acked_bytes: int = 0
    rtt_sum_us: int = 0
    first_ack_us: int = -1
    last_ack_us: int = -1
    done_at: int | None = None  # when its result is final (RACK window after a later ACK)
    utility: float = 0.0
    recv_bps: float = 0.0
    mean_rtt_ms: float = 0.0


class Morc(WindowScheme):
    """MORC (Mangiante et al., CHANTS 2018): PCC Allegro's monitor intervals and online learning
    (slow start, randomized trials at r (1 +- eps), eps 1-5 %, rate adjusting) with the utility
    u = T (1 - 10 L - 5e-4 |RTT - (RTT_min + 60 ms)|), one-RTT monitor intervals, and its
    shortcuts (no downward trial when the RTT is at RTT_min, no upward one when queues are full).
    A paced, rate-based sender on the packet-level transport."""

    name = "morc"

    def __init__(self, ctx: WindowContext) -> None:
        super().__init__(ctx)
        self.mss = ctx.mss
        self.rng = random.Random(ctx.seed)
        self.rate = 10 * self.mss * 8 / 0.1
        self.state = SLOW_START
        self.eps = EPS_MIN
        self.mis: deque[_Mi] = deque()  # sent, result not yet used
        self.plan: deque[tuple[float, str]] = deque()  # MIs still to run: (rate, role)
        self.current: _Mi | None = None
        self.prev_ss: _Mi | None = None  # slow start: the best MI so far (its rate is self.rate)
        self.trials: list[_Mi] = []
        self.adjust_n = 0
        self.adjust_dir = 0
        self.adjust_prev: _Mi | None = None
        self.min_rtt_ms = 0.0
        self.plan.append((self.rate, "ss"))

    # --- transport interface -------------------------------------------------------------
    def cwnd(self) -> int:
        return NO_WINDOW

    def pacing_bps(self) -> float | None:
        return self.current.rate_bps if self.current is not None else self.rate

    def sending_bps(self, sender: TransportSender) -> float | None:
        return self.rate

    def on_ack(self, now_us: int, rs: RateSample, sender: TransportSender) -> None:
        self.min_rtt_ms = sender.min_rtt_us / 1000.0
        for mi in self.mis:
            if mi.first_seq <= rs.seq and (mi.last_seq < 0 or rs.seq <= mi.last_seq):
                mi.acked += 1
                mi.acked_bytes += rs.acked
                mi.rtt_sum_us += rs.rtt_us
                if mi.first_ack_us < 0:
                    mi.first_ack_us = now_us
                mi.last_ack_us = now_us
                break
        reo_us = max(sender.min_rtt_us // 4, 1000)
        for mi in self.mis:
            if mi.last_seq >= 0 and mi.done_at is None and rs.seq > mi.last_seq:
                mi.done_at = now_us + reo_us
        self._close_mi(now_us, sender)
        self._collect(now_us, sender)

    def on_rto(self, now_us: int, sender: TransportSender) -> None:
        # everything in flight is lost: the MIs waiting for it are final now
        for mi in self.mis:
            if mi.last_seq >= 0 and mi.done_at is None:
                mi.done_at = now_us
        self._close_mi(now_us, sender)
        self._collect(now_us, sender)

    # --- monitor intervals ---------------------------------------------------------------
    def _close_mi(self, now_us: int, sender: TransportSender) -> None:
        cur = self.current
        if cur is not None and now_us < cur.end_us:
            return
        if cur is not None:
            cur.last_seq = sender.next_seq - 1
            if cur.last_seq < cur.first_seq:  # sent nothing: not an MI
                self.mis.remove(cur)
        srtt = sender.srtt_us or 100_000
        if self.plan:
            rate, role = self.plan.popleft()
        else:
            role = self._idle_role()
            rate = self.rate
        self.current = _Mi(rate, role, now_us, sender.next_seq, end_us=now_us + srtt)
        self.mis.append(self.current)

    def _idle_role(self) -> str:
        """An MI nothing was planned for: at the current rate, not evaluated."""
        return "filler"

    def _collect(self, now_us: int, sender: TransportSender) -> None:
        while self.mis and self.mis[0].done_at is not None and now_us >= self.mis[0].done_at:
            mi = self.mis.popleft()
            self._evaluate(mi, sender)
            self._use(mi, sender)

    def _evaluate(self, mi: _Mi, sender: TransportSender) -> None:
        sent = mi.last_seq - mi.first_seq + 1
        # received throughput: over the time its ACKs took to come back, at least the time
        # it was sent over (a queue spreads them out; a fast link does not compress them)
        span = mi.last_ack_us - mi.first_ack_us if mi.acked > 1 else 0
        dur_s = max(span, mi.end_us - mi.start_us, 1) / 1e6
        mi.recv_bps = mi.acked_bytes * 8 / dur_s
        loss = 1 - mi.acked / sent if sent > 0 else 0.0
        mi.mean_rtt_ms = mi.rtt_sum_us / mi.acked / 1000.0 if mi.acked else 10 * self.min_rtt_ms
        mi.utility = utility(mi.recv_bps / 1e6, loss, mi.mean_rtt_ms, self.min_rtt_ms)

    # --- online learning (Allegro) ---------------------------------------------------------
    def _use(self, mi: _Mi, sender: TransportSender) -> None:
        if mi.role == "ss" and self.state == SLOW_START:
            if self.prev_ss is None or mi.utility >= self.prev_ss.utility:
                self.prev_ss = mi
                self.rate = mi.rate_bps
                self.plan.append((2 * self.rate, "ss"))
                return
            self._decide(mi)  # from the best MI's rate, which self.rate still is
        elif mi.role.startswith("trial") and self.state == DECIDE:
            self.trials.append(mi)
            if len(self.trials) == 4:
                self._judge_trials()
        elif mi.role == "adjust" and self.state == ADJUST:
            prev = self.adjust_prev
            # MORC: with queues full a higher rate is not worth trying, so going down, a
            # worse utility does not send the rate back up while the queues stay full
            down_full = self.adjust_dir < 0 and self._queues_full(mi)
            if prev is not None and mi.utility < prev.utility and not down_full:
                self.rate = prev.rate_bps
                self._decide(mi)
                return
            self.adjust_prev = mi
            self.adjust_n += 1
            self.rate = mi.rate_bps * (1 + self.adjust_n * EPS_MIN * self.adjust_dir)
            self.plan.append((self.rate, "adjust"))

    def _decide(self, last: _Mi) -> None:
        """Decision making, or one of MORC's shortcuts when the last MI says where to go."""
        self.plan.clear()
        self.trials = []
        if last.mean_rtt_ms <= self.min_rtt_ms + EMPTY_QUEUE_MS:
            self._start_adjust(+1)
            return
        if self._queues_full(last):
            self._start_adjust(-1)
            return
        self.state = DECIDE
        self._plan_trials()

    def _queues_full(self, mi: _Mi) -> bool:
        """MORC's "queues quite full": the MI's received rate under half its sending rate,
        or its RTT beyond RTT_target + ``FULL_QUEUE_MS``."""
        full = self.min_rtt_ms + TARGET_MARGIN_MS + FULL_QUEUE_MS
        return mi.recv_bps < LOW_DELIVERY * mi.rate_bps or mi.mean_rtt_ms > full

    def _plan_trials(self) -> None:
        """Two pairs of MIs at r (1 + eps) and r (1 - eps), each pair in a random order."""
        for _ in range(2):
            pair = [(self.rate * (1 + self.eps), "trial+"), (self.rate * (1 - self.eps), "trial-")]
            self.rng.shuffle(pair)
            self.plan.extend(pair)

    def _judge_trials(self) -> None:
        ups = [m.utility for m in self.trials if m.role == "trial+"]
        downs = [m.utility for m in self.trials if m.role == "trial-"]
        pairs = list(zip(ups, downs, strict=True))
        if all(u > d for u, d in pairs):
            self.eps = EPS_MIN
            self._start_adjust(+1)
        elif all(d > u for u, d in pairs):
            self.eps = EPS_MIN
            self._start_adjust(-1)
        else:
            self.eps = min(self.eps + EPS_MIN, EPS_MAX)
            self.trials = []
            self._plan_trials()

    def _start_adjust(self, direction: int) -> None:
        self.state = ADJUST
        self.adjust_dir = direction
        self.adjust_n = 1
        self.adjust_prev = None
        self.rate = self.rate * (1 + EPS_MIN * direction)
        self.plan.append((self.rate, "adjust"))


register_window_scheme("morc")(Morc)
