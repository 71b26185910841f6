"""BBR v1 (Cardwell et al., "BBR: Congestion-Based Congestion Control", ACM Queue 2016, and
draft-cardwell-iccrg-bbr-congestion-control-00), the ToN'22 paper's baseline and BBR-H's base.

- Model: BtlBw = the windowed maximum of delivery-rate samples over the last 10 round trips
  (app-limited samples only when they raise it); RTprop = the minimum RTT of the last 10 s.
- STARTUP: pacing and cwnd gain 2/ln 2 (2.885) until BtlBw grew by less than 25 % in three
  rounds in a row (the pipe is full); DRAIN: pacing gain ln 2 / 2 until what is in flight is
  at most one BDP; PROBE_BW: pacing gains 1.25, 0.75, 1, 1, 1, 1, 1, 1, one RTprop each,
  starting at a random phase other than 0.75, cwnd gain 2; PROBE_RTT when RTprop is 10 s old:
  cwnd 4 segments for max(200 ms, one round), then back.
- pacing rate = gain x BtlBw (x 0.99 outside STARTUP, as the draft's pacing margin);
  cwnd = gain x BDP + 3 segments for TSO/aggregation quantization, at least 4 segments.
- Losses: v1 keeps its model and sends at the same pace; on a loss event the window is
  bounded by what is in flight plus what was just acknowledged for one round (packet
  conservation, the draft's recovery); an RTO sets cwnd to 1 segment until the next ACK.
"""

from __future__ import annotations

import math
import random
from collections import deque

from mypy_extensions import mypyc_attr

from octoric.sim.transport import (
    RateSample,
    TransportSender,
    WindowContext,
    WindowScheme,
    register_window_scheme,
)

HIGH_GAIN = 2 / math.log(2)
DRAIN_GAIN = 1 / HIGH_GAIN
CYCLE = (1.25, 0.75, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0)
BTLBW_ROUNDS = 10
RTPROP_WINDOW_US = 10_000_000
PROBE_RTT_US = 200_000
PACING_MARGIN = 0.99
STARTUP, DRAIN, PROBE_BW, PROBE_RTT = "startup", "drain", "probe_bw", "probe_rtt"


