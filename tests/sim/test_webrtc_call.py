"""Issue #21's first point: a real WebRTC video call (aiortc, VP8; examples/webrtc_peer.py)
crosses the emulated cell with the embedded RIC and the OCC xApp in the loop. The OCC xApp
estimates the real UE's available bandwidth from the KPM of its real queue and its feedback
reaches the sender in the server namespace; the sender's encoder follows it. The same call
with aiortc's own congestion control (receiver-side GCC via REMB) is the baseline, in the
same run, on the same cell. Root (namespaces), slow (two 20 s calls): ``make test-all``."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from testkit.live_sim import real_ue_sim_with_occ

from octoric.ric.stack import RicStack
from octoric.sim.live import LiveSim
from octoric.sim.realue.netns import unavailable_reason
from octoric.sim.realue_harness import spawn
from octoric.sim.receiver import STALL_MS
from octoric.sim.scenario import ChannelSpec, FlowSpec, RanSpec, Scenario, UeSpec
from octoric.sim.video import WiredPathConfig

pytestmark = [
    pytest.mark.integration, pytest.mark.e2e, pytest.mark.slow, pytest.mark.netns,
    pytest.mark.skipif(unavailable_reason() is not None, reason=str(unavailable_reason())),
    pytest.mark.skipif(importlib.util.find_spec("aiortc") is None,
                       reason="aiortc is not installed (make setup installs it)"),
]  # fmt: skip
PEER = Path(__file__).resolve().parents[2] / "examples" / "webrtc_peer.py"
CALL_S = 20.0
FB_PORT = 9100


def scenario() -> Scenario:
    """The OCC paper's blockage route (51 PRB, the UE's MCS and capacity move with it)."""
    flow = FlowSpec(traffic="real", scheme="occ", params={"feedback_port": FB_PORT},
                    path=WiredPathConfig(rtt_ms=20.0), uplink_ms=4.0)  # fmt: skip
    ch = ChannelSpec(kind="route", route="blockage")
    return Scenario(name="webrtc-call", duration_s=600.0,
                    ran=RanSpec(n_prb=51, slot_ms=0.5, tdd="DDDSU"),
                    ues=[UeSpec(channel=ch, flows=[flow], queue_limit_bytes=500_000)])  # fmt: skip


async def call(sim: LiveSim, rate: str) -> dict[str, Any]:
    """One call: the receiver in the UE's namespace, the sender in the server's; the SDP
    offer and answer pass through their stdin/stdout."""
    assert sim.real is not None
    ns = sim.real.ns
    ue = sim.real.ues[0]
    bytes0 = ue.delivered_bytes
    rcv = await spawn(sim, ns.ue_ns[0], [sys.executable, str(PEER), "recv",
                                         "--seconds", str(CALL_S + 2)], stdin=True)  # fmt: skip
    snd = await spawn(sim, ns.server_ns, [sys.executable, str(PEER), "send", "--seconds",
                                          str(CALL_S), "--rate", rate, "--feedback-port",
                                          str(FB_PORT)], stdin=True)  # fmt: skip
    assert snd.stdout and snd.stdin and rcv.stdout and rcv.stdin
    rcv.stdin.write(await snd.stdout.readline())
    await rcv.stdin.drain()
    snd.stdin.write(await rcv.stdout.readline())
    await snd.stdin.drain()
    sent = json.loads(await snd.stdout.readline())["result"]
    got = json.loads(await rcv.stdout.readline())["result"]
    await asyncio.gather(snd.wait(), rcv.wait())
    captured = dict(sent["captured"])
    lat = [(t - captured[i]) / 1e6 for i, t, _ in got["decoded"] if i in captured]
    return {
        "rate": rate, "sent": sent, "frames_captured": len(captured),
        "frames_decoded": len(lat),
        "frame_latency_ms": dict(zip(("p50", "p95", "p99"),
                                     np.percentile(lat, [50, 95, 99]).round(1).tolist(),
                                     strict=True)) if lat else None,
        "stall_rate": sum(x > STALL_MS for x in lat) / len(lat) if lat else None,
        # what reached the UE's namespace during the call (aiortc's stats carry no bytes)
        "delivered_kbps": (ue.delivered_bytes - bytes0) * 8 / CALL_S / 1000,
    }  # fmt: skip


def test_webrtc_call_follows_the_occ_target_and_its_own_gcc_is_the_baseline(
    shared_ric: RicStack, tmp_path: Path
) -> None:
    with real_ue_sim_with_occ(shared_ric, tmp_path, scenario()) as (lt, sim):
        with_occ = lt.call(call(sim, "feedback"))
        baseline = lt.call(call(sim, "gcc"))
        relayed = sim.real.stats.feedback_relayed if sim.real else 0
    report = {"occ": with_occ, "gcc": baseline, "feedback_relayed": relayed}
    (tmp_path / "webrtc-call.json").write_text(json.dumps(report))
    for r in (with_occ, baseline):
        targets = [v for _, v in r["sent"]["targets"]]
        print(r["rate"], {k: r[k] for k in ("frames_captured", "frames_decoded",
                                            "frame_latency_ms", "stall_rate", "delivered_kbps")},
              "encoder target kbit/s p10/p50/p90",
              np.percentile(targets, [10, 50, 90]).round(-3) / 1000)  # fmt: skip
        # both calls work: most frames decoded, latency and bitrate reported
        assert r["frames_decoded"] >= 0.8 * r["frames_captured"], r["frames_decoded"]
        assert r["frame_latency_ms"] is not None and r["delivered_kbps"] > 100
    # with OCC: the encoder's target is the OCC target (within the encoder's range) at
    # >= 90 % of the samples after the first feedback, and REMB did not take over
    s = with_occ["sent"]
    fb = [(t, v) for t, v in s["feedback"]]
    assert len(fb) >= 20, "too little OCC feedback reached the sender"
    lo, hi = s["bitrate_range"]
    follows = total = 0
    for t, target in s["targets"]:
        last = [v for ft, v in fb if ft <= t]
        if not last or last[-1] is None:
            continue
        total += 1
        follows += target == int(min(max(last[-1], lo), hi))
    assert total >= 0.5 * len(s["targets"]) and follows >= 0.9 * total, (follows, total)
    assert len({v for _, v in fb if v is not None}) > 1, "the OCC target never changed"
    # the baseline ran on aiortc's REMB alone
    assert baseline["sent"]["feedback"] == []
