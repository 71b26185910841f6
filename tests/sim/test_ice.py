"""ICE connectivity checks on a WebRTC flow's path (sim/ice.py, issue #47).

The state machine against libwebrtc M125's rules, the flow across an outage, and the model's
timing against what five Chromium 156 calls did across ATT-LTE-driving's outage
(tests/sim/vectors/chromium-ice-outage/onsets.json)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from octoric.sim.cc import SchemeContext
from octoric.sim.cc.gcc import Gcc
from octoric.sim.engine import Engine
from octoric.sim.ice import (
    STABILIZING_PING_US,
    STABLE_PING_US,
    UNWRITABLE_TIMEOUT_US,
    WEAK_PING_US,
    IceConnection,
)
from octoric.sim.receiver import FeedbackBatch
from octoric.sim.scenario import ChannelSpec, FlowSpec, RanSpec, Scenario, UeSpec
from octoric.sim.summary import build_summary
from octoric.sim.video import WiredPathConfig, webrtc_video

VECTOR = Path(__file__).parent / "vectors/chromium-ice-outage/onsets.json"
RTT_US = 40_000


def _pings(c: IceConnection, t0: int, t1: int, step: int = 1_000) -> list[int]:
    out = []
    for t in range(t0, t1, step):
        if c.tick(t):
            out.append(t)
    return out


def test_a_stable_pair_pings_every_2_5_s_and_an_unanswered_one_every_0_9_s() -> None:
    c = IceConnection(RTT_US)
    sent = []
    for t in range(0, 10_000_000, 1_000):
        if c.tick(t):
            sent.append(t)
            c.on_response(t + RTT_US, t)  # answered within the RTT: stays stable
    assert sent[:4] == [0, STABLE_PING_US, 2 * STABLE_PING_US, 3 * STABLE_PING_US]
    c2 = IceConnection(RTT_US)
    # no response: the first ping is overdue after 2 x rtt, then the pair is stabilizing
    p = _pings(c2, 0, 4_000_000)
    assert p[0] == 0 and all(b - a == STABILIZING_PING_US for a, b in itertools.pairwise(p))


def test_five_unanswered_pings_and_5_s_make_the_pair_unreliable_until_a_response() -> None:
    c = IceConnection(RTT_US)
    p = _pings(c, 0, 5_000_000)
    assert len(p) == 6 and c.writable  # 0, 0.9, ..., 4.5 s: not yet 5 s without a response
    c.tick(UNWRITABLE_TIMEOUT_US)
    assert c.writable  # "more than" 5 s
    c.tick(UNWRITABLE_TIMEOUT_US + 1)
    assert not c.writable
    weak = _pings(c, UNWRITABLE_TIMEOUT_US + 2, UNWRITABLE_TIMEOUT_US + 1_000_000, 500)
    assert all(b - a == WEAK_PING_US for a, b in itertools.pairwise(weak))
    c.on_response(6_000_000, 5_500_000)
    assert c.writable and not c.unanswered
    # next_check_us names the moment the state would change: no tick is needed before it
    c3 = IceConnection(RTT_US)
    t, seen = 0, []
    while c3.writable and t < 10_000_000:
        c3.tick(t)
        seen.append(t)
        t = c3.next_check_us(t)
    assert not c3.writable and seen[-1] == UNWRITABLE_TIMEOUT_US + 1


def test_feedback_gaps_of_unsent_packets_are_not_loss() -> None:
    """libwebrtc has no send time for a packet the transport refused, so the feedback's gap
    where it would be is no loss; an equal gap of packets sent and lost is."""
    ctx = SchemeContext(rtt_ms=40, start_bps=1e6, min_bps=30e3, max_bps=5e6,
                        params={"probing": False})  # fmt: skip

    def rate_after_gap(unsent: bool) -> float:
        g = Gcc(ctx)
        seqs = list(range(0, 10))
        g.on_feedback(
            100_000,
            FeedbackBatch(
                seqs, [s * 1000 for s in seqs], [s * 1000 + 20_000 for s in seqs], [1200] * 10
            ),
        )
        if unsent:
            g.on_send_failed(150_000, list(range(10, 40)))
        seqs = list(range(40, 50))
        g.on_feedback(
            200_000,
            FeedbackBatch(
                seqs,
                [100_000 + s * 1000 for s in seqs],
                [120_000 + s * 1000 for s in seqs],
                [1200] * 10,
            ),
        )
        return g.rate

    assert rate_after_gap(unsent=True) >= 1e6  # no loss: the estimate did not fall
    assert rate_after_gap(unsent=False) < 0.8e6  # 75 % lost: the loss rule halves it


def _outage_trace(tmp: Path, outage: tuple[float, float], seconds: float) -> Path:
    """A Mahimahi trace of 3 Mbit/s (a 1500-byte opportunity every 4 ms) with no delivery
    between ``outage``'s two times (s)."""
    lines = [str(ms) for ms in range(0, int(seconds * 1000), 4)
             if not outage[0] * 1000 <= ms < outage[1] * 1000]  # fmt: skip
    p = tmp / "outage.down"
    p.write_text("\n".join(lines) + "\n")
    return p


