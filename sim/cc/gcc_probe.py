"""GCC's bandwidth probing, after libwebrtc's ``modules/congestion_controller/goog_cc``:

- ``ProbeController`` (``probe_controller.cc``): when to probe and at which rates;
- ``ProbeBitrateEstimator`` (``probe_bitrate_estimator.cc``): a cluster's send/receive timing
  in transport feedback -> a rate;
- ``AlrDetector`` (``alr_detector.cc`` with ``modules/pacing/interval_budget.cc``): is the
  sender application-limited (sending well below its estimate)?

The pacer side (libwebrtc's ``BitrateProber``, ``modules/pacing/bitrate_prober.cc``) lives in
``octoric.sim.video.VideoSender``: it sends each ``ProbeCluster`` at the cluster's rate, media
first and padding when the queue is empty. Written from the libwebrtc sources' documented
behaviour and constants; no code is copied. Times are integer microseconds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from octoric.sim.video import ProbeCluster

# --- ProbeController (probe_controller.cc, ProbeControllerConfig defaults) ------------------
FIRST_EXPONENTIAL_PROBE_SCALE = 3.0  # first_exponential_probe_scale
SECOND_EXPONENTIAL_PROBE_SCALE = 6.0  # second_exponential_probe_scale
FURTHER_EXPONENTIAL_PROBE_SCALE = 2.0  # further_exponential_probe_scale
FURTHER_PROBE_THRESHOLD = 0.7  # further_probe_threshold (kRepeatedProbeMinPercentage 70)
ALR_PROBING_INTERVAL_US = 5_000_000  # alr_probing_interval (kAlrPeriodicProbingIntervalMs)
ALR_PROBE_SCALE = 2.0  # alr_probe_scale
MIN_PROBE_PACKETS_SENT = 5  # min_probe_packets_sent (kMinProbePacketsSent)
MIN_PROBE_DURATION_US = 15_000  # min_probe_duration (kMinProbeDurationMs)
MAX_WAITING_FOR_PROBING_RESULT_US = 1_000_000  # kMaxWaitingTimeForProbingResultMs
# probe after a large drop (RequestProbe)
BITRATE_DROP_THRESHOLD = 0.66  # kBitrateDropThreshold
BITRATE_DROP_TIMEOUT_US = 5_000_000  # kBitrateDropTimeoutMs
PROBE_FRACTION_AFTER_DROP = 0.85  # kProbeFractionAfterDrop
PROBE_UNCERTAINTY = 0.05  # kProbeUncertainty
ALR_ENDED_TIMEOUT_US = 3_000_000  # kAlrEndedTimeoutMs
MIN_TIME_BETWEEN_DROP_PROBES_US = 5_000_000  # kMinTimeBetweenAlrProbesMs

# --- ProbeBitrateEstimator (probe_bitrate_estimator.cc) ------------------------------------
MIN_RECEIVED_PROBES_RATIO = 0.80  # kMinReceivedProbesRatio
MIN_RECEIVED_BYTES_RATIO = 0.80  # kMinReceivedBytesRatio
MAX_VALID_RATIO = 2.0  # kMaxValidRatio: receive rate / send rate above this is invalid
MIN_RATIO_FOR_UNSATURATED_LINK = 0.9  # kMinRatioForUnsaturatedLink
TARGET_UTILIZATION_FRACTION = 0.95  # kTargetUtilizationFraction
MAX_CLUSTER_HISTORY_US = 1_000_000  # kMaxClusterHistory
MAX_PROBE_INTERVAL_US = 1_000_000  # kMaxProbeInterval

# --- AlrDetector (alr_detector.cc AlrDetectorConfig; interval_budget.cc) -----------------
ALR_BANDWIDTH_USAGE_RATIO = 0.65  # bandwidth_usage_ratio
ALR_START_BUDGET_LEVEL_RATIO = 0.80  # start_budget_level_ratio
ALR_STOP_BUDGET_LEVEL_RATIO = 0.50  # stop_budget_level_ratio
INTERVAL_BUDGET_WINDOW_US = 500_000  # IntervalBudget kWindowMs


class ProbeController:
    """libwebrtc's ProbeController state machine (kInit -> kWaitingForProbingResult ->
    kProbingComplete):

    - at start, one exponential probe: two clusters at 3x and 6x the start bitrate;
    - while waiting for a result (at most 1 s), an estimate above 0.7x the last probe's rate
      starts a further probe at 2x that estimate;
    - in the application-limited region (ALR) with probing complete, a probe at 2x the
      estimate every 5 s (``max(alr_start, last probe) + 5 s``); libwebrtc enables this
      periodic ALR probing per stream (``EnablePeriodicAlrProbing``; screenshare by default),
      here the ``alr_probing`` flag;
    - after a large drop of the estimate (below 0.66x within one update), once the delay
      detector has recovered from the over-use (under-use -> normal) while in ALR or within
      3 s of its end, one probe at 0.85x the rate before the drop, if the estimate is still
      below 0.95x that, within 5 s of the drop and at most every 5 s (``RequestProbe``);
    - no probe above ``max_bps`` (a capped probe does not probe further).
    """

    def __init__(self, start_bps: float, max_bps: float, alr_probing: bool = True) -> None:
        self.start_bps = start_bps
        self.max_bps = max_bps
        self.alr_probing = alr_probing
        self.state = "init"
        self.estimate_bps = start_bps
        self.min_bitrate_to_probe_further = math.inf
        self.time_last_probing_initiated_us = -1
        # RequestProbe's memory. libwebrtc resets both times to "now" on a clock whose epoch
        # lies long before the call, so neither holds back the first drop probe: -inf here.
        self.time_of_last_large_drop_us = -math.inf
        self.bitrate_before_last_large_drop = 0.0
        self.last_drop_probe_us = -math.inf
        self.alr_end_us: int | None = None
        self.next_cluster_id = 1
        self.clusters: dict[int, ProbeCluster] = {}  # every cluster started, by id
        self.history: list[tuple[int, str, ProbeCluster]] = []  # (time, reason, cluster)

    def _initiate(self, now_us: int, rates: list[float], further: bool, why: str) -> None:
        for bps in rates:
            if bps > self.max_bps:
                bps = self.max_bps
                further = False
            c = ProbeCluster(
                self.next_cluster_id, bps, MIN_PROBE_PACKETS_SENT,
                math.ceil(bps * MIN_PROBE_DURATION_US / 8e6),
            )  # fmt: skip
            self.next_cluster_id += 1
            self.clusters[c.id] = c
            self.history.append((now_us, why, c))
        self.time_last_probing_initiated_us = now_us
        if further:
            self.state = "waiting"
            self.min_bitrate_to_probe_further = rates[-1] * FURTHER_PROBE_THRESHOLD
        else:
            self.state = "complete"
            self.min_bitrate_to_probe_further = math.inf

    def set_estimate(self, now_us: int, bps: float) -> None:
        """The network estimate changed (libwebrtc: ``SetEstimatedBitrate``)."""
        if self.state == "waiting" and bps > self.min_bitrate_to_probe_further:
            self._initiate(now_us, [FURTHER_EXPONENTIAL_PROBE_SCALE * bps], True, "further")
        if bps < BITRATE_DROP_THRESHOLD * self.estimate_bps:
            self.time_of_last_large_drop_us = now_us
            self.bitrate_before_last_large_drop = self.estimate_bps
        self.estimate_bps = bps

    def set_alr_ended(self, now_us: int) -> None:
        """The sender left the application-limited region (``SetAlrEndedTimeMs``)."""
        self.alr_end_us = now_us

    def request_probe(self, now_us: int, alr_start_us: int | None) -> None:
        """The delay detector recovered from an over-use (``RequestProbe``): probe back
        towards the rate before a recent large drop, if the sender is or just was
        application-limited (the drop may then be an artefact of too little traffic)."""
        ended_recently = (
            self.alr_end_us is not None and now_us - self.alr_end_us < ALR_ENDED_TIMEOUT_US
        )
        if not (alr_start_us is not None or ended_recently) or self.state != "complete":
            return
        suggested = PROBE_FRACTION_AFTER_DROP * self.bitrate_before_last_large_drop
        if (
            (1 - PROBE_UNCERTAINTY) * suggested > self.estimate_bps
            and now_us - self.time_of_last_large_drop_us < BITRATE_DROP_TIMEOUT_US
            and now_us - self.last_drop_probe_us > MIN_TIME_BETWEEN_DROP_PROBES_US
        ):
            self.last_drop_probe_us = now_us
            self._initiate(now_us, [suggested], False, "drop")

    def process(self, now_us: int, alr_start_us: int | None) -> None:
        """Periodic work (libwebrtc: ``Process``; here at every frame tick)."""
        if self.state == "init":
            rates = [FIRST_EXPONENTIAL_PROBE_SCALE * self.start_bps]
            if SECOND_EXPONENTIAL_PROBE_SCALE > 0:
                rates.append(SECOND_EXPONENTIAL_PROBE_SCALE * self.start_bps)
            self._initiate(now_us, rates, True, "initial")
            return
        if (
            self.state == "waiting"
            and now_us - self.time_last_probing_initiated_us > MAX_WAITING_FOR_PROBING_RESULT_US
        ):
            self.state = "complete"
            self.min_bitrate_to_probe_further = math.inf
        if self.alr_probing and self.state == "complete" and alr_start_us is not None:
            nxt = max(alr_start_us, self.time_last_probing_initiated_us) + ALR_PROBING_INTERVAL_US
            if now_us >= nxt:
                self._initiate(now_us, [ALR_PROBE_SCALE * self.estimate_bps], True, "alr")

    def take_new(self, since: int) -> list[ProbeCluster]:
        """Clusters created at history index ``since`` and later."""
        return [c for _, _, c in self.history[since:]]


@dataclass
class _Aggregate:
    first_send_us: float = math.inf
    last_send_us: float = -math.inf
    first_recv_us: float = math.inf
    last_recv_us: float = -math.inf
    size_last_send: int = 0
    size_first_recv: int = 0
    size_total: int = 0
    num_probes: int = 0


class ProbeBitrateEstimator:
    """libwebrtc's ProbeBitrateEstimator: per cluster, aggregate the probe packets' feedback;
    once at least 80 % of the cluster's packets and bytes are back, and both the send and the
    receive interval are in (0, 1 s]:

    - send rate = (bytes - last sent packet's) / (last send - first send);
    - receive rate = (bytes - first received packet's) / (last receive - first receive);
    - receive / send > 2: invalid; else the estimate is min(send, receive), or
      0.95 x receive when receive < 0.9 x send (the probe saturated the link).

    Clusters whose last packet arrived more than 1 s ago are forgotten."""

    def __init__(self) -> None:
        self.clusters: dict[int, _Aggregate] = {}
        self.last_estimate: float | None = None
        self.results: list[tuple[int, float]] = []  # (cluster id, estimate) as computed

    def on_probe_packet(
        self, cluster: ProbeCluster, send_us: int, recv_us: int, size: int
    ) -> float | None:
        old = [
            k for k, a in self.clusters.items() if a.last_recv_us + MAX_CLUSTER_HISTORY_US < recv_us
        ]
        for k in old:
            del self.clusters[k]
        a = self.clusters.setdefault(cluster.id, _Aggregate())
        if send_us < a.first_send_us:
            a.first_send_us = send_us
        if send_us > a.last_send_us:
            a.last_send_us = send_us
            a.size_last_send = size
        if recv_us < a.first_recv_us:
            a.first_recv_us = recv_us
            a.size_first_recv = size
        if recv_us > a.last_recv_us:
            a.last_recv_us = recv_us
        a.size_total += size
        a.num_probes += 1
        if (
            a.num_probes < cluster.min_probes * MIN_RECEIVED_PROBES_RATIO
            or a.size_total < cluster.min_bytes * MIN_RECEIVED_BYTES_RATIO
        ):
            return None
        send_iv = a.last_send_us - a.first_send_us
        recv_iv = a.last_recv_us - a.first_recv_us
        if not (0 < send_iv <= MAX_PROBE_INTERVAL_US and 0 < recv_iv <= MAX_PROBE_INTERVAL_US):
            return None
        send_bps = (a.size_total - a.size_last_send) * 8e6 / send_iv
        recv_bps = (a.size_total - a.size_first_recv) * 8e6 / recv_iv
        if recv_bps / send_bps > MAX_VALID_RATIO:
            return None
        res = min(send_bps, recv_bps)
        if recv_bps < MIN_RATIO_FOR_UNSATURATED_LINK * send_bps:
            res = TARGET_UTILIZATION_FRACTION * recv_bps
        self.last_estimate = res
        self.results.append((cluster.id, res))
        return res

    def fetch_and_reset(self) -> float | None:
        v = self.last_estimate
        self.last_estimate = None
        return v


class AlrDetector:
    """libwebrtc's AlrDetector: an interval budget (500 ms window, under-use may build up)
    filled at 0.65 x the estimate and drained by every byte the pacer sends; the sender is in
    the application-limited region from when the budget exceeds 80 % of its window until it
    falls below 50 %."""

    def __init__(self) -> None:
        self.target_bps = 0.0
        self.bytes_remaining = 0.0
        self.last_send_us: int | None = None
        self.alr_start_us: int | None = None
        self.periods: list[tuple[int, int | None]] = []  # (start, end or None: ongoing)

    def _max_bytes(self) -> float:
        return self.target_bps * INTERVAL_BUDGET_WINDOW_US / 8e6

    def set_estimate(self, bps: float) -> None:
        self.target_bps = bps * ALR_BANDWIDTH_USAGE_RATIO
        m = self._max_bytes()
        self.bytes_remaining = min(max(self.bytes_remaining, -m), m)

    def on_bytes_sent(self, size: int, send_us: int) -> None:
        if self.last_send_us is None:
            self.last_send_us = send_us  # the first packet's sending time is unknown
            return
        dt = send_us - self.last_send_us
        self.last_send_us = send_us
        m = self._max_bytes()
        if m <= 0:
            return
        self.bytes_remaining = max(self.bytes_remaining - size, -m)
        self.bytes_remaining = min(self.bytes_remaining + self.target_bps * dt / 8e6, m)
        ratio = self.bytes_remaining / m
        if ratio > ALR_START_BUDGET_LEVEL_RATIO and self.alr_start_us is None:
            self.alr_start_us = send_us
            self.periods.append((send_us, None))
        elif ratio < ALR_STOP_BUDGET_LEVEL_RATIO and self.alr_start_us is not None:
            self.periods[-1] = (self.alr_start_us, send_us)
            self.alr_start_us = None
