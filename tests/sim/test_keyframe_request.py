"""Key frame requests (RTCP PLI) after a loss (``VideoConfig.keyframe_on_loss``,
``sim/receiver.py``): the receiver asks once decoding has been stuck on a lost reference for
200 ms, the sender's next frame is an I-frame, and decoding resumes; without them a loss
leaves every later frame of the GoP undecodable."""

from __future__ import annotations

import pytest

from octoric.sim.engine import Engine
from octoric.sim.packets import Packet
from octoric.sim.receiver import PLI_WAIT_US, VideoReceiver
from octoric.sim.scenario import ChannelSpec, FlowSpec, Scenario, UeSpec
from octoric.sim.video import MessageTable, VideoConfig, WiredPathConfig, webrtc_video

pytestmark = pytest.mark.unit


def _chain(n: int, key_at: int) -> tuple[MessageTable, VideoReceiver]:
    """n one-packet frames, each referring to the previous one; frame ``key_at`` an I-frame."""
    from octoric.sim.video import FrameTable

    mt, ft = MessageTable(), FrameTable()
    for i in range(n):
        mt.frame.append(i)
        mt.layer.append(0)
        mt.size.append(1000)
        mt.npkts.append(1)
        mt.deps.append(() if i in (0, key_at) else (i - 1,))
        mt.enc_us.append(i * 33_000)
        ft.enc_us.append(i * 33_000)
        ft.size.append(1000)
        ft.base_msg.append(i)
        ft.nmsgs.append(1)
    r = VideoReceiver(mt, ft)
    r.request_keyframes = True
    return mt, r


def test_receiver_asks_for_a_key_frame_after_200_ms_stuck_and_forgets_older_waits() -> None:
    _, r = _chain(12, key_at=10)
    for m in (0, 1, 3, 4):  # frame 2 is lost: 3 and 4 wait for it
        r.on_packet(Packet(0, m, 1000, m * 33_000, msg=m), m * 33_000 + 20_000)
    assert not r.take_feedback(3 * 33_000 + 20_000 + PLI_WAIT_US - 1).pli  # not 200 ms yet
    t = 3 * 33_000 + 20_000 + PLI_WAIT_US
    assert r.take_feedback(t).pli and r.plis == 1
    assert not r.take_feedback(t + PLI_WAIT_US - 1).pli  # at most one per 200 ms
    assert r.take_feedback(t + PLI_WAIT_US).pli  # still stuck: asks again
    r.on_packet(Packet(0, 10, 1000, 330_000, msg=10), 350_000)  # the key frame
    r.on_packet(Packet(0, 11, 1000, 363_000, msg=11), 383_000)
    assert r.decoded_us[10] == 350_000 and r.decoded_us[11] == 383_000
    assert not r.waiting_since and not r.waiters  # frames 3, 4 will never decode: forgotten
    assert not r.take_feedback(2_000_000).pli


def _lossy(keyframes: bool) -> Engine:
    video = webrtc_video(keyframe_on_loss=keyframes)
    flow = FlowSpec(scheme="fixed", rate_mbps=2.0, video=video,
                    path=WiredPathConfig(loss=0.002))  # fmt: skip
    ue = UeSpec(channel=ChannelSpec("constant", rate_mbps=20.0), flows=[flow])
    eng = Engine(Scenario(name="lossy", duration_s=20.0, ues=[ue]), seed=2)
    eng.run()
    return eng


def test_a_lossy_path_recovers_with_key_frame_requests_and_not_without() -> None:
    on, off = _lossy(True), _lossy(False)
    f_on, f_off = on.flows[0], off.flows[0]
    assert f_on.sender is not None and f_on.receiver is not None
    assert f_off.sender is not None and f_off.receiver is not None
    # several losses, each on a frame (5 at this seed; the bounds below hold for them)
    assert f_on.wired_lost_pkts >= 5 and f_off.wired_lost_pkts >= 5
    # with PLI: every loss that hit a frame is answered by a key frame within ~300 ms
    assert f_on.receiver.plis >= 1 and f_on.sender.keyframes_requested >= 1
    decoded_on = len(f_on.receiver.frame_latency_ms) / len(f_on.sender.frames.enc_us)
    decoded_off = len(f_off.receiver.frame_latency_ms) / len(f_off.sender.frames.enc_us)
    assert decoded_on > 0.9
    # without: the first lost packet ends decoding for the rest of the 100 s GoP
    assert decoded_off < 0.5 and f_off.sender.keyframes_requested == 0


def test_key_frame_requests_are_off_by_default() -> None:
    assert VideoConfig().keyframe_on_loss is False
    assert webrtc_video().keyframe_on_loss is True
