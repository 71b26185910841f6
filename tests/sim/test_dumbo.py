"""Video over the packet-level transport, RoCC and Dumbo (issue #14), each on the behaviour that
defines it in the Dumbo thesis (Rahmanian, MIT 2023): RoCC keeps about gamma x min_rtt of queue
at full utilization (§5.2.1); Dumbo's dummy packets fill the window when the encoder lags, so a
window scheme finds a link's capacity in about a second where it takes the encoder's lag
without them (§6.2.1, the pulse-link convergence experiment); its latency control lowers the
encoder's target by the standing media queue and skips frames the queue cannot take (§4)."""

from __future__ import annotations

import json
from collections import deque
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from octoric.cli import main
from octoric.sim.cc.dumbo import DumboControl, split_dumbo
from octoric.sim.cc.rocc import Rocc
from octoric.sim.engine import Engine
from octoric.sim.errors import ScenarioError
from octoric.sim.packets import Packet
from octoric.sim.scenario import ChannelSpec, FlowSpec, Scenario, UeSpec
from octoric.sim.summary import build_summary
from octoric.sim.transport import (
    MIN_PADDING,
    MSS,
    RateSample,
    TransportSender,
    WindowContext,
    WindowScheme,
)
from octoric.sim.video import VideoConfig, VideoSender, WiredPathConfig

pytestmark = pytest.mark.unit


def _bulk_rocc(gamma: float) -> Engine:
    flow = FlowSpec(traffic="bulk", scheme="rocc", params={"gamma": gamma},
                    path=WiredPathConfig(rtt_ms=50.0))  # fmt: skip
    ue = UeSpec(channel=ChannelSpec("constant", rate_mbps=10.0), flows=[flow],
                queue_limit_bytes=4_000_000)  # fmt: skip
    eng = Engine(Scenario(name="rocc", duration_s=20.0, ues=[ue], timeseries_ms=250.0), 3)
    eng.run()
    return eng


def _late_utilization(eng: Engine, after_s: float, cap_bps: float) -> float:
    bins = eng._ts_bins
    d = [x[0] for x in eng.ts_ue_delivered]
    k0 = next(k for k, t in enumerate(bins) if t >= after_s)
    return (d[-1] - d[k0]) * 8 / (bins[-1] - bins[k0]) / cap_bps


