"""GCC's throughput side of the delay-based AIMD, after libwebrtc's
``modules/congestion_controller/goog_cc``:

- ``BitrateEstimator`` (``bitrate_estimator.cc``): acknowledged bytes in fixed windows
  (500 ms for the first sample, 150 ms afterwards) -> rate samples -> a Bayesian estimate
  whose sample uncertainty grows with the sample's distance from the estimate;
- ``AcknowledgedBitrateEstimator`` (``acknowledged_bitrate_estimator.cc``): feeds every
  acknowledged packet (in receive-time order) to a ``BitrateEstimator``, and lets the estimate
  move fast again after an application-limited period ends;
- ``RobustThroughputEstimator`` (``robust_throughput_estimator.cc``): the acknowledged rate
  libwebrtc M125 actually feeds the AIMD (``WebRTC-Bwe-RobustThroughputEstimatorSettings``
  is ``enabled`` by default since M11x): over a window of >= 20 packets and >= 1 s, never
  above the rate the packets were sent at;
- ``LinkCapacityEstimator`` (``link_capacity_estimator.cc``): the link capacity AIMD keeps
  from the acked rates at over-use, with its 3-sigma bounds, all in kbit/s.

Written from the libwebrtc sources' documented behaviour and default constants (field-trial
defaults); no code is copied. Times are integer microseconds, rates bit/s at the interface.
"""

from __future__ import annotations

import math
from collections import deque

# --- BitrateEstimator (bitrate_estimator.cc; WebRTC-BweThroughputWindowConfig defaults) ----
INITIAL_RATE_WINDOW_MS = 500  # kInitialRateWindowMs ("initial_window_ms")
RATE_WINDOW_MS = 150  # kRateWindowMs ("window_ms")
UNCERTAINTY_SCALE = 10.0  # "scale"
UNCERTAINTY_SCALE_IN_ALR = UNCERTAINTY_SCALE  # "scale_alr" (defaults to "scale")
SMALL_SAMPLE_UNCERTAINTY_SCALE = UNCERTAINTY_SCALE  # "scale_small" (defaults to "scale")
SMALL_SAMPLE_THRESHOLD_BYTES = 0  # "small_thresh" (0: no sample counts as small)
UNCERTAINTY_SYMMETRY_CAP_KBPS = 0.0  # "symmetry_cap"
ESTIMATE_FLOOR_KBPS = 0.0  # "floor"
INITIAL_ESTIMATE_VAR = 50.0  # bitrate_estimate_var_ at construction
ESTIMATE_VAR_GROWTH = 5.0  # added to the estimate's variance before every update
FAST_RATE_CHANGE_VAR = 200.0  # ExpectFastRateChange: added to the estimate's variance

# --- RobustThroughputEstimator (RobustThroughputEstimatorSettings defaults, M125) ---------
ROBUST_WINDOW_PACKETS = 20  # "window_packets"
ROBUST_MAX_WINDOW_PACKETS = 500  # "max_window_packets"
ROBUST_MIN_WINDOW_US = 1_000_000  # "window_duration"
ROBUST_MAX_WINDOW_US = 5_000_000  # "max_window_duration"
ROBUST_REQUIRED_PACKETS = 10  # "required_packets"
MAX_REORDERING_US = 1_000_000  # kMaxReorderingTime: a larger step back clears the window

# --- LinkCapacityEstimator (link_capacity_estimator.cc) ----------------------------------
CAPACITY_ALPHA_OVERUSE = 0.05  # OnOveruseDetected: Update(acked rate, 0.05)
CAPACITY_ALPHA_PROBE = 0.5  # OnProbeRate: Update(probe rate, 0.5)
CAPACITY_DEVIATION_INIT = 0.4  # deviation_kbps_ at construction
CAPACITY_DEVIATION_MIN = 0.4  # "0.4 ~= 14 kbit/s at 500 kbit/s"
CAPACITY_DEVIATION_MAX = 2.5  # "2.5 ~= 35 kbit/s at 500 kbit/s"


