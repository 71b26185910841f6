"""GCC around its estimate as Chromium runs it (issue #47, ``sim/cc/gcc_cwnd.py``): the
congestion window with encoder pushback by frame dropping, and the RTT back-off when feedback
stops; then both in a GCC flow through an outage, against the model without them."""

from __future__ import annotations

import numpy as np
import pytest

from octoric.sim.cc.gcc import Gcc
from octoric.sim.cc.gcc_cwnd import (
    BACKOFF_FLOOR_BPS,
    MIN_CWND_BYTES,
    QUEUE_MS,
    CongestionWindowPushback,
    RttBackoff,
)
from octoric.sim.engine import Engine
from octoric.sim.scenario import ChannelSpec, FlowSpec, Scenario, UeSpec
from octoric.sim.video import webrtc_video


def test_window_is_target_times_min_feedback_rtt_plus_queue_averaged() -> None:
    cw = CongestionWindowPushback()
    cw.on_feedback(-1, 50.0, 1e6)
    assert cw.window_bytes == pytest.approx(1e6 / 8 * (50.0 + QUEUE_MS) / 1000)  # 50 kB
    cw.on_feedback(-1, 250.0, 1e6)  # the smallest of the last 32 reports' RTT stays 50 ms
    assert cw.window_bytes == pytest.approx(50_000)
    cw.on_feedback(-1, 90.0, 2e6)  # twice the target: the new window is averaged in
    assert cw.window_bytes == pytest.approx((50_000 + 100_000) / 2)
    cw.on_feedback(-1, 1.0, 10.0)  # never under 3000 bytes
    assert cw.window_bytes >= MIN_CWND_BYTES


def test_pushback_drops_at_most_every_other_frame_and_recovers() -> None:
    cw = CongestionWindowPushback()
    cw.on_feedback(-1, 50.0, 1e6)  # 50 kB window
    assert cw.drop_interval is None and not cw.drop_frame()
    for seq in range(70):  # up to 84 kB in flight, each sent packet an update
        cw.on_sent(seq, 1200, 1e6)
    # over the window from the 42nd packet (x0.95), over 1.5x it from the 63rd (x0.9)
    assert cw.ratio == pytest.approx(0.95**21 * 0.9**8, rel=1e-9)
    assert cw.drop_interval == 2  # the ratio is far down: every other frame
    assert cw.encoder_bps(1e6) == pytest.approx(0.5e6)
    drops = [cw.drop_frame() for _ in range(10)]
    assert sum(drops) == 5 and drops[0] and not drops[1]
    cw.on_feedback(69, 50.0, 1e6)  # everything reported: nothing in flight, ratio back to 1
    assert cw.in_flight_bytes == 0 and cw.ratio == 1.0 and cw.drop_interval is None
    assert cw.encoder_bps(1e6) == 1e6


def test_pushback_leaves_the_codec_minimum() -> None:
    cw = CongestionWindowPushback()
    cw.on_feedback(-1, 50.0, 31_000)
    for seq in range(200):
        cw.on_sent(seq, 1200, 31_000)
    # target 31 kbit/s: at most 1 kbit/s over the codec's 30 kbit/s can be taken away
    assert cw.drop_interval == 31


def test_rtt_backoff_only_after_three_seconds_without_fresh_feedback() -> None:
    b = RttBackoff()
    b.on_sent(10_000_000)
    assert not b.above_limit()  # no feedback ever: libwebrtc never backs off
    b.on_feedback(1_000_000, 40_000)
    b.on_sent(3_900_000)  # 2.9 s + 40 ms: under the 3 s limit
    assert b.backoff(3_900_000, 1e6) is None
    b.on_sent(4_100_000)
    assert b.backoff(4_100_000, 1e6) == pytest.approx(0.8e6)
    assert b.backoff(4_600_000, 0.8e6) is None  # once a second
    assert b.backoff(5_100_000, 0.8e6) == pytest.approx(0.64e6)
    assert b.backoff(6_200_000, BACKOFF_FLOOR_BPS) is None  # not under 5 kbit/s
    b.on_feedback(6_300_000, 40_000)
    assert not b.above_limit()


def _outage_run(congestion_window: bool) -> tuple[Gcc, Engine]:
    """A GCC flow on a 3 Mbit/s link that falls to 20 kbit/s for 6 s at 10 s."""
    flow = FlowSpec(scheme="gcc", start_mbps=0.3, max_mbps=1.7, video=webrtc_video(fps=25.0),
                    params={"congestion_window": congestion_window})  # fmt: skip
    ch = ChannelSpec("pulse", high_mbps=3.0, low_mbps=0.02, switch_s=10.0)
    sc = Scenario(name="outage", duration_s=16.0, ues=[UeSpec(channel=ch, flows=[flow])],
                  timeseries_ms=250.0)  # fmt: skip
    eng = Engine(sc, seed=2)
    eng.run()
    ctrl = eng.flows[0].ctrl
    assert isinstance(ctrl, Gcc)
    return ctrl, eng


def test_an_outage_pushes_the_encoder_back_and_backs_the_target_off() -> None:
    ctrl, eng = _outage_run(True)
    _, eng_old = _outage_run(False)
    assert ctrl.cwnd is not None and ctrl.backoff is not None
    t = np.asarray(eng._ts_bins)
    tgt, tgt_old = np.asarray(eng.flows[0].ts_target), np.asarray(eng_old.flows[0].ts_target)
    before = float(np.mean(tgt[(t > 8) & (t <= 10)]))
    # feedback stops with the link: after 3 s the target falls 0.8x a second
    assert ctrl.backoff.backoffs >= 2
    assert float(tgt[t <= 16][-1]) < 0.7 * before
    # the model without the window holds its estimate through the outage (issue #47's "before")
    assert float(tgt_old[t <= 16][-1]) >= 0.9 * float(np.mean(tgt_old[(t > 8) & (t <= 10)]))
    # frames were dropped by the pushback (the window fills within ~350 ms of the outage)
    assert ctrl.cwnd.frames_dropped > 0
    assert eng.flows[0].sender is not None and eng_old.flows[0].sender is not None
    assert eng.flows[0].sender.skipped_frames == ctrl.cwnd.frames_dropped
    assert eng_old.flows[0].sender.skipped_frames == 0