@pytest.mark.parametrize("gamma", [0.1, 0.5])
def test_rocc_keeps_gamma_min_rtt_of_queue_at_full_utilization(gamma: float) -> None:
    """Eq. 5.1: the window is what was acknowledged over (1 + gamma) x min_rtt, so the RTT
    settles at (1 + gamma) x min_rtt (plus C's 1.2 ms at 10 Mbit/s) with the link full."""
    eng = _bulk_rocc(gamma)
    f = eng.flows[0]
    assert f.tx is not None
    rtt = np.asarray(f.tx.rtt_samples_ms)
    late = rtt[len(rtt) // 2 :]
    ratio = float(np.median(late)) / (f.tx.min_rtt_us / 1000.0)
    assert 1 + gamma <= ratio <= 1 + gamma + 0.05
    assert _late_utilization(eng, 10.0, 10e6) >= 0.97


def test_rocc_window_is_the_recent_acked_bytes_plus_c() -> None:
    class _S:
        min_rtt_us = 50_000

    cc = Rocc(WindowContext())
    rs: Any = type("Rs", (), {"rtt_us": 50_000, "acked": MSS})
    for t in range(0, 200_000, 1_000):  # one MSS acknowledged per ms for 200 ms
        cc.on_ack(t, rs, _S())  # type: ignore[arg-type]
    # acknowledged within the last 1.1 x 50 ms = 55 ms: 56 ACKs (both ends), + C
    assert cc.cwnd() == 56 * MSS + 1500
    assert cc.pacing_bps() == pytest.approx(cc.cwnd() * 8e6 / 50_000)


def _pulse(scheme: str, lag_ms: float = 2000.0) -> tuple[Engine, dict[str, Any]]:
    """The thesis's convergence experiment (§6.2.1): 3 Mbit/s for 40 s, 0.5 Mbit/s for 40 s,
    3 Mbit/s again; 50 ms RTT, no drops; an encoder that takes seconds to follow its target
    (thesis Fig. 3-8: ~3 s)."""
    video, path = VideoConfig(lag_ms=lag_ms), WiredPathConfig(rtt_ms=50.0)
    flow = FlowSpec(traffic="video", scheme=scheme, start_mbps=0.5, video=video, path=path)
    ue = UeSpec(channel=ChannelSpec("pulse", high_mbps=3.0, low_mbps=0.5, switch_s=40.0),
                flows=[flow])  # fmt: skip
    eng = Engine(Scenario(name="pulse", duration_s=120.0, ues=[ue], timeseries_ms=250.0), 1)
    wall = eng.run()
    return eng, build_summary(eng, wall)["flows"][0]


def _convergence_s(eng: Engine, up_at_s: float, cap_bps: float = 3e6) -> float:
    """Seconds from the link's step up until the delivered rate first reaches 90 % of it."""
    bins = eng._ts_bins
    d = [x[0] for x in eng.ts_ue_delivered]
    for k in range(1, len(bins)):
        if bins[k] > up_at_s and (d[k] - d[k - 1]) * 8 / (bins[k] - bins[k - 1]) >= 0.9 * cap_bps:
            return bins[k] - up_at_s
    return float("inf")


def test_dumbo_padding_finds_the_capacity_the_lagging_encoder_does_not() -> None:
    """RoCC with a lagging encoder converges only as fast as the encoder (thesis: 21.1 s);
    with Dumbo's dummy packets its window grows at once (thesis: 0.7 s), the encoder follows
    the target at its own pace and the padding is a small share of the bytes."""
    plain, fp = _pulse("rocc")
    dumbo, fd = _pulse("rocc+dumbo")
    t_plain, t_dumbo = _convergence_s(plain, 80.0), _convergence_s(dumbo, 80.0)
    assert t_dumbo <= 2.0
    assert t_plain >= 5 * t_dumbo
    assert fp["padding_share"] == 0.0 and fp["padding_bytes"] == 0
    assert 0.0 < fd["padding_share"] < 0.15
    assert _late_utilization(dumbo, 100.0, 3e6) >= 0.97
    assert fd["frame_latency_ms"]["p95"] < 300.0
    assert fd["network_latency_ms"]["p95"] < 100.0  # a gamma x min_rtt queue, not the encoder's


class _Media:
    """A media queue as the transport reads it (a VideoSender's fields)."""

    def __init__(self, sizes: list[int]) -> None:
        self.pending: deque[Packet] = deque(Packet(0, -1, s, 0, msg=i) for i, s in enumerate(sizes))
        self.pending_bytes = sum(sizes)
        self.frames = type("F", (), {"sent_us": [0] * len(sizes)})()
        self.msgs = type("M", (), {"frame": list(range(len(sizes)))})()

    send_head = VideoSender.send_head  # the sender's own bookkeeping, on these fields
    drop_head = VideoSender.drop_head


class _Window(WindowScheme):
    """A fixed window, no pacing."""

    def __init__(self, cwnd: int) -> None:
        super().__init__(WindowContext())
        self.w = cwnd

    def cwnd(self) -> int:
        return self.w

    def on_ack(self, now_us: int, rs: RateSample, sender: TransportSender) -> None:
        pass


def test_media_first_then_padding_within_the_window_and_no_retransmission() -> None:
    media = _Media([1200, 1200])
    tx = TransportSender(0, _Window(4 * MSS), media=media, padding=True)
    out = tx.send(0)
    assert [p.msg for p in out[:2]] == [0, 1] and all(p.msg == -1 for p in out[2:])
    assert media.pending_bytes == 0 and tx.media_bytes == 2400
    assert tx.inflight <= 4 * MSS and 4 * MSS - tx.inflight < MIN_PADDING  # the window filled
    assert tx.padding_bytes == sum(p.size for p in out[2:])
    tx.on_timer(tx.rto_at or 0)  # everything in flight is lost
    assert tx.lost_bytes == 2400 + tx.padding_bytes
    assert tx.retx_bytes_pending == 0  # real-time media is never sent again

    quiet = TransportSender(0, _Window(4 * MSS), media=_Media([1200]))
    assert len(quiet.send(0)) == 1 and quiet.app_limited_until > 0  # no padding: app-limited


def test_dumbo_control_subtracts_the_standing_queue_and_skips_frames() -> None:
    ctl = DumboControl(start_bps=1e6)
    assert ctl.decide(0, None, 0, 5e4).target_bps == 1e6  # no RTT yet: the start rate
    ctl.on_queue(0, 5_000)
    ctl.on_queue(40_000, 2_000)
    ctl.on_queue(80_000, 9_000)
    # the smallest queue of the last 100 ms is 2000 bytes: 2000 x 8 / 0.1 s = 160 kbit/s less
    d = ctl.decide(100_000, 2e6, 9_000, 5e4)
    assert d.target_bps == pytest.approx(2e6 - 160e3) and not d.skip
    ctl.on_queue(150_000, 9_000)
    assert ctl.standing_bytes(200_000) == 9_000  # the 2000-byte queue is older than 100 ms
    # 30 kB would take 30e3 x 8 / target > 100 ms to drain: the frame is skipped
    assert ctl.decide(200_000, 2e6, 30_000, 5e4).skip


def test_standing_queue_is_the_window_minimum_of_every_size_in_force() -> None:
    """The sliding-window minimum gives what a scan of every change in the window gives
    (random queue sizes and query times, 20 000 changes)."""
    rng = np.random.default_rng(7)
    ctl = DumboControl(start_bps=1e6)
    changes: list[tuple[int, int]] = []  # every change, for the scan
    t = 0
    for _ in range(20_000):
        t += int(rng.integers(0, 30_000))
        size = int(rng.integers(0, 8)) * 1000  # repeats and ties on purpose
        ctl.on_queue(t, size)
        if not changes or changes[-1][1] != size:
            changes.append((t, size))
        if rng.random() < 0.3:
            now = t + int(rng.integers(0, 200_000))
            start = now - 100_000
            # in force within [start, now]: changes after start, and the one in force at start
            before = [c for c in changes if c[0] <= start]
            inside = [c[1] for c in changes if c[0] > start]
            want = min(inside + ([before[-1][1]] if before else []))
            assert ctl.standing_bytes(now) == want
            t = now


def test_split_dumbo_and_a_rate_scheme_with_padding_is_refused() -> None:
    assert split_dumbo("rocc+dumbo") == ("rocc", True) and split_dumbo("gcc") == ("gcc", False)
    ue = UeSpec(
        channel=ChannelSpec("constant", rate_mbps=5.0), flows=[FlowSpec(scheme="gcc+dumbo")]
    )
    with pytest.raises(ScenarioError, match="window scheme"):
        Engine(Scenario(name="x", duration_s=1.0, ues=[ue]), 1)


def test_cli_runs_video_over_the_transport(tmp_path: Path) -> None:
    out = tmp_path / "s.json"
    rc = main(["sim", "run", "--scenario", "static", "--duration", "5", "--scheme",
               "copa+dumbo", "--json", str(out)])  # fmt: skip
    assert rc == 0
    f = json.loads(out.read_text())["flows"][0]
    assert f["traffic"] == "video" and f["scheme"] == "copa+dumbo" and f["transport"] == "packet"
    assert f["frames_decoded"] > 0 and f["padding_share"] is not None
    rc = main(["sim", "run", "--scenario", "static", "--duration", "3", "--traffic", "video",
               "--scheme", "rocc", "--json", str(out)])  # fmt: skip
    f = json.loads(out.read_text())["flows"][0]
    assert rc == 0 and f["window_scheme"] == "rocc" and f["padding"] is False


# --- MORC (CHANTS'18) ---------------------------------------------------------------------------


def test_morc_utility_is_the_papers_formula() -> None:
    from octoric.sim.cc.morc import utility

    # at the target RTT (RTT_min + 60 ms) without loss the utility is the throughput
    assert utility(10.0, 0.0, 117.0, 57.0) == pytest.approx(10.0)
    # 0.05 % of the throughput per ms off the target, either side; 10x the loss rate
    assert utility(10.0, 0.0, 57.0, 57.0) == pytest.approx(10.0 * (1 - 0.03))
    assert utility(10.0, 0.0, 177.0, 57.0) == pytest.approx(10.0 * (1 - 0.03))
    assert utility(10.0, 0.01, 117.0, 57.0) == pytest.approx(9.0)
    assert utility(10.0, 0.2, 117.0, 57.0) < 0  # high loss: negative (the paper's footnote)


def test_morc_shortcuts_skip_the_trial_the_rtt_makes_pointless() -> None:
    from octoric.sim.cc.morc import ADJUST, DECIDE, Morc, _Mi

    cc = Morc(WindowContext())
    cc.min_rtt_ms = 50.0
    cc.rate = 10e6
    empty = _Mi(10e6, "adjust", 0, 0, mean_rtt_ms=52.0, recv_bps=10e6)
    cc._decide(empty)  # buffers empty: up, no trial
    assert cc.state == ADJUST and cc.adjust_dir == 1 and cc.rate == pytest.approx(10.1e6)
    cc.rate = 10e6
    full = _Mi(10e6, "adjust", 0, 0, mean_rtt_ms=50.0 + 60 + 61, recv_bps=9e6)
    cc._decide(full)  # queues full: down, no trial
    assert cc.adjust_dir == -1 and cc.rate == pytest.approx(9.9e6)
    cc.rate = 10e6
    cc._decide(_Mi(10e6, "adjust", 0, 0, mean_rtt_ms=100.0, recv_bps=9.5e6))
    assert cc.state == DECIDE  # in between: two randomized pairs at r (1 +- 1 %)
    assert sorted(r for r, _ in cc.plan) == pytest.approx([9.9e6, 9.9e6, 10.1e6, 10.1e6])


def test_morc_going_down_with_queues_full_never_returns_to_a_higher_rate() -> None:
    """Allegro's rate adjusting returns to the previous rate when the utility falls; MORC
    avoids higher rates while the queues are full (CHANTS'18 §3), so on the way down a worse
    utility moves on down then (with 70 % loss every MI's utility is noise around -6 T, and
    returning up kept the model at 3x the link for the whole run)."""
    from octoric.sim.cc.morc import ADJUST, DECIDE, Morc, _Mi

    def adjusting(prev_rate: float) -> Morc:
        cc = Morc(WindowContext())
        cc.min_rtt_ms, cc.state, cc.adjust_dir, cc.adjust_n = 40.0, ADJUST, -1, 2
        cc.adjust_prev = _Mi(prev_rate, "adjust", 0, 0, utility=-40.0)
        return cc

    full = _Mi(29.4e6, "adjust", 0, 0, recv_bps=10e6, mean_rtt_ms=300.0, utility=-50.0)
    cc = adjusting(30e6)
    cc._use(full, None)  # type: ignore[arg-type]  # the adjusting branch reads no sender
    assert cc.state == ADJUST and cc.rate == pytest.approx(29.4e6 * (1 - 3 * 0.01))
    # queues not full: Allegro's rule, back to the previous rate and decide
    not_full = _Mi(29.4e6, "adjust", 0, 0, recv_bps=28e6, mean_rtt_ms=100.0, utility=-50.0)
    cc = adjusting(30e6)
    cc._use(not_full, None)  # type: ignore[arg-type]
    assert cc.state == DECIDE and cc.rate == pytest.approx(30e6)


def test_morc_fills_a_constant_link() -> None:
    """The MORC paper's lab setting (buffers of 300 ms): after its slow start and the
    learning's first corrections, MORC keeps the link full."""
    flow = FlowSpec(traffic="bulk", scheme="morc", path=WiredPathConfig(rtt_ms=50.0))
    ue = UeSpec(channel=ChannelSpec("constant", rate_mbps=10.0), flows=[flow],
                queue_limit_bytes=375_000)  # fmt: skip
    eng = Engine(Scenario(name="morc", duration_s=40.0, ues=[ue], timeseries_ms=500.0), 3)
    eng.run()
    from octoric.sim.cc.morc import SLOW_START, Morc

    f = eng.flows[0]
    assert f.tx is not None and isinstance(f.tx.scheme, Morc)
    assert f.tx.scheme.state != SLOW_START
    assert _late_utilization(eng, 20.0, 10e6) >= 0.95


# --- the Octopus transport (SEC'23 §4.2) ----------------------------------------------------------


def test_octobbr_drops_whole_messages_in_its_send_buffer() -> None:
    """OctoBBR on a link slower than the encoder's start: Algorithm 1 in the send buffer drops
    messages made obsolete by a newer dropper message, whole: every message the receiver saw
    arrived complete (no loss elsewhere: a constant link, a deep gNB queue)."""
    video = VideoConfig(svc="temporal", gop=10)
    flow = FlowSpec(traffic="video", scheme="octobbr", start_mbps=4.0, video=video,
                    path=WiredPathConfig(rtt_ms=40.0))  # fmt: skip
    ue = UeSpec(channel=ChannelSpec("constant", rate_mbps=1.0), flows=[flow],
                queue_limit_bytes=4_000_000)  # fmt: skip
    eng = Engine(Scenario(name="octobbr", duration_s=20.0, ues=[ue]), 2)
    wall = eng.run()
    f = eng.flows[0]
    assert f.tx is not None and f.sender is not None and f.receiver is not None
    assert f.sender.cfg.octopus  # the headers are on
    assert f.tx.buffer_dropper is not None and f.tx.buffer_dropper.stats.dropped_msgs_by_msg > 0
    assert f.tx.buffer_dropped_bytes > 0 and f.tail_dropped_pkts == 0
    mt, got = f.sender.msgs, f.receiver.got
    settled = [m for m in range(len(got)) if mt.enc_us[m] < 18e6]
    assert all(got[m] in (0, mt.npkts[m]) for m in settled)
    assert any(got[m] == 0 for m in settled) and any(got[m] > 0 for m in settled)
    summary = build_summary(eng, wall)["flows"][0]
    assert summary["scheme"] == "octobbr" and summary["window_scheme"] == "bbr"
