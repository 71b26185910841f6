"""``received_frame_bitrate_kbps``: the OCC paper's "frame bitrate arriving at the client" (§6.1):
the payload of the messages whose every packet arrived, beside the sender's ``frame_bitrate_kbps``
(issue #46)."""

from __future__ import annotations

import pytest

from octoric.sim.engine import Engine
from octoric.sim.scenario import ChannelSpec, FlowSpec, Scenario, UeSpec
from octoric.sim.summary import build_summary
from octoric.sim.video import WiredPathConfig

pytestmark = pytest.mark.unit


def _fixed_video(loss: float) -> dict[str, float]:
    flow = FlowSpec(traffic="video", scheme="fixed", start_mbps=2.0,
                    path=WiredPathConfig(rtt_ms=40.0, loss=loss))  # fmt: skip
    ue = UeSpec(channel=ChannelSpec("constant", rate_mbps=10.0), flows=[flow])
    eng = Engine(Scenario(name="rx", duration_s=10.0, ues=[ue]), 3)
    eng.run()
    f = build_summary(eng, 0.0)["flows"][0]
    return {k: f[k] for k in ("frame_bitrate_kbps", "received_frame_bitrate_kbps",
                              "wired_lost_packets")}  # fmt: skip


def test_on_a_clean_path_the_client_receives_what_was_encoded() -> None:
    f = _fixed_video(0.0)
    assert f["wired_lost_packets"] == 0
    # all but the frames still in flight when the run ends (~20 ms of 10 s)
    assert f["received_frame_bitrate_kbps"] == pytest.approx(f["frame_bitrate_kbps"], rel=0.01)


def test_a_lost_packet_takes_its_whole_message_off_the_received_bitrate() -> None:
    f = _fixed_video(0.02)
    assert f["wired_lost_packets"] > 20
    # 2 % of the packets lost: a message of k packets is lost with 1 - 0.98^k, so the share
    # of bytes missing is well above 2 % (2 Mbit/s at 25-30 fps is ~6-7 packets a frame)
    share = f["received_frame_bitrate_kbps"] / f["frame_bitrate_kbps"]
    assert 0.75 < share < 0.96, f