# subclassed outside the modules mypyc compiles for speed (sim/compiled.py)
@mypyc_attr(allow_interpreted_subclasses=True)
class Bbr(WindowScheme):
    """BBR v1 as Cardwell et al. (ACM Queue 2016) and draft-cardwell-iccrg-bbr-congestion-
    control-00: BtlBw max filter over 10 rounds, RTprop min filter over 10 s, STARTUP gain
    2/ln 2, DRAIN, PROBE_BW gains 1.25/0.75/1 x 6, PROBE_RTT of 200 ms at 4 segments, cwnd gain
    2, pacing margin 0.99; packet conservation for one round after a loss.

    A bulk transfer on the packet-level transport (``sim/transport.py``)."""

    name = "bbr"
    cycle: tuple[float, ...] = CYCLE  # PROBE_BW's pacing gains, one RTprop each

    def __init__(self, ctx: WindowContext) -> None:
        super().__init__(ctx)
        self.mss = ctx.mss
        self.rng = random.Random(ctx.seed)
        self.state = STARTUP
        self.pacing_gain = self.cwnd_gain = HIGH_GAIN
        self.btlbw_samples: deque[tuple[int, float]] = deque()  # (round, bit/s)
        self.btlbw = 0.0
        self.rtprop_us = 0
        self.rtprop_at = 0
        self.round = 0
        self.next_round_delivered = 0
        self.round_start = False
        self.full_bw = 0.0
        self.full_bw_rounds = 0
        self.filled_pipe = False
        self.cycle_idx = 0
        self.cycle_start_us = 0
        self.probe_rtt_done_us: int | None = None
        self.probe_rtt_round_done = False
        self.prior_state = PROBE_BW
        self.probe_rtts = 0  # PROBE_RTT episodes so far
        self.conservation_until: int | None = None  # round until which recovery bounds cwnd
        self.phase_lost = False  # a loss event in the current PROBE_BW phase
        self.recovery_cwnd = 0
        self.rto_cwnd = False
        self.initial_cwnd = int(ctx.params.get("initial_cwnd", 10) * self.mss)

    # --- what the transport asks -------------------------------------------------------
    def bdp(self) -> float:
        if self.btlbw <= 0 or self.rtprop_us <= 0:
            return float(self.initial_cwnd)
        return self.btlbw / 8 * self.rtprop_us / 1e6

    def cwnd(self) -> int:
        if self.rto_cwnd:
            return self.mss
        if self.state == PROBE_RTT:
            return 4 * self.mss
        if self.btlbw <= 0:
            return self.initial_cwnd
        w = max(int(self.cwnd_gain * self.bdp()) + 3 * self.mss, 4 * self.mss)
        if self.conservation_until is not None:
            w = min(w, max(self.recovery_cwnd, 4 * self.mss))
        return w

    def sending_bps(self, sender: TransportSender) -> float | None:
        """BtlBw: the bandwidth a video encoder and the Octopus transport buffer are told
        (SEC'23 §4.2: "the bandwidth estimated by the congestion control algorithm")."""
        return self.btlbw if self.btlbw > 0 else None

    def pacing_bps(self) -> float | None:
        if self.btlbw <= 0:  # no sample yet: the initial window over a guessed 1 ms RTT
            return HIGH_GAIN * self.initial_cwnd * 8 / 1e-3
        margin = 1.0 if self.state == STARTUP else PACING_MARGIN
        return self.pacing_gain * self.btlbw * margin

    # --- the model ---------------------------------------------------------------------
    def on_ack(self, now_us: int, rs: RateSample, sender: TransportSender) -> None:
        self.rto_cwnd = False
        self.round_start = False
        if rs.prior_delivered >= self.next_round_delivered:
            self.next_round_delivered = sender.delivered
            self.round += 1
            self.round_start = True
            if self.conservation_until is not None and self.round > self.conservation_until:
                self.conservation_until = None
        self._update_btlbw(rs)
        self._update_rtprop(now_us, rs)
        if self.conservation_until is not None:
            self.recovery_cwnd = max(self.recovery_cwnd, rs.inflight + rs.acked)
        self._check_full_pipe()
        self._advance(now_us, rs, sender)

    def _sample_bps(self, rs: RateSample) -> float:
        return rs.delivery_bps

    def _update_btlbw(self, rs: RateSample) -> None:
        bw = self._sample_bps(rs)
        if bw <= 0 or (rs.is_app_limited and bw < self.btlbw):
            return
        # the windowed max as a monotonic deque (bandwidths decreasing from the front): O(1) per
        # sample, where Linux keeps its 3-sample minmax approximation of the same filter
        q = self.btlbw_samples
        while q and q[-1][1] <= bw:
            q.pop()
        q.append((self.round, bw))
        while q[0][0] <= self.round - BTLBW_ROUNDS:
            q.popleft()
        self.btlbw = q[0][1]

    def _update_rtprop(self, now_us: int, rs: RateSample) -> None:
        expired = now_us - self.rtprop_at > RTPROP_WINDOW_US
        if rs.rtt_us > 0 and (self.rtprop_us == 0 or rs.rtt_us <= self.rtprop_us or expired):
            self.rtprop_us, self.rtprop_at = rs.rtt_us, now_us
        if expired and self.state != PROBE_RTT:  # the estimate is 10 s old: measure it again
            self._enter_probe_rtt(now_us)

    def _check_full_pipe(self) -> None:
        if self.filled_pipe or not self.round_start:
            return
        if self.btlbw >= self.full_bw * 1.25:
            self.full_bw, self.full_bw_rounds = self.btlbw, 0
            return
        self.full_bw_rounds += 1
        if self.full_bw_rounds >= 3:
            self.filled_pipe = True

    def _advance(self, now_us: int, rs: RateSample, sender: TransportSender) -> None:
        if self.state == STARTUP and self.filled_pipe:
            self.state = DRAIN
            self.pacing_gain, self.cwnd_gain = DRAIN_GAIN, HIGH_GAIN
        if self.state == DRAIN and sender.inflight <= self.bdp():
            self._enter_probe_bw(now_us)
        elif self.state == PROBE_BW:
            self._cycle(now_us, rs, sender)
        elif self.state == PROBE_RTT:
            self._probe_rtt(now_us, sender)

    def _enter_probe_bw(self, now_us: int) -> None:
        self.state = PROBE_BW
        self.cwnd_gain = 2.0
        self.cycle_idx = self.rng.choice([i for i in range(len(self.cycle)) if i != 1])
        self.pacing_gain = self.cycle[self.cycle_idx]
        self.cycle_start_us = now_us

    def _cycle(self, now_us: int, rs: RateSample, sender: TransportSender) -> None:
        elapsed = now_us - self.cycle_start_us > self.rtprop_us
        gain = self.pacing_gain
        if gain > 1.0:  # probing: a round, and the inflight reached gain x BDP or packets were
            # lost (the draft's BBRIsNextCyclePhase: a full buffer ends the probe)
            done = elapsed and (self.phase_lost or rs.inflight >= gain * self.bdp())
        elif gain < 1.0:  # draining: a round, or as soon as inflight is down to one BDP
            done = elapsed or rs.inflight <= self.bdp()
        else:
            done = elapsed
        if done:
            self.phase_lost = False
            self.cycle_idx = (self.cycle_idx + 1) % len(self.cycle)
            self.pacing_gain = self.cycle[self.cycle_idx]
            self.cycle_start_us = now_us

    def _enter_probe_rtt(self, now_us: int) -> None:
        self.prior_state = self.state if self.state != PROBE_RTT else PROBE_BW
        self.state = PROBE_RTT
        self.pacing_gain, self.cwnd_gain = 1.0, 1.0
        self.probe_rtt_done_us = None
        self.probe_rtt_round_done = False
        self.probe_rtts += 1

    def _probe_rtt(self, now_us: int, sender: TransportSender) -> None:
        if self.probe_rtt_done_us is None:
            if sender.inflight <= 4 * self.mss:
                self.probe_rtt_done_us = now_us + PROBE_RTT_US
                self.next_round_delivered = sender.delivered
            return
        if self.round_start:
            self.probe_rtt_round_done = True
        if self.probe_rtt_round_done and now_us >= self.probe_rtt_done_us:
            self.rtprop_at = now_us
            if self.filled_pipe:
                self._enter_probe_bw(now_us)
            else:
                self.state = STARTUP
                self.pacing_gain = self.cwnd_gain = HIGH_GAIN

    def on_loss(self, now_us: int, lost: int, sender: TransportSender) -> None:
        self.phase_lost = True
        self.conservation_until = self.round + 1
        self.recovery_cwnd = sender.inflight

    def on_rto(self, now_us: int, sender: TransportSender) -> None:
        self.rto_cwnd = True
        self.conservation_until = None


