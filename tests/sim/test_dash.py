"""The DASH VoD client (dash.js's Throughput, BOLA and Dynamic rules) and Octopus's DASH-H veto
(ToN'22 §IV) in the simulator (issues #14, #20): the rules' defining behaviour on constant
links, the buffer's cap, stalls on a link below the lowest bitrate, and DASH-H's veto after
handovers, which it must not apply when the buffer is short."""

from __future__ import annotations

from pathlib import Path

import pytest

from octoric.sim.dash import (
    LADDER_MBPS,
    BolaRule,
    DashClient,
    DashConfig,
    DashH,
    ThroughputHistory,
    ThroughputRule,
    oscillation_mbps,
    quality_for_bitrate,
)
from octoric.sim.engine import Engine, FlowState
from octoric.sim.errors import ScenarioError
from octoric.sim.scenario import (
    ChannelSpec,
    FlowSpec,
    MobilitySpec,
    RanSpec,
    Scenario,
    UeSpec,
    load,
    load_file,
    validate,
)

pytestmark = pytest.mark.unit
LADDER = [b * 1e6 for b in LADDER_MBPS]


def _run(rate_mbps: float, duration_s: float, mobility: MobilitySpec | None = None,
         seed: int = 1, **dash: object) -> FlowState:  # fmt: skip
    """One UE on a constant link with one DASH flow over CUBIC; returns the flow."""
    flow = FlowSpec(traffic="dash", scheme="cubic", dash=DashConfig(**dash))  # type: ignore[arg-type]
    ue = UeSpec(channel=ChannelSpec("constant", rate_mbps=rate_mbps), flows=[flow],
                mobility=mobility or MobilitySpec())  # fmt: skip
    sc = Scenario(name="dash-test", duration_s=duration_s, ran=RanSpec(cells=2), ues=[ue])
    validate(sc)
    eng = Engine(sc, seed)
    eng.run()
    f = eng.flows[0]
    assert f.dash is not None
    return f


def _history(mbps: float, n: int = 6, latency_ms: float = 20.0) -> ThroughputHistory:
    h = ThroughputHistory()
    nbytes = 1_000_000
    for _ in range(n):
        download_us = round(nbytes * 8 / (mbps * 1e6) * 1e6)
        h.push(nbytes, 0, round(latency_ms * 1000), round(latency_ms * 1000) + download_us)
    return h


# --- the rules as dash.js has them ------------------------------------------------------
def test_throughput_rule_picks_the_highest_bitrate_under_its_safe_throughput() -> None:
    rule = ThroughputRule(LADDER, 1.6)
    # safe = 0.9 x measured x (1 - 20 ms / 1.6 s): 8.2 Mbit/s -> 7.29 -> 1080P (7.2);
    # 8.0 -> 7.11 -> 720P (3.6); 30 -> 26.66 -> 2K, not 4K (26.8)
    for mbps, want in ((8.2, 2), (8.0, 1), (30.0, 3), (31.0, 4), (1.0, 0)):
        assert rule.decide(_history(mbps), buffer_s=5.0).quality == want, mbps
    assert rule.decide(ThroughputHistory(), 5.0).quality is None  # no sample: no change
    assert rule.decide(_history(30.0), 0.2).quality is None  # buffer not loaded


def test_throughput_average_widens_over_a_varying_throughput() -> None:
    h = _history(10.0, n=6)
    assert h.sample_size() == 4
    h.push(1_000_000, 0, 1000, 1000 + 4_000_000)  # one 2 Mbit/s sample: a 5x step
    assert h.sample_size() == 5  # dash.js averages over one more sample
    assert h.average_kbps() == pytest.approx((4 * 10_000 + 2_000) / 5, rel=1e-3)


def test_latency_takes_its_share_of_the_segment() -> None:
    assert quality_for_bitrate(LADDER, 8.0e6, 0.0, 1.6) == 2
    assert quality_for_bitrate(LADDER, 8.0e6, 0.4, 1.6) == 1  # 8 x 0.75 = 6 < 7.2
    assert quality_for_bitrate(LADDER, 100e6, 2.0, 1.6) == 0  # latency over a segment


def test_bola_choice_rises_with_the_buffer() -> None:
    bola = BolaRule(LADDER, 1.6, 12.0)
    # dash.js: buffer time max(12, 10 + 2 x 5) = 20 s; Vp (1 + gp) = 10 s is the lowest's top
    assert bola.vp * bola.gp == pytest.approx(10.0)
    qs = [bola.quality_for_buffer(b / 2) for b in range(0, 61)]
    assert qs == sorted(qs) and qs[0] == 0 and qs[-1] == len(LADDER) - 1
    assert len(set(qs)) == len(LADDER)  # every rung has its buffer range
    # in steady state, with the same (ample) throughput, more buffer -> a higher quality
    picks = []
    for buf in (4.0, 12.0, 20.0):
        b = BolaRule(LADDER, 1.6, 12.0)
        b.steady, b.last_quality, b.last_call_us = True, 4, 0
        picks.append(b.decide(_history(100.0), buf, now_us=0).quality)
    assert picks[0] is not None and picks[0] < picks[1] < picks[2]  # type: ignore[operator]


