"""CUBIC (RFC 9438), the window scheme of Linux's default TCP, on the packet-level transport.

- Congestion avoidance: W_cubic(t) = C (t - K)^3 + W_max, C = 0.4 segments/s^3, with
  K = cbrt(W_max (1 - beta) / C); per ACK the window moves toward W_cubic(t + RTT) by
  (target - cwnd) / cwnd segments (RFC 9438 §4.4), never faster than 1.5x per RTT, and the
  Reno-friendly estimate W_est (alpha = 3 (1 - beta) / (1 + beta)) wins where it is larger
  (§4.3).
- A loss event: W_max = cwnd, reduced further with fast convergence when the previous W_max
  was larger (§4.7); cwnd = ssthresh = max(beta x cwnd, 2 segments), beta = 0.7 (§4.6).
- Slow start: +1 segment per segment acknowledged up to ssthresh (RFC 5681), left early by
  HyStart++'s delay-increase test (RFC 9406 §4.2: a round's min RTT above the last round's
  by max(4 ms, min(16 ms, last / 8)), after 8 RTT samples); its conservative slow start phase
  is left out (we go straight to congestion avoidance, as Linux's HyStart does).
- An RTO: ssthresh = max(beta x cwnd, 2 segments), cwnd = 1 segment (RFC 5681 §3.1).
- No pacing: packets leave as the window opens (Linux CUBIC without the fq qdisc).
"""

from __future__ import annotations

from octoric.sim.transport import (
    RateSample,
    TransportSender,
    WindowContext,
    WindowScheme,
    register_window_scheme,
)

C = 0.4
BETA = 0.7
ALPHA = 3 * (1 - BETA) / (1 + BETA)
HYSTART_MIN_SAMPLES = 8


class Cubic(WindowScheme):
    """CUBIC as RFC 9438 (C 0.4, beta 0.7, fast convergence, the Reno-friendly region) with
    HyStart++'s delay-increase exit from slow start (RFC 9406) and no pacing, on the
    packet-level transport (``sim/transport.py``: RACK-TLP loss detection, RTO per RFC 6298).

    A bulk transfer: the window opens until the bottleneck queue overflows."""

    name = "cubic"

    def __init__(self, ctx: WindowContext) -> None:
        super().__init__(ctx)
        self.mss = ctx.mss
        self.cwnd_b = float(ctx.params.get("initial_cwnd", 10) * self.mss)
        self.ssthresh = float("inf")
        self.w_max = 0.0  # segments
        self.k = 0.0  # seconds
        self.epoch_us: int | None = None
        self.w_est = 0.0  # segments
        self.cwnd_epoch = 0.0  # segments at the start of the epoch
        self.hystart = bool(ctx.params.get("hystart", True))
        # HyStart++ round tracking
        self.round_end = 0  # delivered count that ends the current round
        self.round_min_rtt = 0
        self.last_round_min_rtt = 0
        self.round_samples = 0
        self.hystart_exits = 0

    def cwnd(self) -> int:
        return int(self.cwnd_b)

    def on_ack(self, now_us: int, rs: RateSample, sender: TransportSender) -> None:
        if self.cwnd_b < self.ssthresh:
            self._slow_start(rs, sender)
            return
        self._avoid(now_us, rs, sender)

    def _slow_start(self, rs: RateSample, sender: TransportSender) -> None:
        self.cwnd_b += rs.acked
        if not self.hystart:
            return
        if rs.prior_delivered >= self.round_end:  # a new round
            self.round_end = sender.delivered + sender.inflight
            self.last_round_min_rtt, self.round_min_rtt = self.round_min_rtt, 0
            self.round_samples = 0
        self.round_samples += 1
        if self.round_min_rtt == 0 or rs.rtt_us < self.round_min_rtt:
            self.round_min_rtt = rs.rtt_us
        if self.round_samples >= HYSTART_MIN_SAMPLES and self.last_round_min_rtt:
            thresh = max(4000, min(16000, self.last_round_min_rtt // 8))
            if self.round_min_rtt >= self.last_round_min_rtt + thresh:
                self.ssthresh = self.cwnd_b
                self.hystart_exits += 1

    def _avoid(self, now_us: int, rs: RateSample, sender: TransportSender) -> None:
        seg = self.mss
        cwnd = self.cwnd_b / seg
        if self.epoch_us is None:  # the first ACK of congestion avoidance starts an epoch
            self.epoch_us = now_us
            self.cwnd_epoch = cwnd
            self.w_est = cwnd
            if cwnd < self.w_max:
                self.k = ((self.w_max - cwnd) / C) ** (1 / 3)
            else:
                self.k, self.w_max = 0.0, cwnd
        rtt_s = max(sender.srtt_us, 1) / 1e6
        t = (now_us - self.epoch_us) / 1e6
        target = C * (t + rtt_s - self.k) ** 3 + self.w_max
        target = min(max(target, cwnd), 1.5 * cwnd)
        acked = rs.acked / seg
        self.w_est += ALPHA * acked / cwnd
        if target > cwnd:
            cwnd += (target - cwnd) / cwnd * acked
        if self.w_est > cwnd:  # the Reno-friendly region
            cwnd = self.w_est
        self.cwnd_b = cwnd * seg

    def on_loss(self, now_us: int, lost: int, sender: TransportSender) -> None:
        seg = self.mss
        cwnd = self.cwnd_b / seg
        # fast convergence: a flow whose W_max shrank releases bandwidth for newcomers
        self.w_max = cwnd * (1 + BETA) / 2 if cwnd < self.w_max else cwnd
        cwnd = max(cwnd * BETA, 2.0)
        self.k = ((self.w_max - cwnd) / C) ** (1 / 3) if self.w_max > cwnd else 0.0
        self.cwnd_b = self.ssthresh = cwnd * seg
        self.epoch_us = now_us
        self.cwnd_epoch = self.w_est = cwnd

    def on_rto(self, now_us: int, sender: TransportSender) -> None:
        self.ssthresh = max(self.cwnd_b * BETA, 2.0 * self.mss)
        self.w_max = self.cwnd_b / self.mss
        self.cwnd_b = float(self.mss)
        self.epoch_us = None


register_window_scheme("cubic")(Cubic)
