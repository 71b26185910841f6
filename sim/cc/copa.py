"""Copa (Arun and Balakrishnan, "Copa: Practical Delay-Based Congestion Control for the
Internet", NSDI 2018), default mode, on the packet-level transport.

- Target rate lambda_t = 1 / (delta x d_q) packets/s, d_q = RTTstanding - RTTmin: RTTstanding
  is the smallest RTT of the last srtt / 2, RTTmin the smallest of the last 10 s; delta = 0.5.
- Per ACK: the current rate lambda = cwnd / RTTstanding; cwnd += v / (delta x cwnd) when
  lambda <= lambda_t, else cwnd -= v / (delta x cwnd) (packets).
- Velocity v: 1; once the window has moved the same way for three RTTs in a row it doubles
  every RTT; a change of direction resets it to 1: at the once-per-RTT check, and at once when
  an ACK's decision goes against a velocity above 1 (as the reference Copa in mvfst does).
  Direction is not tracked while slow start grows the window (also as mvfst).
- Slow start: cwnd doubles every RTT until lambda first exceeds lambda_t.
- Pacing at 2 x cwnd / RTTstanding, as the paper's sender.
- Left out: the competitive mode (delta adapted against buffer-filling flows, §2.2) and the
  loss response of the paper's implementation (a loss does not change cwnd here).
"""

from __future__ import annotations

from collections import deque

from octoric.sim.transport import (
    RateSample,
    TransportSender,
    WindowContext,
    WindowScheme,
    register_window_scheme,
)

RTT_MIN_WINDOW_US = 10_000_000


class Copa(WindowScheme):
    """Copa as Arun and Balakrishnan (NSDI 2018), default mode: target rate 1 / (delta x d_q)
    with delta 0.5, d_q = RTTstanding (min over srtt/2) - RTTmin (min over 10 s), per-ACK window
    steps of v / (delta x cwnd) with velocity doubling after three RTTs in one direction, slow
    start until the target is first exceeded, pacing at 2 x cwnd / RTTstanding.

    A bulk transfer on the packet-level transport (``sim/transport.py``); no competitive mode."""

    name = "copa"

    def __init__(self, ctx: WindowContext) -> None:
        super().__init__(ctx)
        self.mss = ctx.mss
        self.delta = float(ctx.params.get("delta", 0.5))
        self.cwnd_p = float(ctx.params.get("initial_cwnd", 10))  # packets
        self.slow_start = True
        self.rtts: deque[tuple[int, int]] = deque()  # (time, rtt), increasing rtt from the front
        self.min_rtts: deque[tuple[int, int]] = deque()  # the same over 10 s
        self.rtt_standing = 0
        self.rtt_min = 0
        self.velocity = 1.0
        self.direction = 0  # +1 up, -1 down, 0 not yet
        self.same_direction_rtts = 0
        self.mark_us = 0  # start of the current RTT period
        self.mark_cwnd = self.cwnd_p
        self.srtt_us = 0

    def cwnd(self) -> int:
        return max(int(self.cwnd_p * self.mss), 2 * self.mss)

    def pacing_bps(self) -> float | None:
        if self.rtt_standing <= 0:
            return None
        return 2 * self.cwnd_p * self.mss * 8e6 / self.rtt_standing

    @staticmethod
    def _window_min(q: deque[tuple[int, int]], now: int, rtt: int, window: int) -> int:
        """Sliding-window minimum (a monotonic deque: O(1) per sample)."""
        while q and q[-1][1] >= rtt:
            q.pop()
        q.append((now, rtt))
        while q[0][0] < now - window:
            q.popleft()
        return q[0][1]

    def on_ack(self, now_us: int, rs: RateSample, sender: TransportSender) -> None:
        self.srtt_us = sender.srtt_us
        self.rtt_min = self._window_min(self.min_rtts, now_us, rs.rtt_us, RTT_MIN_WINDOW_US)
        self.rtt_standing = self._window_min(
            self.rtts, now_us, rs.rtt_us, max(self.srtt_us // 2, 1)
        )
        dq_s = (self.rtt_standing - self.rtt_min) / 1e6
        rate = self.cwnd_p / (self.rtt_standing / 1e6)  # packets/s
        target = float("inf") if dq_s <= 0 else 1.0 / (self.delta * dq_s)
        up = rate <= target
        if up and self.slow_start:
            self.cwnd_p += rs.acked / self.mss  # doubles every RTT
            return
        self.slow_start = False
        self._once_per_rtt(now_us)
        d = 1 if up else -1
        if self.velocity > 1.0 and d != self.direction:
            # the decision turned against a velocity built up the other way: reset it at
            # once, not at the next once-per-RTT check (the reference implementation's
            # Copa in mvfst does); else a velocity doubled on the way down to the floor
            # multiplies the first step up (a window of 2 packets grew to thousands)
            self.direction, self.velocity, self.same_direction_rtts = d, 1.0, 0
            self.mark_us, self.mark_cwnd = now_us, self.cwnd_p
        step = self.velocity * (rs.acked / self.mss) / (self.delta * self.cwnd_p)
        self.cwnd_p = self.cwnd_p + step if up else max(self.cwnd_p - step, 2.0)

    def _once_per_rtt(self, now_us: int) -> None:
        """Velocity: compare the window with its value one RTT ago."""
        if now_us - self.mark_us < self.srtt_us:
            return
        d = 1 if self.cwnd_p > self.mark_cwnd else -1
        if d == self.direction:
            self.same_direction_rtts += 1
            if self.same_direction_rtts >= 3:
                self.velocity *= 2
        else:
            self.direction, self.same_direction_rtts, self.velocity = d, 0, 1.0
        self.mark_us, self.mark_cwnd = now_us, self.cwnd_p


register_window_scheme("copa")(Copa)
