"""PDrop, SEC'23 §7.2's priority-dropping baseline (issue #14): at a full buffer an arriving
message of priority p makes the queue drop its queued messages of lower priority (larger
values), whole; and the trade-off the paper shows (Fig. 13): a small buffer costs quality, a
large one latency, where Octopus's primitives keep both."""

from __future__ import annotations

from typing import Any

import pytest

from octoric.contracts.octopus_header import OctopusHeader
from octoric.sim.engine import Engine
from octoric.sim.packets import Packet
from octoric.sim.rlc import DlQueue
from octoric.sim.scenario import ChannelSpec, FlowSpec, Scenario, UeSpec
from octoric.sim.summary import build_summary
from octoric.sim.video import VideoConfig, WiredPathConfig

pytestmark = pytest.mark.unit


def _pkt(seq: int, msg: int, prio: int, first: bool, last: bool, size: int = 100) -> Packet:
    h = OctopusHeader(1, msg, first, last, prio, False, 0, 0)
    return Packet(0, seq, size, 0, msg, h)


def test_a_full_buffer_drops_the_queued_lower_priority_messages_whole() -> None:
    q = DlQueue(limit_bytes=400, pdrop=True)
    q.enqueue(_pkt(0, 1, 0, True, True), 0)  # message 1, priority 0
    q.enqueue(_pkt(1, 2, 2, True, False), 0)  # message 2, priority 2: 2 of its 3 packets
    q.enqueue(_pkt(2, 2, 2, False, False), 0)
    q.enqueue(_pkt(3, 3, 1, True, True), 0)  # message 3, priority 1: the buffer is full
    q.enqueue(_pkt(4, 4, 1, True, True), 0)  # priority 1 arrives: message 2 goes, not it
    assert [p.msg for p in q.pkts] == [1, 3, 4] and q.bytes == 300
    assert [p.seq for p in q.dropped] == [1, 2] and not q.tail_dropped
    q.enqueue(_pkt(5, 2, 2, False, True), 0)  # the rest of message 2 follows it
    assert [p.seq for p in q.dropped] == [1, 2, 5] and len(q.pkts) == 3
    q.enqueue(_pkt(6, 5, 2, True, True), 0)  # priority 2 at a full buffer: nothing below it
    q.enqueue(_pkt(7, 6, 2, True, True), 0)
    assert [p.seq for p in q.tail_dropped] == [7]


def test_pdrop_and_the_dropper_exclude_each_other() -> None:
    from octoric.sim.errors import ScenarioError
    from octoric.sim.scenario import validate

    ue = UeSpec(channel=ChannelSpec("constant", rate_mbps=5.0), dropper=True, pdrop=True)
    with pytest.raises(ScenarioError, match="not both"):
        validate(Scenario(name="x", duration_s=1.0, ues=[ue]))


def _run(**ue: Any) -> dict[str, Any]:
    """SEC'23 §7.2's setting in small: a temporal-SVC video at 4 Mbit/s with Octopus headers
    over a link alternating 6 and 2 Mbit/s every 10 s."""
    video = VideoConfig(svc="temporal", octopus=True)
    flow = FlowSpec(scheme="fixed", rate_mbps=4.0, start_mbps=4.0, video=video,
                    path=WiredPathConfig(rtt_ms=40.0))  # fmt: skip
    spec = UeSpec(channel=ChannelSpec("pulse", high_mbps=6.0, low_mbps=2.0, switch_s=10.0),
                  flows=[flow], **ue)  # fmt: skip
    eng = Engine(Scenario(name="pdrop", duration_s=60.0, ues=[spec]), 1)
    wall = eng.run()
    out: dict[str, Any] = build_summary(eng, wall)["flows"][0]
    return out


def test_pdrop_trades_quality_for_latency_by_buffer_size_where_octopus_keeps_both() -> None:
    small = _run(pdrop=True, queue_limit_bytes=50_000)
    mid = _run(pdrop=True, queue_limit_bytes=375_000)
    large = _run(pdrop=True, queue_limit_bytes=1_000_000)
    octopus = _run(dropper=True, queue_limit_bytes=375_000)
    p95 = [r["frame_latency_ms"]["p95"] for r in (small, mid, large)]
    assert p95[0] < p95[1] < p95[2]  # a larger buffer: more latency
    assert small["valid_bitrate_kbps"] < 0.5 * mid["valid_bitrate_kbps"]  # a small one: quality
    assert octopus["frame_latency_ms"]["p95"] < 0.5 * mid["frame_latency_ms"]["p95"]
    assert octopus["valid_bitrate_kbps"] > 2 * small["valid_bitrate_kbps"]
