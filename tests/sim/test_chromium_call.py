"""Issue #47's first part: a real Chromium WebRTC call (Debian's Chromium, libwebrtc, VP8 of a
real clip from a fake camera) crosses the emulated cell with the embedded RIC and the OCC
xApp in the loop, once per arm on the same constant-rate cell and seed: ``chromium-gcc``
(libwebrtc untouched) and ``chromium-occ`` (the sender page caps its encoder at OCC's rate
through examples/occ-rate.js). Root (namespaces), Chromium, ffmpeg and opencv-doc; slow (two
calls): ``make test-all``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from testkit.live_sim import real_ue_sim_with_occ

from octoric.ric.stack import RicStack
from octoric.sim.chromium.call import chromium_call, read_jsonl
from octoric.sim.chromium.call import unavailable_reason as chromium_unavailable
from octoric.sim.realue.netns import unavailable_reason
from octoric.sim.scenario import ChannelSpec, FlowSpec, RanSpec, Scenario, UeSpec
from octoric.sim.video import WiredPathConfig

pytestmark = [
    pytest.mark.integration, pytest.mark.e2e, pytest.mark.slow, pytest.mark.netns,
    pytest.mark.skipif(unavailable_reason() is not None, reason=str(unavailable_reason())),
    pytest.mark.skipif(chromium_unavailable() is not None, reason=str(chromium_unavailable())),
]  # fmt: skip
CALL_S = 25.0
FB_PORT = 9100
CELL_MBPS = 1.5  # below libwebrtc's 1.7 Mbit/s default maximum at 640x360: the cell limits


def scenario() -> Scenario:
    flow = FlowSpec(traffic="real", scheme="occ", params={"feedback_port": FB_PORT},
                    path=WiredPathConfig(rtt_ms=20.0), uplink_ms=4.0)  # fmt: skip
    return Scenario(name="chromium-call", duration_s=600.0,
                    ran=RanSpec(n_prb=51, slot_ms=0.5, tdd="DDDSU"),
                    ues=[UeSpec(channel=ChannelSpec(kind="constant", rate_mbps=CELL_MBPS),
                                flows=[flow], queue_limit_bytes=300_000)])  # fmt: skip


def test_chromium_calls_decode_record_their_stats_and_the_occ_arm_follows_occ(
    shared_ric: RicStack, tmp_path: Path
) -> None:
    res = {}
    with real_ue_sim_with_occ(shared_ric, tmp_path, scenario()) as (lt, sim):
        for arm in ("chromium-gcc", "chromium-occ"):
            res[arm] = lt.call(chromium_call(sim, arm, CALL_S, tmp_path / arm, FB_PORT), 240)
    for arm, r in res.items():
        print(arm, json.dumps(r))
        out = tmp_path / arm
        assert r["completed"], (
            (out / "pages.log").read_text() if (out / "pages.log").exists() else ""
        )
        # no process of the call outlives it
        assert r["processes_left"] == []
        # getStats() every 100 ms on both sides: at least half the samples arrived
        assert r["sender_samples"] >= 0.5 * CALL_S * 10, r["sender_samples"]
        assert r["receiver_samples"] >= 0.5 * CALL_S * 10, r["receiver_samples"]
        snd = read_jsonl(out / "sender-stats.jsonl")
        assert any("targetBitrate" in s.get("outbound-rtp", {}) for s in snd)
        assert any("availableOutgoingBitrate" in s.get("candidate-pair", {}) for s in snd)
        # the video was decoded at the receiver: most of the frames the sender sent
        assert r["frames_decoded"] >= 0.8 * r["frames_sent"] > 0, r
        assert r["resolution"] == "640x360", r["resolution"]
        # no CPU limitation at this size and rate (the condition on the settings)
        assert r["quality_limitation"].get("cpu", 0.0) < 0.05, r["quality_limitation"]
        # each media packet's one-way latency across the cell was measured at both ends:
        # at least the 10 ms wired one-way delay, and nearly every packet was matched
        assert r["packets_received"] >= 0.9 * r["packets_sent"] > 0, r
        assert r["network_latency_ms"]["p50"] >= 10.0, r["network_latency_ms"]
    # chromium-occ: the sender's maxBitrate was OCC's latest target at >= 90 % of the samples
    # after the first feedback; chromium-gcc never set one
    f, n = (
        res["chromium-occ"]["occ_follow"]["follows"],
        res["chromium-occ"]["occ_follow"]["samples"],
    )
    assert n >= 0.5 * CALL_S * 10 and f >= 0.9 * n, (f, n)
    # ... and libwebrtc's encoder target stayed within that cap
    assert res["chromium-occ"]["target_within_cap"] >= 0.9, res["chromium-occ"]
    occ_fb = read_jsonl(tmp_path / "chromium-occ" / "occ-feedback.jsonl")
    assert len({x.get("target_bps") for x in occ_fb}) > 1, "the OCC target never changed"
    gcc_snd = read_jsonl(tmp_path / "chromium-gcc" / "sender-stats.jsonl")
    assert all(s.get("maxBitrate") is None for s in gcc_snd)
