"""GCC's acknowledged-bitrate estimate, link-capacity estimate and AIMD rules against
libwebrtc (``sim/cc/gcc_acked.py``: ``bitrate_estimator.cc``, ``link_capacity_estimator.cc``;
``sim/cc/gcc.py``: ``aimd_rate_control.cc``, ``delay_based_bwe.cc``,
``inter_arrival_delta.cc``)."""

from __future__ import annotations

import math
from collections import deque

import pytest

from octoric.sim.cc import SCHEMES, Gcc, SchemeContext, register_scheme
from octoric.sim.cc.gcc_acked import (
    AcknowledgedBitrateEstimator,
    BitrateEstimator,
    LinkCapacityEstimator,
)
from octoric.sim.engine import Engine
from octoric.sim.receiver import FeedbackBatch
from octoric.sim.scenario import ChannelSpec, FlowSpec, Scenario, UeSpec

pytestmark = pytest.mark.unit


def _feed(e: BitrateEstimator, t0_us: float, t1_us: float, bps: float, size: int = 1200) -> None:
    """Packets of ``size`` bytes received at a steady ``bps`` in [t0, t1)."""
    dt = size * 8e6 / bps
    t = t0_us
    while t < t1_us:
        e.update(int(t), size)
        t += dt


def _time_to_converge(before_bps: float, after_bps: float, tol: float = 0.1) -> float:
    """Seconds after a step from a long-held ``before`` rate to ``after`` until the estimate is
    (and stays, for 1 s) within ``tol`` of ``after``."""
    e = BitrateEstimator()
    _feed(e, 0, 3e6, before_bps)
    first: float | None = None
    for k in range(1, 41):  # 50 ms steps, 2 s
        _feed(e, 3e6 + (k - 1) * 5e4, 3e6 + k * 5e4, after_bps)
        est = e.bitrate_bps()
        assert est is not None
        if abs(est - after_bps) <= tol * after_bps:
            first = k * 0.05 if first is None else first
        else:
            first = None
    assert first is not None and first <= 1.0, "never converged"
    return first


# --- BitrateEstimator -------------------------------------------------------------------------


def test_bitrate_estimator_windows_and_bayesian_update() -> None:
    e = BitrateEstimator()
    e.update(0, 62_500)
    assert e.bitrate_bps() is None
    e.update(499_000, 0)
    assert e.bitrate_bps() is None  # the first window is 500 ms
    e.update(500_000, 22_500)  # closes it: 62.5 kB / 500 ms (this packet opens the next)
    assert e.bitrate_bps() == pytest.approx(1000e3)
    e.update(600_000, 0)
    assert e.bitrate_bps() == pytest.approx(1000e3)  # later windows are 150 ms
    e.update(650_000, 0)  # 22.5 kB / 150 ms = 1200 kbit/s
    # uncertainty 10 x |1000 - 1200| / 1000 = 2 -> sample var 4; predicted var 50 + 5 = 55
    want = (4 * 1000 + 55 * 1200) / (4 + 55)
    assert e.bitrate_bps() == pytest.approx(want * 1e3)
    assert e.estimate_var == pytest.approx(4 * 55 / 59)
    assert e.samples == 2


def test_bitrate_estimator_drops_a_partial_window_after_a_gap() -> None:
    e = BitrateEstimator()
    _feed(e, 0, 1e6, 4e6)
    before = e.bitrate_bps()
    assert before == pytest.approx(4e6, rel=0.02)
    e.update(2_000_000, 1200)  # 1 s of silence: the partial sum is dropped, no zero sample
    assert e.bitrate_bps() == before


@pytest.mark.parametrize(
    ("before", "after", "within_s"),
    [
        (8e6, 10e6, 0.5),  # +25 %: within 0.5 s
        (10e6, 8e6, 0.5),  # -20 %
        (5e6, 9e6, 0.8),  # +80 %: the sample uncertainty grows with the relative distance
        (8e6, 4e6, 0.8),  # -50 %
    ],
)
def test_bitrate_estimator_follows_a_sustained_rate(
    before: float, after: float, within_s: float
) -> None:
    assert _time_to_converge(before, after) <= within_s