class BitrateEstimator:
    """libwebrtc's BitrateEstimator. Bytes are summed over a window of ``rate_window_ms``
    (500 ms until the first estimate, then 150 ms); when a packet's receive time closes a
    window, the window's rate (kbit/s, without that packet's bytes, which open the next
    window) is a sample. The first sample is the estimate; each later one updates it as a
    Bayesian filter:

    - sample uncertainty = scale x |estimate - sample| / (estimate + min(sample, symmetry
      cap)), scale 10 (a sample far from the estimate counts little, one near it a lot);
    - predicted estimate variance = variance + 5 (the rate may have changed meanwhile);
    - estimate = (sample_var x estimate + pred_var x sample) / (sample_var + pred_var),
      variance = sample_var x pred_var / (sample_var + pred_var).

    A sustained rate change therefore moves the estimate within a few samples (each sample
    that agrees shrinks the uncertainty of the next), one outlier window barely does. A gap
    longer than a window drops the partial sum. ``expect_fast_rate_change`` adds 200 to the
    variance (libwebrtc does so when an application-limited period ends)."""

    def __init__(self) -> None:
        self.sum_bytes = 0
        self.current_window_ms = 0
        self.prev_time_ms = -1
        self.estimate_kbps = -1.0
        self.estimate_var = INITIAL_ESTIMATE_VAR
        self.samples: int = 0  # rate samples taken (for tests and diagnostics)

    def update(self, at_us: int, size_bytes: int, in_alr: bool = False) -> None:
        window = RATE_WINDOW_MS if self.estimate_kbps >= 0 else INITIAL_RATE_WINDOW_MS
        sample, small = self._update_window(at_us // 1000, size_bytes, window)
        if sample < 0:
            return
        self.samples += 1
        if self.estimate_kbps < 0:
            self.estimate_kbps = sample  # the very first sample initialises the estimate
            return
        scale = UNCERTAINTY_SCALE
        if small and sample < self.estimate_kbps:
            scale = SMALL_SAMPLE_UNCERTAINTY_SCALE
        elif in_alr and sample < self.estimate_kbps:
            scale = UNCERTAINTY_SCALE_IN_ALR
        est = self.estimate_kbps
        unc = scale * abs(est - sample) / (est + min(sample, UNCERTAINTY_SYMMETRY_CAP_KBPS))
        sample_var = unc * unc
        pred_var = self.estimate_var + ESTIMATE_VAR_GROWTH
        est = (sample_var * est + pred_var * sample) / (sample_var + pred_var)
        self.estimate_kbps = max(est, ESTIMATE_FLOOR_KBPS)
        self.estimate_var = sample_var * pred_var / (sample_var + pred_var)

    def _update_window(self, now_ms: int, size_bytes: int, window_ms: int) -> tuple[float, bool]:
        if now_ms < self.prev_time_ms:  # time went backwards: start over
            self.prev_time_ms = -1
            self.sum_bytes = 0
            self.current_window_ms = 0
        if self.prev_time_ms >= 0:
            self.current_window_ms += now_ms - self.prev_time_ms
            if now_ms - self.prev_time_ms > window_ms:  # nothing for a whole window
                self.sum_bytes = 0
                self.current_window_ms %= window_ms
        self.prev_time_ms = now_ms
        sample = -1.0
        small = False
        if self.current_window_ms >= window_ms:
            small = self.sum_bytes < SMALL_SAMPLE_THRESHOLD_BYTES
            sample = 8.0 * self.sum_bytes / window_ms  # bytes per ms x 8 = kbit/s
            self.current_window_ms -= window_ms
            self.sum_bytes = 0
        self.sum_bytes += size_bytes
        return sample, small

    def bitrate_bps(self) -> float | None:
        return self.estimate_kbps * 1000.0 if self.estimate_kbps >= 0 else None

    def expect_fast_rate_change(self) -> None:
        self.estimate_var += FAST_RATE_CHANGE_VAR


class AcknowledgedBitrateEstimator:
    """libwebrtc's AcknowledgedBitrateEstimator: every packet of a feedback report, in
    receive-time order, goes to a ``BitrateEstimator`` at its receive time with its size
    (libwebrtc adds ``prior_unacked_data``, which the simulator does not have). After the
    application-limited region ended (``set_alr_ended_time``), the first packet sent later
    calls ``expect_fast_rate_change``."""

    def __init__(self) -> None:
        self.est = BitrateEstimator()
        self.in_alr = False
        self.alr_ended_us: int | None = None

    def on_packets(self, rows: list[tuple[int, int, int]]) -> None:
        """``rows``: (send_us, recv_us, size) of received packets, sorted by receive time."""
        est = self.est
        in_alr = self.in_alr
        for send_us, recv_us, size in rows:
            if self.alr_ended_us is not None and send_us > self.alr_ended_us:
                est.expect_fast_rate_change()
                self.alr_ended_us = None
            est.update(recv_us, size, in_alr)

    def set_alr(self, in_alr: bool) -> None:
        self.in_alr = in_alr

    def set_alr_ended_time(self, now_us: int) -> None:
        self.alr_ended_us = now_us

    def bitrate_bps(self) -> float | None:
        return self.est.bitrate_bps()


class RobustThroughputEstimator:
    """libwebrtc's RobustThroughputEstimator, the default acknowledged-rate estimator of M125.

    It keeps the acknowledged packets (send time, receive time, size) of the smallest window
    holding at least 20 packets and the last 1 s of receptions (at most 500 packets and
    5 s). Its rate, once 10 packets are in:

    - receive rate = (bytes - the first received packet's) / (receive span - the largest gap
      between two receptions + the second largest), the span at least 1 ms: a stall followed
      by a burst does not pull it down;
    - send rate = (bytes - the last sent packet's) / send span, over the packets not sent
      before one already dropped from the window (reordered ones);
    - the estimate is the smaller of the two: never above what was sent. A cell that drains
      a backlog in a burst after an outage therefore reads as the rate the sender sent at,
      where the Bayesian 150 ms windows of ``AcknowledgedBitrateEstimator`` read the burst.

    Every packet has a transport sequence number here, so ``prior_unacked_data`` is 0 and
    ``unacked_weight`` does not matter; ALR does not change this estimator."""

    def __init__(self) -> None:
        self.window: deque[tuple[int, int, int]] = deque()  # (send_us, recv_us, size)
        self.latest_discarded_send_us = -math.inf

    def _first_outside(self) -> bool:
        w = self.window
        if not w:
            return False
        if len(w) > ROBUST_MAX_WINDOW_PACKETS:
            return True
        span = w[-1][1] - w[0][1]
        if span > ROBUST_MAX_WINDOW_US:
            return True
        return len(w) > ROBUST_WINDOW_PACKETS and span > ROBUST_MIN_WINDOW_US

    def on_packets(self, rows: list[tuple[int, int, int]]) -> None:
        """``rows``: (send_us, recv_us, size) of received packets, sorted by receive time."""
        w = self.window
        for send_us, recv_us, size in rows:
            w.append((send_us, recv_us, size))
            i = len(w) - 1  # reports may come reordered: keep the window in receive order
            while i > 0 and w[i][1] < w[i - 1][1]:
                w[i], w[i - 1] = w[i - 1], w[i]
                i -= 1
            if w[-1][1] - recv_us > MAX_REORDERING_US:
                w.clear()
                self.latest_discarded_send_us = -math.inf
        while self._first_outside():
            self.latest_discarded_send_us = max(self.latest_discarded_send_us, w[0][0])
            w.popleft()

    def set_alr(self, in_alr: bool) -> None:
        """ALR does not change this estimator (libwebrtc: SetAlr is a no-op)."""

    def set_alr_ended_time(self, now_us: int) -> None:
        """Neither does ALR's end (SetAlrEndedTime is a no-op)."""

    def bitrate_bps(self) -> float | None:
        w = self.window
        if len(w) < ROBUST_REQUIRED_PACKETS:
            return None
        gap1 = gap2 = 0
        prev_recv = w[0][1]
        first_recv, last_recv = math.inf, -math.inf
        first_recv_size = 0
        first_send, last_send = math.inf, -math.inf
        last_send_size = 0
        recv_bytes = send_bytes = sent_in_window = 0
        discarded = self.latest_discarded_send_us
        for send_us, recv_us, size in w:
            gap = recv_us - prev_recv
            prev_recv = recv_us
            if gap > gap1:
                gap1, gap2 = gap, gap1
            elif gap > gap2:
                gap2 = gap
            if recv_us < first_recv:
                first_recv, first_recv_size = recv_us, size
            last_recv = max(last_recv, recv_us)
            recv_bytes += size
            if send_us < discarded:
                continue
            if send_us > last_send:
                last_send, last_send_size = send_us, size
            first_send = min(first_send, send_us)
            send_bytes += size
            sent_in_window += 1
        recv_us_span = max(last_recv - first_recv - gap1 + gap2, 1000)
        recv_bps = (recv_bytes - first_recv_size) * 8e6 / recv_us_span
        if sent_in_window < ROBUST_REQUIRED_PACKETS:
            return recv_bps
        send_us_span = max(last_send - first_send, 1000)
        return min((send_bytes - last_send_size) * 8e6 / send_us_span, recv_bps)


class LinkCapacityEstimator:
    """libwebrtc's LinkCapacityEstimator, kept in kbit/s as there: an exponential average of
    capacity samples (the acked rate at each over-use with alpha 0.05, a probe rate with
    alpha 0.5) and a deviation normalised by the estimate,
    ``dev = (1 - alpha) dev + alpha (estimate - sample)^2 / max(estimate, 1)``, clamped to
    [0.4, 2.5]. Its standard deviation is ``sqrt(dev x estimate)`` kbit/s, the bounds
    ``estimate -+ 3 std`` (lower bound >= 0); without an estimate the upper bound is infinite
    and the lower one 0. At 10 Mbit/s the minimum deviation gives a std of 63 kbit/s (bounds
    +-190 kbit/s), the maximum one 158 kbit/s (+-474 kbit/s)."""

    def __init__(self) -> None:
        self.estimate_kbps: float | None = None
        self.deviation_kbps = CAPACITY_DEVIATION_INIT

    def has_estimate(self) -> bool:
        return self.estimate_kbps is not None

    def estimate_bps(self) -> float:
        assert self.estimate_kbps is not None
        return self.estimate_kbps * 1000.0

    def _std_kbps(self, est: float) -> float:
        return math.sqrt(self.deviation_kbps * est)

    def upper_bound_bps(self) -> float:
        e = self.estimate_kbps
        return math.inf if e is None else (e + 3.0 * self._std_kbps(e)) * 1000.0

    def lower_bound_bps(self) -> float:
        e = self.estimate_kbps
        return 0.0 if e is None else max(0.0, e - 3.0 * self._std_kbps(e)) * 1000.0

    def reset(self) -> None:
        self.estimate_kbps = None  # the deviation is kept, as in libwebrtc

    def on_overuse_detected(self, acked_bps: float) -> None:
        self._update(acked_bps, CAPACITY_ALPHA_OVERUSE)

    def on_probe_rate(self, probe_bps: float) -> None:
        """Not called by the AIMD (libwebrtc's AimdRateControl only calls
        ``OnOveruseDetected``); kept for completeness of the estimator."""
        self._update(probe_bps, CAPACITY_ALPHA_PROBE)

    def _update(self, sample_bps: float, alpha: float) -> None:
        x = sample_bps / 1000.0
        e = x if self.estimate_kbps is None else (1 - alpha) * self.estimate_kbps + alpha * x
        self.estimate_kbps = e
        err = e - x
        dev = (1 - alpha) * self.deviation_kbps + alpha * err * err / max(e, 1.0)
        self.deviation_kbps = min(max(dev, CAPACITY_DEVIATION_MIN), CAPACITY_DEVIATION_MAX)
