"""What libwebrtc's GoogCcNetworkController does around its estimate when feedback is late or
scarce, as Chromium runs it by default (read in libwebrtc M125, ``modules/congestion_controller/
goog_cc`` and ``video/video_stream_encoder.cc``; no code copied):

- ``CongestionWindowPushback``: the congestion window and encoder pushback of the default
  field trial ``WebRTC-CongestionWindow: QueueSize:350,MinBitrate:30000,DropFrame:true``
  (``rate_control_settings.cc``). The window is the target rate times the smallest of the last
  32 reports' largest feedback RTT plus 350 ms, averaged with the previous window, at least
  3000 bytes (``UpdateCongestionWindowSize``). With pushback on, the window does not stop the
  pacer: ``CongestionWindowPushbackController`` compares the data in flight with it at every
  sent packet, feedback report and process interval and scales an encoding ratio (x0.9 above
  1.5 x the window, x0.95 above it, back to 1 below 0.1 of it, else x1.05 up to 1); the pushed
  back rate never goes under 30 kbit/s unless the target does. With DropFrame the target the
  network sees stays; the encoder gets the ratio (``cwnd_reduce_ratio``) and drops every Nth
  frame, N = max(2, target / (target x ratio, capped at target - codec minimum)), encoding the
  rest at target x (1 - 1/N) (``VideoStreamEncoder::UpdateTargetBitrate``): at most every
  other frame.
- ``RttBackoff``: ``RttBasedBackoff`` (``WebRTC-Bwe-MaxRttLimit`` defaults): when the last
  propagation RTT plus the time since it was measured, while packets are still sent, exceeds
  3 s, the target drops to 0.8 x every second, not under 5 kbit/s. This is what moves
  libwebrtc's estimate when no feedback arrives at all.
"""

from __future__ import annotations

from collections import deque

# --- congestion window and pushback (rate_control_settings.cc, goog_cc_network_control.cc) --
QUEUE_MS = 350.0  # QueueSize: added to the feedback RTT
MIN_PUSHBACK_BPS = 30_000.0  # MinBitrate
MIN_CWND_BYTES = 2 * 1500  # kMinCwnd
RTT_WINDOW = 32  # kMaxFeedbackRttWindow: feedback reports whose max RTT is kept
PROCESS_INTERVAL_US = 25_000  # the controller's process interval (a pushback update each)
CODEC_MIN_BPS = 30_000.0  # VP8's send_codec_.minBitrate in Chromium (kDefaultMinVideoBitrate)

# --- RttBasedBackoff (send_side_bandwidth_estimation.cc, WebRTC-Bwe-MaxRttLimit) -------------
RTT_LIMIT_US = 3_000_000
BACKOFF_FRACTION = 0.8
BACKOFF_INTERVAL_US = 1_000_000
BACKOFF_FLOOR_BPS = 5_000.0


