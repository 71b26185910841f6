"""GCC's bandwidth probing (libwebrtc ProbeController / ProbeBitrateEstimator / AlrDetector,
``sim/cc/gcc_probe.py``) on constant links, against ``gcc-noprobe``'s slow start ramp."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pytest

from octoric.sim.cc import SCHEMES, Gcc, SchemeContext, register_scheme
from octoric.sim.cc.gcc_probe import ProbeBitrateEstimator, ProbeController
from octoric.sim.engine import Engine
from octoric.sim.scenario import ChannelSpec, FlowSpec, Scenario, UeSpec
from octoric.sim.video import ProbeCluster, VideoConfig, webrtc_video

pytestmark = pytest.mark.unit


@dataclass
class Run:
    eng: Engine
    t: np.ndarray  # end of each time-series bin (s)
    target: np.ndarray  # the scheme's target at the end of each bin (bit/s)
    sent: np.ndarray  # bytes the link delivered to the UE in each bin, as bit/s
    cap: np.ndarray  # the link's capacity in each bin (bit/s)

    @property
    def ctrl(self) -> Gcc:
        c = self.eng.flows[0].ctrl
        assert isinstance(c, Gcc)
        return c


def _run(
    scheme: str, mbps: float, seconds: float, start_mbps: float = 0.3,
    video: VideoConfig | None = None, params: dict[str, object] | None = None,
) -> Run:  # fmt: skip
    flow = FlowSpec(scheme=scheme, start_mbps=start_mbps, video=video or VideoConfig(),
                    params=dict(params or {}))  # fmt: skip
    ue = UeSpec(channel=ChannelSpec("constant", rate_mbps=mbps), flows=[flow])
    sc = Scenario(name="const", duration_s=seconds, ues=[ue], timeseries_ms=250.0)
    eng = Engine(sc, seed=3)
    eng.run()
    t = np.asarray(eng._ts_bins)
    dt = np.diff(t)
    cap = np.diff(np.asarray(eng.ts_ue_capacity)[:, 0]) * 8 / dt
    sent = np.diff(np.asarray(eng.ts_ue_delivered)[:, 0]) * 8 / dt
    target = np.asarray(eng.flows[0].ts_target[1:])
    return Run(eng, t[1:], target, sent, cap)


def test_gcc_probing_reaches_the_link_rate_quickly() -> None:
    r = _run("gcc", 10.0, 20.0)
    cap = float(np.median(r.cap))
    assert cap == pytest.approx(10e6, rel=0.02)  # the channel is what the test thinks it is
    # the initial exponential probe (3x, 6x start) and further 2x probes climb to the link
    hist = r.ctrl.prober.history if r.ctrl.prober else []
    assert [why for _, why, _ in hist[:2]] == ["initial", "initial"]
    assert any(why == "further" for _, why, _ in hist)
    reached = r.t[r.target >= 0.85 * cap]
    assert reached.size and reached[0] <= 2.0, "the target never reached 85 % of the link"
    # ... and the sender follows: the link carries >= 80 % of its capacity within 3 s
    assert (r.sent[r.t <= 3.0] >= 0.8 * cap).any()
    # Afterwards GCC's AIMD backs off on over-use (encoder overshoot; to 0.85 x the acked
    # rate) and regains slowly (additive increase near the link capacity): on average it
    # stays well above the 8 %/s ramp's <= 10 % (this seed: ~71 % sent, ~79 % target).
    late = r.t >= 1.0
    assert float(np.mean(r.sent[late])) >= 0.6 * cap
    assert float(np.median(r.target[late])) >= 0.6 * cap
    assert r.eng.flows[0].sender is not None and r.eng.flows[0].sender.padding_bytes > 0


def test_gcc_noprobe_ramps_at_eight_percent_per_second() -> None:
    r = _run("gcc-noprobe", 10.0, 12.0)
    cap = float(np.median(r.cap))
    assert r.ctrl.prober is None
    assert r.eng.flows[0].sender is not None and r.eng.flows[0].sender.padding_bytes == 0
    at10 = float(r.target[np.searchsorted(r.t, 10.0)])
    assert at10 < 0.5 * cap
    # growth of the target between 2 s and 10 s: ln-slope ~ ln(1.08) per second
    m = (r.t >= 2.0) & (r.t <= 10.0)
    slope = np.polyfit(r.t[m], np.log(r.target[m]), 1)[0]
    assert slope == pytest.approx(math.log(1.08), rel=0.25)
    assert float(r.target[m][0]) < float(r.target[m][-1])


def test_probe_cluster_estimates_match_the_link() -> None:
    """Start at 1 Mbit/s on a 4 Mbit/s link: the 3 Mbit/s cluster fits (estimate = its own
    rate), the 6 Mbit/s and later ones saturate it (estimate = 0.95 x the receive rate)."""
    r = _run("gcc", 4.0, 3.0, start_mbps=1.0)
    cap = float(np.median(r.cap))
    ctrl = r.ctrl
    assert ctrl.prober is not None
    final: dict[int, float] = {}
    for cid, est in ctrl.probe_est.results:
        final[cid] = est
    clusters = ctrl.prober.clusters
    below = [c for c in clusters.values() if c.bps < 0.8 * cap and c.id in final]
    above = [c for c in clusters.values() if c.bps > 1.2 * cap and c.id in final]
    assert below and above
    for c in below:
        assert final[c.id] == pytest.approx(c.bps, rel=0.15)
    for c in above:
        assert final[c.id] == pytest.approx(cap, rel=0.15)


def _packets(n: int, size: int, send_bps: float, link_bps: float) -> Iterator[tuple[int, int]]:
    """(send, receive) times of ``n`` packets paced at ``send_bps`` into a FIFO of
    ``link_bps`` with 20 ms propagation delay."""
    free = 0.0
    for i in range(n):
        s = i * size * 8e6 / send_bps
        free = max(free, s) + size * 8e6 / link_bps
        yield int(s), int(free + 20_000)


@pytest.mark.parametrize(
    ("probe_mbps", "link_mbps", "want_mbps"),
    [
        (2.0, 4.0, 2.0),  # fits: the send rate
        (4.2, 4.0, 4.0),  # receive >= 0.9 x send: min(send, receive) = the receive rate
        (6.0, 4.0, 0.95 * 4.0),  # saturated (receive < 0.9 x send): 0.95 x receive
        (20.0, 7.0, 0.95 * 7.0),
    ],
)
def test_probe_bitrate_estimator_on_a_fifo(
    probe_mbps: float, link_mbps: float, want_mbps: float
) -> None:
    c = ProbeCluster(7, probe_mbps * 1e6, 5, math.ceil(probe_mbps * 1e6 * 0.015 / 8))
    est = ProbeBitrateEstimator()
    n = max(5, math.ceil(c.min_bytes / 1200))
    for s, a in _packets(n, 1200, c.bps, link_mbps * 1e6):
        est.on_probe_packet(c, s, a, 1200)
    got = est.fetch_and_reset()
    assert got is not None
    assert got == pytest.approx(want_mbps * 1e6, rel=0.01)
    assert est.fetch_and_reset() is None  # fetched once
    # too few packets back: no estimate
    est2 = ProbeBitrateEstimator()
    for s, a in list(_packets(n, 1200, c.bps, link_mbps * 1e6))[:3]:
        est2.on_probe_packet(c, s, a, 1200)
    assert est2.fetch_and_reset() is None


def test_probe_controller_initial_and_further_probes() -> None:
    p = ProbeController(start_bps=300e3, max_bps=5e6)
    p.process(0, None)
    assert [c.bps for c in p.take_new(0)] == [900e3, 1800e3]
    assert all(c.min_probes == 5 and c.min_bytes == math.ceil(c.bps * 0.015 / 8)
               for c in p.take_new(0))  # fmt: skip
    p.set_estimate(100_000, 1.2e6)  # below 0.7 x 1.8 Mbit/s: no further probe
    assert len(p.history) == 2
    p.set_estimate(150_000, 1.7e6)
    assert p.history[-1][1] == "further" and p.history[-1][2].bps == 3.4e6
    p.set_estimate(250_000, 3.3e6)  # 2 x 3.3 capped at max_bps: probe, but no further one
    assert p.history[-1][2].bps == 5e6 and p.state == "complete"


def test_alr_probes_fire_when_the_app_is_rate_limited() -> None:
    limited = VideoConfig(max_bps=1e6)  # the encoder never sends more than 1 Mbit/s
    # periodic ALR probing is off by default, as for a camera stream in Chromium; a stream
    # that turns it on (screen share does) probes every 5 s while app-limited
    r = _run("gcc", 10.0, 22.0, video=limited, params={"alr_probing": True})
    ctrl = r.ctrl
    assert ctrl.prober is not None
    assert ctrl.alr.periods, "the ALR detector never saw the sender app-limited"
    alr = [(t, c) for t, why, c in ctrl.prober.history if why == "alr"]
    assert len(alr) >= 3
    starts = [t for t, _ in alr]
    # every 5 s (libwebrtc alr_probing_interval) from the ALR start, to a frame tick
    gaps = np.diff([ctrl.alr.periods[0][0], *starts])
    assert (gaps >= 5_000_000).all() and (gaps <= 5_000_000 + 34_000).all()
    cap = float(np.median(r.cap))
    for _, c in alr:  # at 2x the estimate, which the earlier probes put near the link rate
        assert c.bps == pytest.approx(2 * 0.95 * cap, rel=0.15)

    # the ALR probes' own results are near the link rate too
    ids = {c.id for _, c in alr}
    res = [v for cid, v in ctrl.probe_est.results if cid in ids]
    assert res and all(v == pytest.approx(cap, rel=0.15) for v in res)
    # the app itself stayed rate-limited
    assert float(np.mean(r.sent[r.t > 2.0])) < 0.2 * cap


def test_no_alr_probes_by_default() -> None:
    """A camera stream in Chromium has periodic ALR probing off (libwebrtc turns it on for
    screen share, for video only by field trial): an app-limited flow does not probe."""
    r = _run("gcc", 10.0, 22.0, video=VideoConfig(max_bps=1e6))
    ctrl = r.ctrl
    assert ctrl.prober is not None and ctrl.alr.periods
    assert not [c for _, why, c in ctrl.prober.history if why == "alr"]


def test_no_alr_probes_without_alr_or_when_disabled() -> None:
    r = _run("gcc", 10.0, 16.0)  # the encoder follows the estimate: never app-limited
    assert r.ctrl.prober is not None
    assert not [1 for _, why, _ in r.ctrl.prober.history if why == "alr"]

    def no_alr(ctx: SchemeContext) -> Gcc:
        return Gcc(SchemeContext(ctx.rtt_ms, ctx.start_bps, ctx.min_bps, ctx.max_bps,
                                 {**ctx.params, "alr_probing": False}))  # fmt: skip

    register_scheme("test-gcc-no-alr")(no_alr)
    try:
        r2 = _run("test-gcc-no-alr", 10.0, 16.0, video=VideoConfig(max_bps=1e6))
    finally:
        del SCHEMES["test-gcc-no-alr"]
    assert r2.ctrl.prober is not None and r2.ctrl.alr.periods  # app-limited, yet ...
    assert not [1 for _, why, _ in r2.ctrl.prober.history if why == "alr"]


def test_probe_controller_probes_after_a_large_drop_only_as_libwebrtc_does() -> None:
    """RequestProbe: after the estimate fell below 0.66x in one update, a detector recovery
    (under-use -> normal) in ALR or within 3 s of its end probes at 0.85x the rate before the
    drop, once per 5 s, within 5 s of the drop, if the estimate is still below 0.95x that."""

    def dropped(at_us: int = 2_000_000) -> ProbeController:
        p = ProbeController(start_bps=300e3, max_bps=50e6)
        p.process(0, None)
        p.set_estimate(100_000, 9e6)  # a further probe (18 Mbit/s) ...
        p.process(1_200_000, None)  # ... whose result never came: probing complete
        assert p.state == "complete"
        p.set_estimate(at_us, 3e6)  # 3 < 0.66 x 9: a large drop
        return p

    p = dropped()
    p.request_probe(2_400_000, alr_start_us=None)  # not app-limited, ALR never ended: none
    assert p.history[-1][1] != "drop"
    p.set_alr_ended(1_900_000)
    p.request_probe(2_400_000, alr_start_us=None)  # ALR ended 0.5 s ago: probe
    assert p.history[-1][1] == "drop" and p.history[-1][2].bps == pytest.approx(0.85 * 9e6)
    assert p.state == "complete"  # a single cluster, no further probing
    n = len(p.history)
    p.request_probe(4_000_000, alr_start_us=1_000_000)  # within 5 s of the last drop probe
    assert len(p.history) == n

    p = dropped()
    p.request_probe(2_400_000, alr_start_us=1_000_000)  # in ALR: probe
    assert p.history[-1][1] == "drop"

    p = dropped()
    p.set_alr_ended(1_900_000)
    p.request_probe(5_000_000, alr_start_us=None)  # ALR ended 3.1 s ago: too late
    p.request_probe(7_100_000, alr_start_us=1_000_000)  # 5.1 s after the drop: too late
    assert all(why != "drop" for _, why, _ in p.history)

    p = dropped()
    p.set_estimate(2_100_000, 7.5e6)  # recovered to >= 0.95 x 0.85 x 9 Mbit/s already
    p.request_probe(2_400_000, alr_start_us=1_000_000)
    assert all(why != "drop" for _, why, _ in p.history)

    p = dropped()
    p.set_estimate(2_100_000, 2.5e6)  # 2.5 > 0.66 x 3: no new large drop ...
    assert p.bitrate_before_last_large_drop == 9e6  # ... the one from 9 Mbit/s stands


def test_gcc_probes_back_after_a_drop_that_follows_an_app_limited_period() -> None:
    """An app-limited sender (3 Mbit/s of content on a 10 Mbit/s link, in ALR) whose link
    falls to 2 Mbit/s at 4 s: the over-use cuts the estimate from ~9 to ~1.7 Mbit/s, and when
    the detector has recovered, within 3 s of the ALR's end, GCC probes once at 0.85x the
    estimate before the drop; the probe finds the 2 Mbit/s link and the estimate stays low."""
    flow = FlowSpec(scheme="gcc", start_mbps=0.3, video=VideoConfig(max_bps=3e6))
    ch = ChannelSpec("pulse", high_mbps=10.0, low_mbps=2.0, switch_s=4.0)
    eng = Engine(Scenario(name="drop", duration_s=8.0, ues=[UeSpec(channel=ch, flows=[flow])],
                          timeseries_ms=250.0), seed=1)  # fmt: skip
    eng.run()
    ctrl = eng.flows[0].ctrl
    assert isinstance(ctrl, Gcc) and ctrl.prober is not None
    p = ctrl.prober
    drops = [(t, c) for t, why, c in p.history if why == "drop"]
    assert len(drops) == 1
    t, c = drops[0]
    assert 4.0e6 < p.time_of_last_large_drop_us < t < p.time_of_last_large_drop_us + 5e6
    assert c.bps == pytest.approx(0.85 * p.bitrate_before_last_large_drop)
    assert p.bitrate_before_last_large_drop > 0.8 * 10e6  # the estimate before the link fell
    ended = [e for _, e in ctrl.alr.periods if e is not None]
    assert ended and 0 <= t - ended[-1] < 3e6
    assert ctrl.rate < 3e6  # the probe result did not lift it above the 2 Mbit/s link


@pytest.mark.xfail(
    strict=True,
    reason=(
        "not met by the libwebrtc-faithful model (issue #47, 2026-11-28): with M125's default "
        "RobustThroughputEstimator a back-off soon after another lands at 0.85 x the rate "
        "sent over the last second, and the additive increase (one packet per "
        "2 x (rtt + 100 ms)) climbs ~35 kbit/s/s at 10 Mbit/s: 0.705 mean over 10-20 s "
        "(0.61-0.84), 0.752 over 10-60 s; the model before gave 0.886. With the share of "
        "its estimate Chromium 156 leaves its encoder (sim/video.py, measured: ~10 % less "
        "at 10 Mbit/s) 0.587 over 10-20 s (0.56-0.64), 0.657 over 10-60 s. Chromium cannot "
        "be measured at 10 Mbit/s here (its 640x360 VP8 stops near 3 Mbit/s); where its "
        "encoder fills the link (1.5 Mbit/s) it used 84 %, and "
        "tests/experiments/test_webrtc_model_check.py holds the model to it. Strict: a model "
        "change that meets the criterion again must be checked."
    ),
)
def test_gcc_settles_at_85_percent_of_a_constant_link_with_webrtc_video() -> None:
    """Issue #14's GCC criterion: on a constant 10 Mbit/s link, from 0.3 Mbit/s, GCC with its
    probing carries >= 85 % of the link over 10-20 s, averaged over 10 seeds (the lower end of
    a 95 % interval), no seed below 80 %. The sender is WebRTC's as the OCC paper ran it
    (``webrtc_video``: x264-like encoder in a 4-frame VBV buffer, key frames every 3000
    frames as libwebrtc's default)."""
    utils = []
    for seed in range(1, 11):
        flow = FlowSpec(scheme="gcc", start_mbps=0.3, video=webrtc_video())
        ue = UeSpec(channel=ChannelSpec("constant", rate_mbps=10.0), flows=[flow])
        eng = Engine(Scenario(name="c", duration_s=20.0, ues=[ue], timeseries_ms=250.0), seed)
        eng.run()
        t = np.asarray(eng._ts_bins)
        d = np.asarray(eng.ts_ue_delivered)[:, 0]
        cap = np.asarray(eng.ts_ue_capacity)[:, 0]
        i10 = int(np.searchsorted(t, 10.0))
        utils.append(float((d[-1] - d[i10]) / (cap[-1] - cap[i10])))
    u = np.asarray(utils)
    low = u.mean() - 1.96 * u.std(ddof=1) / math.sqrt(len(u))
    assert low >= 0.85, f"utilization {u.round(3)}: mean {u.mean():.3f}, 95 % low {low:.3f}"
    assert u.min() >= 0.80