register_window_scheme("bbr")(Bbr)


class BbrH(Bbr):
    """BBR-H (Octopus, ToN'22 §IV, Eq. 2): BBR v1 that hears of its UE's handovers from the RAN
    (the handover xApp's report to the server). On a report it records the newest sequence
    number sent, Seq_HO; the delivery-rate sample of an ACK for a packet up to Seq_HO (one the
    handover delayed) takes RTprop as its interval instead of the stretched one, so BtlBw and
    cwnd do not drop for a handover's delayed ACKs. Everything else is BBR v1."""

    name = "bbr-h"

    def __init__(self, ctx: WindowContext) -> None:
        super().__init__(ctx)
        self.seq_ho = -1
        self.handovers = 0
        self.corrected_samples = 0

    def on_handover(self, now_us: int, sender: TransportSender) -> None:
        self.seq_ho = sender.next_seq - 1
        self.handovers += 1

    def _sample_bps(self, rs: RateSample) -> float:
        if rs.seq <= self.seq_ho and self.rtprop_us > 0:
            self.corrected_samples += 1
            return rs.delivered * 8e6 / self.rtprop_us
        return rs.delivery_bps


register_window_scheme("bbr-h")(BbrH)


class BbrPlus(Bbr):
    """BBR+ (Wang et al., "An active-passive measurement study of TCP performance over LTE on
    high-speed rails", MobiCom'19), ToN'22's second baseline, as ToN'22 §V-B describes it:
    PROBE_BW's pacing gains [3/2, 1/2] instead of [5/4, 3/4, 1 x 6], so it probes for bandwidth
    every other round trip, harder. Not modelled: BBR+'s compensation term in RTprop probing
    (ToN'22 names it without its formula, and the MobiCom'19 paper is not in shared/papers).
    Everything else is BBR v1."""

    name = "bbr+"
    cycle: tuple[float, ...] = (1.5, 0.5)


register_window_scheme("bbr+")(BbrPlus)
