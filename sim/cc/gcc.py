"""``gcc``: Google Congestion Control as libwebrtc runs it (delay- and loss-based parts, and
bandwidth probing); ``gcc-noprobe``: the same without probing (the slow 8 %/s start ramp)."""

from __future__ import annotations

import math
from collections import deque

from octoric.sim.cc.base import RateController, SchemeContext, register_scheme
from octoric.sim.cc.gcc_acked import (
    AcknowledgedBitrateEstimator,
    LinkCapacityEstimator,
    RobustThroughputEstimator,
)
from octoric.sim.cc.gcc_cwnd import CongestionWindowPushback, RttBackoff
from octoric.sim.cc.gcc_probe import AlrDetector, ProbeBitrateEstimator, ProbeController
from octoric.sim.receiver import FeedbackBatch
from octoric.sim.video import ProbeCluster, SentBatch

TRANSPORT_MAX_BPS = 1e9  # SendSideBandwidthEstimation's kDefaultMaxBitrate
# DelayBasedBwe's kStreamTimeOut: no feedback for longer starts a fresh delay detector
STREAM_TIMEOUT_US = 2_000_000


def _by_recv(r: tuple[int, int, int]) -> int:
    return r[1]


class Gcc(RateController):
    """Google Congestion Control, delay-based part as in libwebrtc (inter-arrival groups of
    5 ms with burst merging, trendline estimator with window 20 and smoothing 0.9, adaptive
    threshold with k_up 0.0087 / k_down 0.039 in [6, 600] ms, AIMD with 8 %/s
    multiplicative and packet-per-response-time additive increase, beta 0.85, no increase
    beyond 1.5 x acked + 10 kbit/s; the acked rate from ``AcknowledgedBitrateEstimator`` and
    the link capacity from ``LinkCapacityEstimator``, ``gcc_acked``) plus the loss-based
    rule (decrease by loss/2 above 10 % loss), and probing (``gcc_probe``: ProbeController's
    initial 3x/6x exponential probe, further 2x probes, periodic ALR probes at 2x every 5 s;
    ProbeBitrateEstimator; AlrDetector). A probe result sets the estimate, as in libwebrtc's
    DelayBasedBwe. Around the estimate (``gcc_cwnd``), as Chromium runs it by default: the
    congestion window with encoder pushback by frame dropping, and the back-off when
    feedback stops for longer than 3 s.

    ``ctx.params``: ``probing`` (default True; False is ``gcc-noprobe``), ``alr_probing``
    (default False: periodic ALR probes, which libwebrtc turns on for screen share and, by
    field trial, for video; a camera stream in Chromium has them off),
    ``congestion_window`` (default True: the window, pushback and RTT back-off; False is the
    model before issue #47, for comparison)."""

    name = "gcc"
    GROUP_MS = 5.0
    BURST_MS = 5.0  # kBurstDeltaThreshold
    MAX_BURST_MS = 100.0  # kMaxBurstDuration
    WINDOW = 20
    SMOOTHING = 0.9
    GAIN = 4.0
    K_UP = 0.0087
    K_DOWN = 0.039
    OVERUSE_TIME_MS = 10.0
    BETA = 0.85

    def __init__(self, ctx: SchemeContext) -> None:
        # ctx.max_bps is the stream's (the encoder's) maximum, which caps what is sent, not
        # the estimate: libwebrtc's estimate is bounded by the transport's maximum (1 Gbit/s,
        # kDefaultMaxBitrate) and, while application-limited, by 1.5 x the acked rate, and
        # its probes by twice the allocated maximum (ProbeController::InitiateProbing)
        self.min_bps, self.max_bps = ctx.min_bps, TRANSPORT_MAX_BPS
        self.rate = ctx.start_bps
        self.rtt_ms = ctx.rtt_ms
        self.hist: deque[tuple[float, float]] = deque()
        self.prev_group: tuple[float, float] | None  # set by _new_delay_detector
        self._new_delay_detector()
        self.last_feedback_us: int | None = None  # DelayBasedBwe's last_seen_packet_
        # AIMD (aimd_rate_control.cc)
        self.state = "increase"
        self.last_change_ms = -1.0  # time_last_bitrate_change_ (< 0: never)
        self.last_decrease_ms = -1.0  # time_last_bitrate_decrease_
        self.capacity = LinkCapacityEstimator()
        # the acknowledged rate the AIMD reads: M125's default RobustThroughputEstimator
        # ("robust"), or the Bayesian AcknowledgedBitrateEstimator of earlier releases
        # ("bayesian"; the model before issue #47's event-log comparison)
        throughput = ctx.params.get("throughput_estimator", "robust")
        if throughput not in ("robust", "bayesian"):
            raise ValueError(f"throughput_estimator {throughput!r}: 'robust' or 'bayesian'")
        self.acked_est: RobustThroughputEstimator | AcknowledgedBitrateEstimator = (
            RobustThroughputEstimator() if throughput == "robust"
            else AcknowledgedBitrateEstimator()
        )  # fmt: skip
        self.latest_acked_bps: float | None = None  # latest_estimated_throughput_
        self.last_max_seq = -1
        # sequence numbers the pacer released but the transport never sent (ICE not writable):
        # libwebrtc has no send time for them, so feedback never counts them lost
        self.unsent: deque[int] = deque()
        self._was_alr = False
        # probing (None: off)
        self.probing = bool(ctx.params.get("probing", True))
        self.cwnd: CongestionWindowPushback | None = None
        self.backoff: RttBackoff | None = None
        self.backoff_bps: float | None = None  # the target while feedback is too old
        if ctx.params.get("congestion_window", True):
            self.cwnd, self.backoff = CongestionWindowPushback(), RttBackoff()
        self.wants_sent = self.probing or self.cwnd is not None
        self.prober: ProbeController | None = None
        self.alr = AlrDetector()
        self.probe_est = ProbeBitrateEstimator()
        self.probe_seq: dict[int, ProbeCluster] = {}  # sent probe packets awaiting feedback
        self._probes_taken = 0
        if self.probing:
            alr_probing = bool(ctx.params.get("alr_probing", False))
            self.prober = ProbeController(ctx.start_bps, 2 * ctx.max_bps, alr_probing)
            self.alr.set_estimate(self.rate)

    # -- trendline (inter-arrival grouping is inlined in on_feedback) -------------------
    def _new_delay_detector(self) -> None:
        """A fresh inter-arrival grouping, trendline and over-use detector: at the start, and
        when no feedback came for more than 2 s (DelayBasedBwe's kStreamTimeOut: libwebrtc
        builds new InterArrivalDelta and TrendlineEstimator objects), so an outage's last
        stragglers do not read as over-use against the delays from before it."""
        # inter-arrival grouping
        self.g_first_send = -1.0
        self.g_last_send = 0.0
        self.g_last_arr = 0.0
        self.g_first_arr = 0.0
        self.prev_group = None
        # trendline
        self.acc = 0.0
        self.smoothed = 0.0
        self.hist.clear()
        self._n_upd = 0
        self._ref = 0.0
        self._sx = self._sy = self._sxx = self._sxy = 0.0
        self.first_arr = -1.0
        self.num_deltas = 0
        self.trend = 0.0
        self.prev_trend = 0.0
        # overuse detector
        self.threshold = 12.5
        self.last_thr_ms = -1.0
        self.time_over = -1.0
        self.over_count = 0
        self.signal = "normal"

    def _trendline(self, delta_ms: float, arr_ms: float, send_d: float) -> None:
        self.num_deltas = min(self.num_deltas + 1, 1000)
        if self.first_arr < 0:
            self.first_arr = arr_ms
        self.acc += delta_ms
        self.smoothed = self.SMOOTHING * self.smoothed + (1 - self.SMOOTHING) * self.acc
        # Least-squares slope over the window with running sums of x - ref (ref re-based
        # every WINDOW updates from scratch, so rounding cannot accumulate).
        h = self.hist
        x, y = arr_ms - self.first_arr, self.smoothed
        h.append((x, y))
        self._n_upd += 1
        if len(h) > self.WINDOW:
            ox, oy = h.popleft()
            ox -= self._ref
            self._sx -= ox
            self._sy -= oy
            self._sxx -= ox * ox
            self._sxy -= ox * oy
        if self._n_upd % self.WINDOW == 0:
            self._ref = h[0][0]
            self._sx = self._sy = self._sxx = self._sxy = 0.0
            for hx, hy in h:
                hx -= self._ref
                self._sx += hx
                self._sy += hy
                self._sxx += hx * hx
                self._sxy += hx * hy
        else:
            x -= self._ref
            self._sx += x
            self._sy += y
            self._sxx += x * x
            self._sxy += x * y
        if len(h) == self.WINDOW:
            n = self.WINDOW
            den = self._sxx - self._sx * self._sx / n
            if den > 1e-9:
                self.trend = (self._sxy - self._sx * self._sy / n) / den
        self._detect(send_d, arr_ms)

    def _detect(self, ts_delta: float, now_ms: float) -> None:
        if self.num_deltas < 2:
            self.signal = "normal"
            return
        mt = min(self.num_deltas, 60) * self.trend * self.GAIN
        if mt > self.threshold:
            if self.time_over < 0:
                self.time_over = ts_delta / 2
            else:
                self.time_over += ts_delta
            self.over_count += 1
            if (
                self.time_over > self.OVERUSE_TIME_MS
                and self.over_count > 1
                and self.trend >= self.prev_trend
            ):
                self.time_over = 0.0
                self.over_count = 0
                self.signal = "overuse"
        elif mt < -self.threshold:
            self.time_over = -1.0
            self.over_count = 0
            self.signal = "underuse"
        else:
            self.time_over = -1.0
            self.over_count = 0
            self.signal = "normal"
        self.prev_trend = self.trend
        if self.last_thr_ms < 0:
            self.last_thr_ms = now_ms
        if abs(mt) > self.threshold + 15.0:
            self.last_thr_ms = now_ms
            return
        k = self.K_DOWN if abs(mt) < self.threshold else self.K_UP
        dt = min(now_ms - self.last_thr_ms, 100.0)
        self.threshold += k * (abs(mt) - self.threshold) * dt
        self.threshold = min(max(self.threshold, 6.0), 600.0)
        self.last_thr_ms = now_ms

    # -- AIMD ---------------------------------------------------------------------------
    def _aimd(self, now_us: int, loss: float, probe_bps: float | None = None) -> None:
        """One delay-based update per feedback report, as libwebrtc's
        ``DelayBasedBwe::MaybeUpdateEstimate`` (``delay_based_bwe.cc``):

        - over-use with an acked rate: an AIMD update (a decrease) only when it is time to
          reduce further (``TimeToReduceFurther``: >= rtt clamped to [10, 200] ms since the
          last change, or the acked rate below half the estimate);
        - over-use before any acked rate: halve the estimate (``InitialTimeToReduceFurther``,
          which with its default config is true at every such report);
        - otherwise a probe result sets the estimate (``SetEstimate``), else an AIMD update.

        Then the loss-based rule (decrease by loss/2 above 10 % loss)."""
        now_ms = now_us / 1000.0
        acked = self.acked_est.bitrate_bps()
        if self.signal == "overuse":
            if acked is not None:
                if self._time_to_reduce_further(now_ms, acked):
                    self._change_bitrate(now_ms, acked)
            elif self._time_to_reduce_further(now_ms, self.rate / 2 - 1.0):
                self._set_estimate(now_ms, self.rate / 2)
        elif probe_bps is not None:
            # a probe result (unless over-using) sets the estimate and, through
            # SetSendBitrate, the loss-based one
            self._set_estimate(now_ms, probe_bps)
        else:
            self._change_bitrate(now_ms, acked)
        if loss > 0.10:
            self.rate = max(self.rate * (1.0 - 0.5 * loss), self.min_bps)

    def _time_to_reduce_further(self, now_ms: float, throughput_bps: float) -> bool:
        interval = min(max(self.rtt_ms, 10.0), 200.0)
        if self.last_change_ms < 0 or now_ms - self.last_change_ms >= interval:
            return True
        return throughput_bps < 0.5 * self.rate

    def _set_estimate(self, now_ms: float, bps: float) -> None:
        prev = self.rate
        self.rate = min(max(bps, self.min_bps), self.max_bps)
        self.last_change_ms = now_ms
        if self.rate < prev:
            self.last_decrease_ms = now_ms

    def _near_max_increase_bps_per_s(self) -> float:
        """``GetNearMaxIncreaseRateBpsPerSecond``: one average packet of a 30 fps frame
        (packets <= 1200 bytes) per twice the response time (2 x (rtt + 100 ms): M125 doubles
        it), at least 4 kbit/s/s."""
        bits_per_frame = self.rate / 30.0
        pkts = max(1.0, math.ceil(bits_per_frame / (1200 * 8)))
        resp_s = 2.0 * (self.rtt_ms + 100.0) / 1000.0
        return max(4000.0, bits_per_frame / pkts / resp_s)

    def _change_bitrate(self, now_ms: float, acked: float | None) -> None:
        """``AimdRateControl::ChangeBitrate`` (``aimd_rate_control.cc``, defaults):

        - state: normal -> increase (from hold, restarting the increase clock), over-use ->
          decrease, under-use -> hold;
        - increase: drop the link-capacity estimate if the acked rate exceeds its upper
          bound; near capacity (an estimate exists) additive increase
          (``_near_max_increase_bps_per_s`` x time since the last change), else
          multiplicative 8 %/s (1.08 ^ min(dt, 1 s), at least 1 kbit/s); never above
          1.5 x acked + 10 kbit/s, and an estimate already above that limit (e.g. a probe
          result) is kept, not cut;
        - decrease: beta (0.85) x acked less 5 kbit/s, or beta x the link capacity if that
          would be an increase and a capacity estimate exists; never an increase; the capacity
          estimate is dropped if the acked rate is below its lower bound, then updated with
          the acked rate (``OnOveruseDetected``); hold afterwards.

        Without an acked rate yet, the latest one stands in (none: no limit)."""
        if acked is not None:
            self.latest_acked_bps = acked
        tput = self.latest_acked_bps
        cap = self.capacity
        sig = self.signal
        if sig == "normal":
            if self.state == "hold":
                self.last_change_ms = now_ms
                self.state = "increase"
        elif sig == "overuse":
            self.state = "decrease"
        else:
            self.state = "hold"
        rate = self.rate
        if self.state == "increase":
            if tput is not None and tput > cap.upper_bound_bps():
                cap.reset()  # the link capacity estimate is stale
            limit = 1.5 * tput + 10e3 if tput is not None else math.inf
            if rate < limit:
                since = now_ms - self.last_change_ms if self.last_change_ms >= 0 else math.inf
                if cap.has_estimate():
                    inc = self._near_max_increase_bps_per_s() * since / 1000.0
                else:
                    dt_s = min(since / 1000.0, 1.0)
                    inc = max(rate * (1.08**dt_s - 1.0), 1000.0)
                rate = min(rate + inc, limit)
            self.last_change_ms = now_ms
        elif self.state == "decrease" and tput is not None:
            new = self.BETA * tput
            if new > 5e3:  # "slightly lower than the measured throughput"
                new -= 5e3
            if new > rate and cap.has_estimate():
                new = self.BETA * cap.estimate_bps()
            rate = min(rate, new)
            if tput < cap.lower_bound_bps():
                cap.reset()
            cap.on_overuse_detected(tput)
            self.state = "hold"
            self.last_change_ms = now_ms
            self.last_decrease_ms = now_ms
        self.rate = min(max(rate, self.min_bps), self.max_bps)

    # -- interface ----------------------------------------------------------------------
    def on_feedback(self, now_us: int, fb: FeedbackBatch) -> None:
        if not fb.seqs:
            # nothing arrived since the last report (an outage): libwebrtc's receiver sends no
            # transport feedback then, and DelayBasedBwe makes no update from an empty
            # report, so the estimate holds (it used to climb blindly through outages)
            return
        last = self.last_feedback_us
        if last is not None and now_us - last > STREAM_TIMEOUT_US:
            self._new_delay_detector()
        self.last_feedback_us = now_us
        rows = sorted(zip(fb.seqs, fb.send_us, fb.recv_us, fb.sizes, strict=True))
        probe_bps = self._probe_feedback(rows) if self.probe_seq else None
        # goog_cc_network_control.cc: an ALR period that ended lets the acked estimate move
        # fast again; then the AcknowledgedBitrateEstimator gets every packet by receive time
        in_alr = self.alr.alr_start_us is not None
        if self._was_alr and not in_alr:
            self.acked_est.set_alr_ended_time(now_us)
            if self.prober is not None:
                self.prober.set_alr_ended(now_us)
        self._was_alr = in_alr
        self.acked_est.set_alr(in_alr)
        self.acked_est.on_packets(sorted(((r[1], r[2], r[3]) for r in rows), key=_by_recv))
        # Inter-arrival groups of 5 ms by send time, with libwebrtc's burst merging
        # (inter_arrival_delta.cc BelongsToBurst: a packet arriving <= 5 ms after the group's
        # last one, with a negative propagation delta, joins it while the group spans
        # < 100 ms of arrivals). Inlined: the per-packet hot path.
        gfs, gls, gla, gfa = self.g_first_send, self.g_last_send, self.g_last_arr, self.g_first_arr
        group_ms = self.GROUP_MS
        # delay_based_bwe.cc: the detector went from under-use to normal within this report
        # (the queue an over-use built has drained): ProbeController may probe after a drop
        prev_sig, recovered = self.signal, False
        for _, send_us, recv_us, _size in rows:
            send_ms = send_us / 1000.0
            arr_ms = recv_us / 1000.0
            if gfs < 0:
                gfs, gls, gla, gfa = send_ms, send_ms, arr_ms, arr_ms
                continue
            send_d = send_ms - gls
            arr_d = arr_ms - gla
            if (
                send_d == 0.0
                or (arr_d - send_d < 0.0 and arr_d <= self.BURST_MS
                    and arr_ms - gfa < self.MAX_BURST_MS)
                or send_ms - gfs <= group_ms
            ):  # fmt: skip
                if send_ms > gls:
                    gls = send_ms
                if arr_ms > gla:
                    gla = arr_ms
            else:
                prev = self.prev_group
                if prev is not None:
                    send_d = gls - prev[0]
                    self._trendline((gla - prev[1]) - send_d, gla, send_d)
                    if prev_sig == "underuse" and self.signal == "normal":
                        recovered = True
                    prev_sig = self.signal
                self.prev_group = (gls, gla)
                gfs, gls, gla, gfa = send_ms, send_ms, arr_ms, arr_ms
        self.g_first_send, self.g_last_send, self.g_last_arr = gfs, gls, gla
        self.g_first_arr = gfa
        hi = rows[-1][0]
        if self.cwnd is not None and self.backoff is not None:
            self._window_feedback(now_us, rows, hi)
        expected = hi - self.last_max_seq if self.last_max_seq >= 0 else len(fb.seqs)
        uns = self.unsent
        while uns and uns[0] <= hi:
            if uns.popleft() > self.last_max_seq:
                expected -= 1
        self.last_max_seq = max(self.last_max_seq, hi)
        loss = max(0.0, 1.0 - len(fb.seqs) / expected) if expected > 0 else 0.0
        self._aimd(now_us, loss, probe_bps)
        if self.prober is not None:
            self.prober.set_estimate(now_us, self.rate)
            self.alr.set_estimate(self.rate)
            if recovered:
                self.prober.request_probe(now_us, self.alr.alr_start_us)

    def _window_feedback(self, now_us: int, rows: list[tuple[int, int, int, int]],
                         hi: int) -> None:  # fmt: skip
        """The report's RTTs (goog_cc_network_control.cc OnTransportPacketsFeedback): the
        largest (its oldest packet's send to the report's arrival) sizes the congestion
        window; the smallest after the receiver's own holding time is the propagation RTT
        the back-off watches (fresh feedback ends a back-off)."""
        assert self.cwnd is not None and self.backoff is not None
        max_recv = max(r[2] for r in rows)
        first_send = min(r[1] for r in rows)
        prop = min(now_us - r[1] - (max_recv - r[2]) for r in rows)
        self.backoff.on_feedback(now_us, prop)
        self.cwnd.on_feedback(hi, (now_us - first_send) / 1000.0, self.rate)

    def _probe_feedback(self, rows: list[tuple[int, int, int, int]]) -> float | None:
        """Feed the probe packets of a feedback batch to the ProbeBitrateEstimator; the last
        estimate it produced (libwebrtc: FetchAndResetLastEstimatedBitrate)."""
        ps = self.probe_seq
        est = self.probe_est
        for seq, send_us, recv_us, size in rows:
            c = ps.pop(seq, None)
            if c is not None:
                est.on_probe_packet(c, send_us, recv_us, size)
        if ps and len(ps) > 4096:  # probe packets lost on the way: forget the oldest
            lo = rows[-1][0] - 4096
            for k in [k for k in ps if k < lo]:
                del ps[k]
        return est.fetch_and_reset()

    def on_send_failed(self, now_us: int, seqs: list[int]) -> None:
        self.unsent.extend(seqs)

    def on_sent(self, now_us: int, sent: SentBatch) -> None:
        alr = self.alr
        ps = self.probe_seq
        clusters = self.prober.clusters if self.prober is not None else {}
        cw, rate = self.cwnd, self.target_now()
        for seq, send_us, size, cid in zip(
            sent.seqs, sent.send_us, sent.sizes, sent.cluster, strict=True
        ):
            alr.on_bytes_sent(size, send_us)
            if cid >= 0:
                ps[seq] = clusters[cid]
            if cw is not None:
                cw.on_sent(seq, size, rate)
        if self.backoff is not None and sent.send_us:
            self.backoff.on_sent(sent.send_us[-1])

    def probe_clusters(self, now_us: int) -> list[ProbeCluster]:
        p = self.prober
        if p is None:
            return []
        p.process(now_us, self.alr.alr_start_us)
        new = p.take_new(self._probes_taken)
        self._probes_taken = len(p.history)
        return new

    def target_now(self) -> float:
        """The target without advancing any clock: the estimate, or the back-off's rate."""
        b = self.backoff_bps
        return self.rate if b is None else min(self.rate, b)

    def target_bps(self, now_us: int) -> float:
        if self.backoff is not None:
            # SendSideBandwidthEstimation::UpdateEstimate: while the RTT is above the limit
            # the target only backs off; once under it, the loss-based estimate (v2, without
            # loss: the delay-based one) is the target again
            if self.backoff.above_limit():
                b = self.backoff.backoff(now_us, self.target_now())
                if b is not None:
                    self.backoff_bps = b
            else:
                self.backoff_bps = None
        rate = self.target_now()
        if self.cwnd is not None:
            self.cwnd.process(now_us, rate)
        return rate

    def encoder_bps(self, now_us: int) -> float:
        rate = self.target_now()
        return self.cwnd.encoder_bps(rate) if self.cwnd is not None else rate

    def drop_frame(self, now_us: int) -> bool:
        return self.cwnd.drop_frame() if self.cwnd is not None else False


class GccNoProbe(Gcc):
    """``gcc-noprobe``: GCC without bandwidth probing; from ``start_bps`` it ramps by the
    AIMD's 8 %/s multiplicative increase only (the "M1 ramp")."""

    name = "gcc-noprobe"

    def __init__(self, ctx: SchemeContext) -> None:
        super().__init__(
            SchemeContext(ctx.rtt_ms, ctx.start_bps, ctx.min_bps, ctx.max_bps,
                          {**ctx.params, "probing": False})
        )  # fmt: skip


register_scheme("gcc")(Gcc)
register_scheme("gcc-noprobe")(GccNoProbe)