def test_bitrate_estimator_lags_a_large_step() -> None:
    """A step far from the estimate (here 4x) counts as a very uncertain sample: after a long
    steady period the estimate needs > 1 s, which is what makes GCC's first back-off after
    its start-up probes deep when it comes early (docs/sim.md)."""
    e = BitrateEstimator()
    _feed(e, 0, 3e6, 2e6)
    _feed(e, 3e6, 4e6, 8e6)
    est = e.bitrate_bps()
    assert est is not None and est < 0.5 * 8e6


def _windows(e: BitrateEstimator, t0_ms: int, rates_kbps: list[int]) -> int:
    """One packet per ms, each 150 ms window at the given rate (kbit/s = 8 x bytes/ms)."""
    t = t0_ms
    for r in rates_kbps:
        for _ in range(150):
            e.update(t * 1000, r // 8)
            t += 1
    return t


@pytest.mark.parametrize(("outlier_kbps", "max_pull"), [(15_000, 0.03), (400, 0.06)])
def test_bitrate_estimator_is_not_pulled_by_one_outlier_window(
    outlier_kbps: int, max_pull: float
) -> None:
    """A window at 3x (or 0.08x) the sustained 5 Mbit/s is a sample 10 x 2 (or 10 x 0.92)
    uncertain: it moves the estimate by ~2.5 % (~5 %), the next normal window undoes that."""
    e = BitrateEstimator()
    for ms in range(500):  # the initial 500 ms window
        e.update(ms * 1000, 625)
    t = _windows(e, 500, [5000] * 20)
    assert e.bitrate_bps() == pytest.approx(5e6)
    t = _windows(e, t, [outlier_kbps])
    t = _windows(e, t, [5000])  # its first packet closes the outlier window
    est = e.bitrate_bps()
    assert est is not None and 0 < abs(est - 5e6) <= max_pull * 5e6
    _windows(e, t, [5000, 5000])
    assert e.bitrate_bps() == pytest.approx(5e6, rel=0.01)


def test_expect_fast_rate_change_speeds_the_estimate_up() -> None:
    slow, fast = BitrateEstimator(), BitrateEstimator()
    for e in (slow, fast):
        _feed(e, 0, 3e6, 2e6)
    fast.expect_fast_rate_change()
    assert fast.estimate_var == pytest.approx(slow.estimate_var + 200)
    for e in (slow, fast):
        _feed(e, 3e6, 3.5e6, 6e6)
    s, f = slow.bitrate_bps(), fast.bitrate_bps()
    assert s is not None and f is not None and f > s + 1e6


def test_acknowledged_estimator_expects_a_fast_change_after_alr() -> None:
    a = AcknowledgedBitrateEstimator()
    a.on_packets([(t, t + 20_000, 1200) for t in range(0, 2_000_000, 4_800)])  # 2 Mbit/s
    a.set_alr_ended_time(2_000_000)
    a.on_packets([(1_999_000, 2_019_000, 1200)])  # sent before the ALR end: nothing
    assert a.alr_ended_us == 2_000_000
    v0 = a.est.estimate_var
    a.on_packets([(2_001_000, 2_019_400, 1200)])  # sent after the ALR end; same ms: no sample
    assert a.alr_ended_us is None and a.est.estimate_var == pytest.approx(v0 + 200)
    # ... which lets a step to 6 Mbit/s through faster than without
    twin = AcknowledgedBitrateEstimator()
    twin.on_packets([(t, t + 20_000, 1200) for t in range(0, 2_000_000, 4_800)])
    twin.on_packets([(1_999_000, 2_019_000, 1200), (2_001_000, 2_019_400, 1200)])
    after = [(t, t + 20_000, 1200) for t in range(2_001_600, 2_500_000, 1_600)]
    a.on_packets(after)
    twin.on_packets(after)
    fast, slow = a.bitrate_bps(), twin.bitrate_bps()
    assert fast is not None and slow is not None and fast > slow


# --- LinkCapacityEstimator --------------------------------------------------------------------


def test_link_capacity_bounds_are_in_kbps() -> None:
    c = LinkCapacityEstimator()
    assert not c.has_estimate()
    assert c.upper_bound_bps() == math.inf and c.lower_bound_bps() == 0.0
    c.on_overuse_detected(10e6)
    assert c.estimate_bps() == pytest.approx(10e6)
    # deviation 0.4 (initial and minimum): std = sqrt(0.4 x 10000) kbit/s = 63.2 kbit/s
    std = math.sqrt(0.4 * 10_000) * 1e3
    assert c.upper_bound_bps() == pytest.approx(10e6 + 3 * std)
    assert c.lower_bound_bps() == pytest.approx(10e6 - 3 * std)
    assert 10.18e6 < c.upper_bound_bps() < 10.2e6  # not the bit/s version's +6 kbit/s
    # a sample at 8 Mbit/s: estimate 0.95 x 10000 + 0.05 x 8000 kbit/s; the normalised
    # deviation 0.95 x 0.4 + 0.05 x 1900^2 / 9900 = 18.6 is clamped to 2.5
    c.on_overuse_detected(8e6)
    assert c.estimate_bps() == pytest.approx(9.9e6)
    assert c.deviation_kbps == 2.5
    std = math.sqrt(2.5 * 9900) * 1e3
    assert c.upper_bound_bps() == pytest.approx(9.9e6 + 3 * std)
    assert c.lower_bound_bps() == pytest.approx(9.9e6 - 3 * std)
    # a probe rate weighs 0.5; a small deviation is clamped to 0.4
    c.reset()
    assert not c.has_estimate() and c.deviation_kbps == 2.5  # reset keeps the deviation
    c.on_probe_rate(5e6)
    c.on_probe_rate(5e6)
    assert c.estimate_bps() == pytest.approx(5e6)
    c2 = LinkCapacityEstimator()
    for _ in range(200):
        c2.on_overuse_detected(5e6)
    assert c2.deviation_kbps == 0.4
    assert c2.lower_bound_bps() == pytest.approx(5e6 - 3 * math.sqrt(0.4 * 5000) * 1e3)


# --- AIMD (aimd_rate_control.cc) -------------------------------------------------------------


def _gcc(rate: float = 5e6, rtt_ms: float = 40.0) -> Gcc:
    g = Gcc(SchemeContext(rtt_ms, rate, 50e3, 50e6, {"probing": False}))
    g.rate = rate
    return g


def test_aimd_decrease_is_beta_times_acked() -> None:
    g = _gcc(5e6)
    g.signal = "overuse"
    g._change_bitrate(1000.0, 4e6)
    assert g.rate == pytest.approx(0.85 * 4e6 - 5e3)  # "slightly lower": 5 kbit/s less
    assert g.state == "hold"
    assert g.capacity.estimate_bps() == pytest.approx(4e6)  # OnOveruseDetected(acked)


def test_aimd_decrease_uses_the_capacity_when_beta_acked_would_increase() -> None:
    g = _gcc(3e6)
    g.capacity.on_overuse_detected(3.2e6)
    g.signal = "overuse"
    g._change_bitrate(1000.0, 3.6e6)  # 0.85 x 3.6 = 3.06 > 3.0: 0.85 x capacity instead
    assert g.rate == pytest.approx(0.85 * 3.2e6)
    g2 = _gcc(2e6)
    g2.signal = "overuse"
    g2._change_bitrate(1000.0, 3.6e6)  # no capacity estimate: never an increase
    assert g2.rate == 2e6


def test_aimd_decrease_resets_the_capacity_below_its_lower_bound() -> None:
    g = _gcc(9e6)
    g.capacity.on_overuse_detected(10e6)
    g.signal = "overuse"
    g._change_bitrate(1000.0, 6e6)  # far below 10 Mbit/s - 3 std: start over at 6 Mbit/s
    assert g.capacity.estimate_bps() == pytest.approx(6e6)


def test_aimd_increase_multiplicative_without_capacity() -> None:
    g = _gcc(5e6)
    g.signal = "normal"
    g.last_change_ms = 1000.0
    g._change_bitrate(1500.0, 5e6)
    assert g.rate == pytest.approx(5e6 * 1.08**0.5)


def test_aimd_increase_additive_near_capacity() -> None:
    g = _gcc(5e6, rtt_ms=40.0)
    g.capacity.on_overuse_detected(5.1e6)
    g.signal = "normal"
    g.last_change_ms = 1000.0
    g._change_bitrate(1500.0, 5e6)
    # 5 Mbit/s at 30 fps: 20833-byte frames in 18 packets of 1157 bytes; one per twice the
    # response time, 2 x (40 + 100) ms (M125's GetNearMaxIncreaseRateBpsPerSecond)
    frame_bits = 5e6 / 30
    per_s = frame_bits / math.ceil(frame_bits / 9600) / 0.280
    assert g.rate == pytest.approx(5e6 + 0.5 * per_s)
    assert g.capacity.has_estimate()


def test_aimd_increase_drops_a_stale_capacity() -> None:
    g = _gcc(5e6)
    g.capacity.on_overuse_detected(4e6)
    g.signal = "normal"
    g.last_change_ms = 1000.0
    g._change_bitrate(1500.0, 5e6)  # acked above 4 Mbit/s + 3 std: multiplicative again
    assert not g.capacity.has_estimate()
    assert g.rate == pytest.approx(5e6 * 1.08**0.5)


def test_aimd_increase_limited_by_acked_but_never_cut() -> None:
    g = _gcc(3e6)
    g.signal = "normal"
    g.last_change_ms = 0.0
    g._change_bitrate(1000.0, 2.05e6)  # 3 x 1.08 > 1.5 x 2.05 + 0.01 = 3.085 Mbit/s
    assert g.rate == pytest.approx(1.5 * 2.05e6 + 10e3)
    g2 = _gcc(9e6)  # e.g. a probe result above the limit: kept, not cut
    g2.signal = "normal"
    g2.last_change_ms = 0.0
    g2._change_bitrate(1000.0, 2e6)
    assert g2.rate == 9e6


def test_overuse_reduces_only_when_it_is_time() -> None:
    """delay_based_bwe.cc / TimeToReduceFurther: at most once per rtt (clamped to
    [10, 200] ms) since the last change, unless the acked rate is below half the estimate;
    before any acked rate, an over-use halves the estimate."""
    g = _gcc(5e6, rtt_ms=40.0)
    g.signal = "overuse"
    g._aimd(1_000_000, 0.0)  # no acked rate yet
    assert g.rate == pytest.approx(2.5e6)
    for t in range(0, 1_000_000, 5_000):  # 1 s at 2 Mbit/s
        g.acked_est.on_packets([(t, t + 20_000, 1250)])
    acked = g.acked_est.bitrate_bps()
    assert acked is not None and acked == pytest.approx(2e6, rel=0.05)
    g.rate = 2.2e6
    g.last_change_ms = 1000.0
    g._aimd(1_020_000, 0.0)  # 20 ms < 40 ms since the last change: no decrease
    assert g.rate == 2.2e6
    g._aimd(1_040_000, 0.0)
    assert g.rate == pytest.approx(0.85 * acked - 5e3)
    g.rate = 5e6
    g.last_change_ms = 1040.0
    g._aimd(1_045_000, 0.0)  # acked < 0.5 x estimate: reduce at once
    assert g.rate == pytest.approx(0.85 * acked - 5e3)


def test_burst_packets_join_the_inter_arrival_group() -> None:
    """inter_arrival_delta.cc BelongsToBurst: packets sent 10 ms apart that arrive back to
    back (a queue draining) form one group, so the trendline gets no delta for them."""
    g = _gcc(5e6)
    seqs = list(range(6))
    send = [0, 10_000, 20_000, 30_000, 40_000, 80_000]
    recv = [60_000, 61_000, 62_000, 63_000, 64_000, 100_000]
    fb = FeedbackBatch(seqs=seqs, send_us=send, recv_us=recv, sizes=[1200] * 6)
    g.on_feedback(110_000, fb)
    assert g.num_deltas == 0 and g.prev_group == (40.0, 64.0)


# --- in the engine ------------------------------------------------------------------------------


class _LoggingGcc(Gcc):
    """Gcc that records, at every AIMD update on over-use, (time s, rate before, rate after,
    acked estimate, link capacity before, receive rate of the last 500 ms)."""

    def __init__(self, ctx: SchemeContext) -> None:
        super().__init__(ctx)
        self.win: deque[tuple[int, int]] = deque()
        self.win_bytes = 0
        self.cuts: list[tuple[float, float, float, float, float | None, float]] = []

    def on_feedback(self, now_us: int, fb: FeedbackBatch) -> None:
        for r, s in zip(fb.recv_us, fb.sizes, strict=True):
            self.win.append((r, s))
            self.win_bytes += s
        while self.win and self.win[0][0] < now_us - 500_000:
            self.win_bytes -= self.win.popleft()[1]
        super().on_feedback(now_us, fb)

    def _change_bitrate(self, now_ms: float, acked: float | None) -> None:
        before, sig = self.rate, self.signal
        cap = self.capacity.estimate_bps() if self.capacity.has_estimate() else None
        super()._change_bitrate(now_ms, acked)
        if sig == "overuse" and acked is not None:
            self.cuts.append((now_ms / 1e3, before, self.rate, acked, cap, self.win_bytes * 16))


@pytest.mark.parametrize("seed", [1, 2, 4])
def test_gcc_backs_off_from_an_acked_rate_that_follows_the_link(seed: int) -> None:
    """On a constant 10 Mbit/s link, every over-use back-off after the start-up is to 0.85 x
    an acked estimate (less 5 kbit/s) within 15 % of what actually arrived in the last
    500 ms (the old 500 ms sliding window lagged right after a probe), or none when that
    would be an increase.

    No floor under a cut: with libwebrtc's RobustThroughputEstimator the acked rate is what
    was sent over the last >= 1 s, so a cut soon after another lands lower (seed 2: 8.28 ->
    5.85 Mbit/s, acked 6.89, 6.84 arrived). The 0.6 x link floor this test had held only
    for the Bayesian estimator, which read the link's bursts (docs/sim.md)."""
    register_scheme("test-gcc-log")(_LoggingGcc)
    try:
        flow = FlowSpec(scheme="test-gcc-log", start_mbps=0.3)
        ue = UeSpec(channel=ChannelSpec("constant", rate_mbps=10.0), flows=[flow])
        eng = Engine(Scenario(name="c", duration_s=20.0, ues=[ue], timeseries_ms=250.0), seed)
        eng.run()
    finally:
        del SCHEMES["test-gcc-log"]
    ctrl = eng.flows[0].ctrl
    assert isinstance(ctrl, _LoggingGcc)
    late = [c for c in ctrl.cuts if c[0] >= 2.0]
    assert late, "no over-use after the start-up"
    for _, before, after, acked, cap, win in late:
        assert acked == pytest.approx(win, rel=0.15)
        want = 0.85 * acked - 5e3  # "slightly lower than the measured throughput"
        if want > before and cap is not None:
            want = 0.85 * cap
        assert after == pytest.approx(min(before, want))
    assert any(c[2] < c[1] for c in late)  # a back-off did happen