def _run(trace: Path, seconds: float, ice: bool) -> tuple[Engine, dict[str, Any]]:
    video = webrtc_video(fps=25.0, width=640, height=360, ice_checks=ice)
    flow = FlowSpec(traffic="video", scheme="gcc", path=WiredPathConfig(rtt_ms=20.0),
                    uplink_ms=4.0, start_mbps=0.3, min_mbps=0.03, max_mbps=1.7,
                    video=video)  # fmt: skip
    sc = Scenario(name="ice-outage", duration_s=seconds,
                  ran=RanSpec(n_prb=51, slot_ms=0.5, tdd="DDDSU"),
                  ues=[UeSpec(channel=ChannelSpec(kind="mahimahi", path=str(trace)),
                              flows=[flow], queue_limit_bytes=300_000)])  # fmt: skip
    eng = Engine(sc, 1)
    return eng, build_summary(eng, eng.run())


def test_an_outage_makes_both_agents_stop_and_the_queue_s_end_resumes_them(
    tmp_path: Path,
) -> None:
    trace = _outage_trace(tmp_path, (10.0, 20.0), 30.0)
    eng, s = _run(trace, 30.0, ice=True)
    f, fl = s["flows"][0], eng.flows[0]
    ice = f["ice"]
    # unreliable 5 s after the first unanswered check (sent up to 2.5 s into the outage), so
    # 5.0-7.6 s into it; writable again once the queue's checks get through after 20 s
    assert 10.0 - 7.6 < ice["unwritable_s"] < 10.0 - 4.9 + 1.0, ice
    assert ice["discarded_packets"] > 50 and ice["discarded_feedback"] > 10, ice
    assert fl.ice_srv is not None and fl.ice_srv.writable and fl.ice_ue is not None
    assert fl.ice_ue.writable
    _, off = _run(trace, 30.0, ice=False)
    assert "ice" not in off["flows"][0]


def test_without_an_outage_the_checks_never_stop_a_flow(tmp_path: Path) -> None:
    trace = _outage_trace(tmp_path, (99.0, 99.0), 20.0)
    _, s = _run(trace, 20.0, ice=True)
    assert s["flows"][0]["ice"] == {"unwritable_s": 0.0, "discarded_packets": 0,
                                    "discarded_feedback": 0}  # fmt: skip


def test_chromium_stopped_within_the_window_the_model_s_rules_give() -> None:
    """The five recorded calls: each agent stopped sending 5.0-6.3 s after the last delivery
    before the outage, inside the window the model's rules give (5 s after the first
    unanswered check, which went out up to one stable interval, 2.5 s, after the last
    response, plus twice the RTT), and resumed within a second of each other at its end;
    its weak checks came every 62.5 ms, the model's interval."""
    doc = json.loads(VECTOR.read_text())
    lo, hi = UNWRITABLE_TIMEOUT_US / 1e6 - 0.1, (UNWRITABLE_TIMEOUT_US + STABLE_PING_US) / 1e6 + 0.2
    assert len(doc["calls"]) == 5
    for name, c in doc["calls"].items():
        assert lo <= c["sender_onset_s"] <= hi, name
        assert lo <= c["receiver_onset_s"] <= hi, name
        assert abs(c["sender_wire_gap"][1] - c["feedback_gap"][1]) < 1.0, name
        assert c["ping_interval_ms_p50"] == WEAK_PING_US / 1000, name


@pytest.mark.integration
def test_the_checks_change_nothing_on_a_link_without_outages() -> None:
    """On the constant 1.5 Mbit/s cell of the Chromium comparison (GCC at capacity) the
    checks never make a pair unreliable; they move the timing of events, and the model's p99
    there varies with the seed (97-139 ms). Over eight seeds the means with and without them
    stay within 5 % (measured over ten: p99 110.5 / 112.8 ms, utilization 0.849 / 0.848)."""
    from octoric.experiments import webrtc_eval as w

    def run(seed: int, ice: bool) -> dict[str, Any]:
        flow = FlowSpec(traffic="video", scheme="gcc", path=w._path(), uplink_ms=w.UPLINK_MS,
                        start_mbps=w.START_MBPS, min_mbps=w.MIN_MBPS, max_mbps=w.MAX_MBPS,
                        start_s=5.5, video=webrtc_video(fps=25.0, width=640, height=360,
                                                        ice_checks=ice))  # fmt: skip
        eng = Engine(w.scenario("constant-1.5mbps", Path("."), flow, 65.5), seed)
        f: dict[str, Any] = build_summary(eng, eng.run())["flows"][0]
        return f

    on = [run(k, True) for k in range(1, 9)]
    off = [run(k, False) for k in range(1, 9)]
    assert all(f["ice"]["unwritable_s"] == 0.0 for f in on)
    p99_on = sum(f["network_latency_ms"]["p99"] for f in on) / len(on)
    p99_off = sum(f["network_latency_ms"]["p99"] for f in off) / len(off)
    assert abs(p99_on - p99_off) <= 0.05 * p99_off, (p99_on, p99_off)
    kb_on = sum(f["decoded_bitrate_kbps"] for f in on) / len(on)
    kb_off = sum(f["decoded_bitrate_kbps"] for f in off) / len(off)
    assert abs(kb_on - kb_off) <= 0.02 * kb_off, (kb_on, kb_off)