def test_bola_does_not_rise_above_the_throughput_rule() -> None:
    """BOLA-O: a full buffer does not lift BOLA above what the throughput sustains."""
    b = BolaRule(LADDER, 1.6, 12.0)
    b.steady, b.last_quality, b.last_call_us = True, 1, 0
    assert b.decide(_history(5.0), 25.0, now_us=0).quality == 1  # 0.9 x 5 -> 720P at most


def test_oscillation_is_eq_3() -> None:
    # rho = D sum |B(i) - B(i-1)| / (N D): 3 segments, steps 7.2 - 3.6 and 26.8 - 7.2
    assert oscillation_mbps([3.6, 7.2, 26.8], 1.6) == pytest.approx((3.6 + 19.6) / 3)


# --- the client on constant links ---------------------------------------------------------
def test_throughput_rule_settles_under_0_9x_the_measured_throughput() -> None:
    f = _run(10.0, 25.0, abr="throughput")
    assert f.dash is not None
    c = f.dash.client
    safe = c.hist.safe_bps()
    want = quality_for_bitrate(LADDER, safe, c.hist.latency_s(), 1.6)
    assert 8.5e6 < safe / 0.9 < 10.5e6  # the segments measure the link
    assert want == 2  # 0.9 x ~10 Mbit/s: 1080P
    assert [s.served for s in c.segments[-8:]] == [want] * 8
    assert c.rebuffer_s == 0.0


def test_buffer_never_exceeds_its_30_s_maximum() -> None:
    f = _run(120.0, 45.0, abr="dynamic")
    assert f.dash is not None
    c = f.dash.client
    assert c.segments[-1].served == len(LADDER) - 1  # 4K: dash.js fills to 30 s
    assert 28.0 <= c.max_buffer_seen_s <= 30.0 + 1e-9
    slow = _run(10.0, 25.0, abr="dynamic")
    assert slow.dash is not None  # below the top quality the target is 12 s
    assert slow.dash.client.max_buffer_seen_s <= 12.0 + 1e-9


def test_a_link_below_the_lowest_bitrate_stalls() -> None:
    f = _run(0.8, 30.0, abr="throughput")
    assert f.dash is not None
    m = f.dash.summary(round(30e6))
    assert all(q == 0 for q in m["served"])
    # each 1.6 s segment of 1.2 Mbit/s takes >= 2.4 s at 0.8 Mbit/s: >= 1/3 of the time stalls
    assert m["stalls"] >= 3 and 0.3 <= m["stall_rate"] <= 0.5
    fast = _run(10.0, 20.0, abr="throughput").dash
    assert fast is not None and fast.client.stalls == 0


def test_a_pure_client_counts_a_stall_only_after_start_up() -> None:
    c = DashClient(DashConfig(abr="throughput"))
    req = c.on_timer(0)
    assert req is not None and req.quality == 0
    c.segments[-1].nbytes = 240_000
    c.on_first_byte(400_000)
    c.on_segment_done(1_000_000)  # start-up took 1 s: not a stall
    assert c.playing and c.rebuffer_s == 0.0 and c.startup_s == 1.0
    assert c.on_timer(1_000_000) is not None  # room for the next segment
    c.advance(4_000_000)  # 1.6 s played, then 1.4 s without video
    assert c.stalls == 1 and c.rebuffer_s == pytest.approx(1.4)


# --- DASH-H -------------------------------------------------------------------------------
def test_dash_h_decision_types() -> None:
    h = DashH(True, 5.0)
    assert h.serve(2, 3, buffer_s=10.0) == 2  # D: a drop, no handover
    h.on_handover_report()
    assert h.serve(1, 3, buffer_s=10.0) == 3  # A: vetoed
    h.on_handover_report()
    assert h.serve(1, 3, buffer_s=4.9) == 1  # B: too little buffer, the drop passes
    h.on_handover_report()
    assert h.serve(3, 3, buffer_s=10.0) == 3  # C: no drop
    assert h.serve(1, 3, buffer_s=10.0) == 1  # the report was used up: D
    assert h.types == {"A": 1, "B": 1, "C": 1, "D": 2}
    off = DashH(False, 5.0)
    off.on_handover_report()
    assert off.serve(1, 3, 10.0) == 1 and off.types["A"] == 1  # counted, not applied


def _hsr(seed: int, duration_s: float, **dash: object) -> dict[str, object]:
    """The ``hsr`` scenario with one UE (the whole cell to itself) and one DASH flow."""
    sc = load("hsr")
    sc.duration_s = duration_s
    sc.ues[0].count = 1
    sc.ues[0].flows = [FlowSpec(traffic="dash", scheme="cubic", dash=DashConfig(**dash))]  # type: ignore[arg-type]
    eng = Engine(sc, seed)
    eng.run()
    session = eng.flows[0].dash
    assert session is not None
    return session.summary(eng.slot * eng.slot_us)


