"""AWStream-style frame-rate adaptation (``--scheme awstream``, SEC'23 §6.1's baseline), on what
defines it: at a fixed quality it drops to the frame rate the transport's estimate carries as
soon as its application queue builds, and climbs back one configuration at a time, each only
after its queue has stayed empty for 2 s ("overly conservative in increasing its sending
rate", SEC'23 §6.1)."""

from __future__ import annotations

import numpy as np
import pytest

from octoric.sim.cc.awstream import FPS_LADDER, AwstreamControl
from octoric.sim.engine import Engine
from octoric.sim.scenario import ChannelSpec, FlowSpec, Scenario, UeSpec
from octoric.sim.summary import build_summary
from octoric.sim.video import VideoConfig, WiredPathConfig

pytestmark = pytest.mark.unit
FRAME_US = 33_333
STREAM = 5e6  # the fixed quality at 30 fps: ~20.8 kB per frame


def _frames(ctl: AwstreamControl, t0: int, n: int, queue: int, est: float) -> list[bool]:
    """Encoded (True) or skipped for ``n`` frames from ``t0``."""
    return [not ctl.decide(t0 + i * FRAME_US, est, queue, 50e3).skip for i in range(n)]


def test_degrades_at_once_to_the_frame_rate_the_estimate_carries() -> None:
    ctl = AwstreamControl(STREAM)
    assert all(_frames(ctl, 0, 30, 0, 8e6)), "30 fps while nothing queues"
    # the queue holds 3 frames; BBR says 1.2 Mbit/s: 6 fps (1.0 Mbit/s) is the best that fits
    enc = _frames(ctl, 1_000_000, 30, 3 * 20_900, 1.2e6)
    assert ctl.fps == 6 and ctl.state.degrades == 1
    assert sum(enc) == 6 and enc[:5] == [True, False, False, False, False]
    d = ctl.decide(2_000_000, 1.2e6, 3 * 20_900, 50e3)
    assert d.target_bps == STREAM, "the quality never changes"
    ctl.decide(2_100_000, 0.1e6, 3 * 20_900, 50e3)
    assert ctl.fps == FPS_LADDER[-1], "below every configuration: the lowest"


def _fps_changes(ctl: AwstreamControl, frames: int, queue: dict[int, int]) -> list[tuple[int, int]]:
    """(source frame, new fps) of each change over ``frames`` frames at 30 fps; ``queue``: the
    media queue at a frame (empty unless given)."""
    out, fps = [], ctl.fps
    for i in range(frames):
        ctl.decide(i * FRAME_US, 8e6, queue.get(i, 0), 50e3)
        if ctl.fps != fps:
            fps = ctl.fps
            out.append((i, fps))
    return out


def test_upgrades_one_step_per_two_seconds_of_empty_queue() -> None:
    ctl = AwstreamControl(STREAM)
    ctl.decide(0, 1.2e6, 3 * 20_900, 50e3)
    assert ctl.fps == 6
    ctl.state.frame = 0
    changes = _fps_changes(ctl, 300, {})
    # the empty queue is first seen at frame 0 and must hold for 2 s of encoded frames: the
    # first encoded frame at least 2 s later is 65 at 6 fps (every 5th; 60 frames are 33 us
    # short of 2 s), then 126 at 10 fps (every 3rd), then 188 at 15 fps
    assert changes == [(65, 10), (126, 15), (188, 30)]
    assert ctl.state.upgrades == 3


def test_data_left_when_a_frame_comes_restarts_the_two_seconds() -> None:
    ctl = AwstreamControl(STREAM)
    ctl.decide(0, 1.2e6, 3 * 20_900, 50e3)
    ctl.state.frame = 0
    # at frame 30 (encoded at 6 fps) the last frame's data had not all left: start again
    changes = _fps_changes(ctl, 110, {30: 5_000, 31: 5_000})
    assert changes == [(100, 10)]  # empty again from frame 35: the first encoded >= 2 s later
    ctl2 = AwstreamControl(STREAM)
    ctl2.decide(0, 1.2e6, 3 * 20_900, 50e3)
    ctl2.state.frame = 0
    # data left at a skipped frame does not count: it had left by the next encoded one
    assert _fps_changes(ctl2, 110, {31: 5_000, 32: 5_000})[0] == (65, 10)


def test_on_a_pulse_link_it_drops_fast_and_climbs_back_slowly() -> None:
    """8 Mbit/s, 1.5 Mbit/s from 10 s, 8 again from 20 s; a 5 Mbit/s stream over TCP BBR."""
    video = VideoConfig(min_bps=STREAM, max_bps=STREAM)
    flow = FlowSpec(traffic="video", scheme="awstream", start_mbps=5.0, video=video,
                    path=WiredPathConfig(rtt_ms=60.0))  # fmt: skip
    ch = ChannelSpec("pulse", high_mbps=8.0, low_mbps=1.5, switch_s=10.0)
    ue = UeSpec(channel=ch, flows=[flow], queue_limit_bytes=375_000)
    eng = Engine(Scenario(name="aw", duration_s=30.0, ues=[ue]), 1)
    s = build_summary(eng, eng.run())
    f = eng.flows[0]
    assert f.sender is not None
    fps, _ = np.histogram(np.array(f.sender.frames.enc_us) / 1e6, bins=np.arange(0, 31))
    assert all(fps[7:10] >= 29), f"full frame rate on the fast link: {fps}"
    low = fps[16:20]
    assert all(low <= 10), f"the frame rate the slow link carries: {fps}"
    assert all(fps[20:22] <= max(low) + 1), f"no upgrade within 2 s of the link's return: {fps}"
    assert fps[29] >= 29, f"back at 30 fps within 10 s: {fps}"
    fl = s["flows"][0]
    assert fl["frames_skipped"] > 200 and fl["aoi_ms"]["p99"] > 0
