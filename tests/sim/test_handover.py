"""Acceptance 3: the HSR scenario reproduces the configured handover statistics."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from octoric.sim.runner import run_offline
from octoric.sim.scenario import ChannelSpec, FlowSpec, load

pytestmark = pytest.mark.unit


def test_hsr_one_hour_matches_configured_interval_duration_failures() -> None:
    sc = load("hsr")
    sc.duration_s = 3600.0
    ue = sc.ues[0]
    ue.count = 32  # one train: 32 UEs -> ~17k handovers, so the failure share is measurable
    ue.channel = ChannelSpec("constant", mcs=10)  # the handover process needs no traffic
    ue.flows = [FlowSpec(traffic="none")]
    mob = ue.mobility.resolve()
    s = run_offline(sc, seed=2).summary
    hs = s["handover_stats"]
    assert hs["count"] > 15_000
    assert hs["mean_interval_s"] == pytest.approx(mob.ho_interval_s, rel=0.05)
    assert hs["mean_duration_ms"] == pytest.approx(mob.ho_duration_ms, rel=0.05)
    assert hs["failure_rate"] == pytest.approx(mob.failure_prob, rel=0.05)
    assert hs["pingpong_fraction"] == pytest.approx(mob.pingpong_fraction, rel=0.1)
    assert hs["share_intervals_below_2s"] == pytest.approx(0.355, rel=0.15)  # ToN'22 Fig. 2
    assert mob.ho_interval_s == 6.65 and mob.ho_duration_ms == 92.8 and mob.failure_prob == 0.127
    assert sum(c["handovers"] for c in s["cells"]) == hs["count"]


def test_ue_keeps_amf_id_and_gets_new_gnb_id_across_gnbs() -> None:
    from octoric.sim.engine import Engine

    sc = load("hsr")
    sc.duration_s = 60.0
    sc.ues[0].count = 1
    sc.ues[0].flows = [FlowSpec(traffic="backlogged")]
    eng = Engine(sc, seed=1)
    u = eng.ues[0]
    ids = {(u.amf_ue_ngap_id, u.gnb_ue_id)}
    amf = u.amf_ue_ngap_id
    for step in range(1, 61):
        eng.run_until(step * 1000)
        if u.cell >= 0:
            ids.add((u.amf_ue_ngap_id, u.gnb_ue_id))
    assert all(a == amf for a, _ in ids)
    assert len(eng.handovers) >= 3
    assert len({g for _, g in ids}) >= 2  # re-identified at each new gNB
    assert all(h.amf_ue_ngap_id == amf for h in eng.handovers)


def test_handover_interrupts_delivery() -> None:
    from octoric.sim.engine import Engine

    sc = load("hsr")
    sc.duration_s = 30.0
    sc.ues[0].count = 1
    sc.ues[0].channel = ChannelSpec("constant", rate_mbps=10.0)
    sc.ues[0].flows = [FlowSpec(traffic="backlogged")]
    eng = Engine(sc, seed=5)
    eng.run()
    u = eng.ues[0]
    outage_s = sum(h.outage_ms for h in eng.handovers) / 1000
    expected = 10e6 / 8 * (30.0 - outage_s)
    assert eng.handovers
    assert u.delivered_bytes == pytest.approx(expected, rel=0.01)


def test_a3_model_handover_rate_and_pingpong_follow_geometry_and_offset() -> None:
    import copy

    import numpy as np

    from octoric.sim.mobility import PROFILES, a3_schedule

    pp_share = []
    for offset in (1.0, 6.0):
        cfg = copy.deepcopy(PROFILES["hsr"])
        cfg.model, cfg.cell_spacing_m, cfg.a3_offset_db = "a3", 550.0, offset
        evs = [a3_schedule(cfg, u, 300 * 10**6, np.random.default_rng(u)) for u in range(6)]
        allev = [e for ev in evs for e in ev]
        border_s = 550.0 / (300 / 3.6)
        per_ue = len(allev) / 6
        # about one handover per border crossed, more with ping-pong, never fewer than 80 %
        assert 0.8 * 300 / border_s <= per_ue <= 1.5 * 300 / border_s
        assert all(1 <= abs(e.target - e.source) <= 2 for e in allev)
        for ev in evs:  # each starts from the previous target
            assert all(b.source == a.target for a, b in itertools.pairwise(ev))
        pp_share.append(sum(e.pingpong for e in allev) / len(allev))
    assert pp_share[0] > 2 * pp_share[1]  # a larger A3 offset suppresses ping-pong


def test_a3_model_runs_in_a_scenario(tmp_path: Path) -> None:
    p = tmp_path / "a3.yaml"
    p.write_text(
        "duration_s: 60\nran: {cells: 3}\nues:\n  - count: 2\n"
        "    mobility: {profile: driving, model: a3, speed_kmh: 120, cell_spacing_m: 400}\n"
    )
    s = run_offline(load(str(p)), seed=1).summary
    assert s["handover_stats"]["count"] >= 6
    assert all(f["frames_decoded"] > 0 for f in s["flows"])