def test_dash_h_keeps_the_bitrate_where_dash_drops_after_a_handover() -> None:
    """On ``hsr`` (seed 3: 14 handovers in 40 s) BOLA asks for 2K instead of 4K at ~8 s, right
    after a handover report, with 6.1 s of buffer (type A); DASH-H serves 4K instead."""
    plain = _hsr(3, 40.0, abr="bola")
    veto = _hsr(3, 40.0, abr="bola", dash_h=True)
    assert plain["handover_reports"] == veto["handover_reports"] >= 5  # type: ignore[operator]
    types = plain["decision_types"]
    assert isinstance(types, dict) and types["A"] >= 1 and plain["vetoes"] == 0
    assert veto["vetoes"] == types["A"]
    p_served, v_served = plain["served"], veto["served"]
    assert isinstance(p_served, list) and isinstance(v_served, list)
    top = len(LADDER) - 1
    first_top = p_served.index(top)
    dropped = [i for i in range(first_top, len(p_served)) if p_served[i] < top]
    assert dropped, "plain DASH left 4K after it reached it"
    assert all(v_served[i] == top for i in dropped[:1])  # the veto held 4K where DASH dropped
    assert veto["avg_bitrate_mbps"] > plain["avg_bitrate_mbps"]  # type: ignore[operator]
    assert veto["oscillation_mbps"] < plain["oscillation_mbps"]  # type: ignore[operator]


# handovers every ~10 s, each a radio-link failure of 2 s (no ping-pong) on a 15 Mbit/s link:
# the outages keep the buffer under 5 s, so the drops after them are type B
FAILING = MobilitySpec("driving", ho_interval_s=10.0, pingpong_fraction=0.0, failure_prob=1.0,
                       rlf_outage_ms=2000.0)  # fmt: skip


def test_dash_h_does_not_veto_with_less_than_5_s_of_buffer() -> None:
    plain = _run(15.0, 40.0, FAILING, abr="throughput")
    veto = _run(15.0, 40.0, FAILING, abr="throughput", dash_h=True)
    assert plain.dash is not None and veto.dash is not None
    p, v = plain.dash.summary(round(40e6)), veto.dash.summary(round(40e6))
    assert v["handover_reports"] >= 3
    assert v["decision_types"]["B"] >= 2 and v["decision_types"]["A"] == 0
    assert v["vetoes"] == 0 and v["served"] == p["served"]  # every drop went through
    assert min(p["served"][2:]) < max(p["served"])  # and there were drops
    # the same run with the veto's threshold at 0 s vetoes those drops
    always = _run(15.0, 40.0, FAILING, abr="throughput", dash_h=True, dash_h_min_buffer_s=0.0)
    assert always.dash is not None and always.dash.summary(round(40e6))["vetoes"] >= 2


# --- the scenario ---------------------------------------------------------------------------
def test_dash_scenario_validation(tmp_path: Path) -> None:
    p = tmp_path / "d.yaml"
    p.write_text("ues:\n  - flows:\n      - traffic: dash\n        scheme: gcc\n")
    with pytest.raises(ScenarioError, match="window scheme"):
        load_file(p)
    p.write_text("ues:\n  - flows:\n      - traffic: dash\n        scheme: cubic\n"
                 "        dash: {abr: bola, ladder_mbps: [3, 1]}\n")  # fmt: skip
    with pytest.raises(ScenarioError, match=r"d.yaml:5 .*dash.ladder_mbps.*strictly increasing"):
        load_file(p)
    p.write_text("ues:\n  - flows:\n      - traffic: dash\n        scheme: cubic\n"
                 "        dash: {abr: bola, dash_h: true}\n")  # fmt: skip
    sc = load_file(p)
    assert sc.ues[0].flows[0].dash.abr == "bola" and sc.ues[0].flows[0].dash.dash_h


def test_sim_run_traffic_dash_writes_the_dash_summary(tmp_path: Path) -> None:
    import json

    from octoric.cli import main

    out = tmp_path / "d.json"
    assert main(["sim", "run", "--scenario", "static", "--traffic", "dash", "--duration", "4",
                 "--json", str(out), "--quiet"]) == 0  # fmt: skip
    f = json.loads(out.read_text())["flows"][0]
    assert f["traffic"] == "dash" and f["scheme"] == "cubic"  # the TCP below DASH by default
    d = f["dash"]
    for key in ("avg_bitrate_mbps", "share_4k", "oscillation_mbps", "stall_rate", "rebuffer_s",
                "segments", "download_done_s", "decision_types", "vetoes"):  # fmt: skip
        assert key in d, key
    assert d["segments"] == len(d["download_done_s"]) >= 2 and d["abr"] == "dynamic"
    assert d["download_done_s"] == sorted(d["download_done_s"])
