"""Salsify*-style video (``--scheme salsify``, SEC'23 §6.1's baseline), on what defines it in
Salsify (NSDI'18 §4): the receiver's packet inter-arrival time measures the path, a frame goes
only if the path can take it without more than 100 ms of queue, else it is skipped, so the
frame rate follows the link within a frame and no standing queue builds."""

from __future__ import annotations

import numpy as np
import pytest

from octoric.sim.cc.salsify import TARGET_DELAY_US, SalsifyControl, SalsifyTransport
from octoric.sim.engine import Engine
from octoric.sim.scenario import ChannelSpec, FlowSpec, Scenario, UeSpec
from octoric.sim.summary import build_summary
from octoric.sim.transport import RateSample, TransportSender, WindowContext
from octoric.sim.video import VideoConfig, WiredPathConfig

pytestmark = pytest.mark.unit
STREAM = 5e6  # fixed quality: ~20.8 kB per frame at 30 fps


def _run(channel: ChannelSpec, seconds: float) -> Engine:
    video = VideoConfig(min_bps=STREAM, max_bps=STREAM)
    flow = FlowSpec(traffic="video", scheme="salsify", start_mbps=5.0, video=video,
                    path=WiredPathConfig(rtt_ms=60.0))  # fmt: skip
    ue = UeSpec(channel=channel, flows=[flow], queue_limit_bytes=375_000)
    eng = Engine(Scenario(name="salsify", duration_s=seconds, ues=[ue]), 1)
    eng.run()
    return eng


def _rs(seq: int, rtt_us: int) -> RateSample:
    return RateSample(seq=seq, acked=1200, delivered=0, interval_us=0, rtt_us=rtt_us,
                      prior_delivered=0, inflight=0, is_app_limited=False)  # fmt: skip


def test_tau_counts_only_back_to_back_packets() -> None:
    t = SalsifyTransport(WindowContext())
    snd = TransportSender(0, t)
    # a burst of 3 sent at 0, 100, 200 us arrives 2 ms apart; then a packet sent 30 ms later
    for seq, (sent, acked) in enumerate([(0, 60_000), (100, 62_000), (200, 64_000),
                                         (30_000, 90_000)]):  # fmt: skip
        t.on_ack(acked, _rs(seq, acked - sent), snd)
    assert t.tau_us == pytest.approx(2_000), "the idle time between frames is not a sample"
    ctl = SalsifyControl(t, snd, STREAM, 30.0, 1200)
    assert ctl.budget_bytes(0) == pytest.approx(TARGET_DELAY_US / 2_000 * 1200)
    assert ctl.budget_bytes(12_000) == pytest.approx((TARGET_DELAY_US / 2_000 - 10) * 1200)


def test_tau_measures_the_link() -> None:
    eng = _run(ChannelSpec("constant", rate_mbps=8.0), 10.0)
    tx = eng.flows[0].tx
    assert tx is not None and isinstance(tx.scheme, SalsifyTransport)
    pkt_bits = 1200 * 8  # a full media packet
    assert tx.scheme.tau_us == pytest.approx(pkt_bits / 8.0, rel=0.2)  # us at 8 Mbit/s


def test_on_a_pulse_link_the_frame_rate_follows_the_link_within_a_second() -> None:
    """8 Mbit/s, 1.5 Mbit/s from 10 s, 8 again from 20 s: 30 fps, then what 1.5 Mbit/s carries
    (at most 9 frames of 20.8 kB per second), 30 fps again within a second of the return, and
    no standing queue (frame latency p99 ~ the 100 ms target + a frame's transmission)."""
    eng = _run(ChannelSpec("pulse", high_mbps=8.0, low_mbps=1.5, switch_s=10.0), 30.0)
    f = eng.flows[0]
    assert f.sender is not None
    fps, _ = np.histogram(np.array(f.sender.frames.enc_us) / 1e6, bins=np.arange(0, 31))
    assert all(fps[1:10] >= 29), fps
    assert all(2 <= x <= 9 for x in fps[11:20]), fps
    assert all(fps[21:30] >= 29), fps
    s = build_summary(eng, 1.0)["flows"][0]
    assert s["frames_skipped"] > 150
    assert s["frame_latency_ms"]["p99"] < 250.0