class CongestionWindowPushback:
    """The data window, the bytes in flight and the encoder's frame dropping."""

    def __init__(self) -> None:
        self.max_rtts: deque[float] = deque(maxlen=RTT_WINDOW)  # ms
        self.window_bytes: float | None = None
        self.in_flight: deque[tuple[int, int]] = deque()  # (seq, size), sent, not yet reported
        self.in_flight_bytes = 0
        self.ratio = 1.0  # encoding_rate_ratio_
        self.drop_interval: int | None = None  # cwnd_frame_drop_interval_
        self.frame_counter = 0
        self.frames_dropped = 0
        self.last_process_us = 0

    # -- what libwebrtc's controller is told ------------------------------------------------
    def on_sent(self, seq: int, size: int, target_bps: float) -> None:
        self.in_flight.append((seq, size))
        self.in_flight_bytes += size
        self.update(target_bps)

    def on_feedback(self, highest_seq: int, max_feedback_rtt_ms: float, target_bps: float) -> None:
        """A report up to ``highest_seq`` (received or lost, those are no longer in flight),
        whose oldest packet was sent ``max_feedback_rtt_ms`` before it arrived."""
        q = self.in_flight
        while q and q[0][0] <= highest_seq:
            self.in_flight_bytes -= q.popleft()[1]
        self.max_rtts.append(max_feedback_rtt_ms)
        window = target_bps / 8.0 * (min(self.max_rtts) + QUEUE_MS) / 1000.0
        if self.window_bytes is not None:
            window = (window + self.window_bytes) / 2.0
        self.window_bytes = max(float(MIN_CWND_BYTES), window)
        self.update(target_bps)

    def process(self, now_us: int, target_bps: float) -> None:
        """The controller's 25 ms process intervals since the last call, one update each."""
        if self.last_process_us == 0:
            self.last_process_us = now_us
        while now_us - self.last_process_us >= PROCESS_INTERVAL_US:
            self.last_process_us += PROCESS_INTERVAL_US
            self.update(target_bps)

    def update(self, target_bps: float) -> None:
        """``CongestionWindowPushbackController::UpdateTargetBitrate`` and the encoder's
        ``UpdateTargetBitrate`` with the ratio it gets."""
        w = self.window_bytes
        if not w:
            return
        fill = self.in_flight_bytes / w
        if fill > 1.5:
            self.ratio *= 0.9
        elif fill > 1.0:
            self.ratio *= 0.95
        elif fill < 0.1:
            self.ratio = 1.0
        else:
            self.ratio = min(self.ratio * 1.05, 1.0)
        pushed = target_bps * self.ratio
        if pushed < MIN_PUSHBACK_BPS:
            pushed = min(target_bps, MIN_PUSHBACK_BPS)
        reduce_ratio = (target_bps - pushed) / target_bps if target_bps > 0 else 0.0
        self.drop_interval = None
        if reduce_ratio > 0.01 and target_bps > CODEC_MIN_BPS:
            reduce = min(target_bps * reduce_ratio, target_bps - CODEC_MIN_BPS)
            if reduce > 0:
                self.drop_interval = max(2, int(target_bps / reduce))

    # -- what the encoder does with it --------------------------------------------------------
    def encoder_bps(self, target_bps: float) -> float:
        n = self.drop_interval
        return target_bps - target_bps / n if n else target_bps

    def drop_frame(self) -> bool:
        """Whether the frame captured now is dropped (every ``drop_interval``-th frame)."""
        n = self.drop_interval
        if not n:
            return False
        drop = self.frame_counter % n == 0
        self.frame_counter += 1
        self.frames_dropped += drop
        return drop


class RttBackoff:
    """``RttBasedBackoff``: the estimate falls while feedback is older than the RTT limit."""

    def __init__(self) -> None:
        self.last_rtt_update_us: int | None = None
        self.last_propagation_rtt_us = 0
        self.last_sent_us = 0
        self.last_decrease_us: int | None = None
        self.backoffs = 0

    def on_feedback(self, now_us: int, propagation_rtt_us: int) -> None:
        self.last_rtt_update_us = now_us
        self.last_propagation_rtt_us = propagation_rtt_us

    def on_sent(self, now_us: int) -> None:
        self.last_sent_us = now_us

    def corrected_rtt_us(self) -> int:
        if self.last_rtt_update_us is None:
            return 0  # no feedback yet: never (libwebrtc's last update starts at +infinity)
        stale = max(self.last_sent_us - self.last_rtt_update_us, 0)
        return stale + self.last_propagation_rtt_us

    def above_limit(self) -> bool:
        return self.corrected_rtt_us() > RTT_LIMIT_US

    def backoff(self, now_us: int, rate_bps: float) -> float | None:
        """The new target if it is time to back off again, else None."""
        if not self.above_limit():
            return None
        last = self.last_decrease_us
        if last is not None and now_us - last < BACKOFF_INTERVAL_US:
            return None
        if rate_bps <= BACKOFF_FLOOR_BPS:
            return None
        self.last_decrease_us = now_us
        self.backoffs += 1
        return max(rate_bps * BACKOFF_FRACTION, BACKOFF_FLOOR_BPS)
