"""The E2 node agent without a RIC (a fake E2 connection): KPM styles 1, 2, 3 and 5,
granule aggregation, subscription errors, RC reports and controls; the UDP feedback parser
and listener; scenario layout overrides; live-mode CLI errors."""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
import pytest
from testkit.sim_agent import QueuedConn, drain, offline_agent

from octoric.contracts.feedback import FeedbackFormatError, parse_feedback
from octoric.e2sm import e2ap, indication, kpm, rc
from octoric.e2sm.common import Guami, UeId
from octoric.e2sm.e2ap_ies import RicActionToBeSetup, RicRequestId, RicSubscriptionDetails
from octoric.sim.e2agent import GUAMI, E2Agent
from octoric.sim.engine import Engine
from octoric.sim.errors import SimError
from octoric.sim.live import FeedbackApplier, UdpAbw
from octoric.sim.measurements import KpmReport
from octoric.sim.overrides import apply_layout
from octoric.sim.scenario import MobilitySpec, Scenario, load

pytestmark = pytest.mark.unit


class Recorder:
    def __init__(self) -> None:
        self.reports: list[KpmReport] = []

    def on_report(self, report: KpmReport, now_us: int) -> None:
        self.reports.append(report)


def _scenario(cells: int = 2, ues: int = 4) -> Scenario:
    sc = load("multi-ue")
    apply_layout(sc, cells=cells, ues=ues)
    sc.duration_s = 5
    return sc


def _agent(sc: Scenario) -> tuple[Engine, E2Agent, Recorder]:
    eng, agent = offline_agent(sc, 2)
    rec = Recorder()
    eng.add_kpm_sink(rec)
    eng.add_mobility_sink(agent.on_mobility)
    return eng, agent, rec


def _kpm_sub(agent: E2Agent, action: kpm.KpmActionDefinition, period_ms: int = 10) -> Any:
    req = e2ap.RicSubscriptionRequest(
        RicRequestId(10, 1),
        2,
        RicSubscriptionDetails(
            kpm.encode_kpm(kpm.KpmEventTrigger(period_ms)),
            (RicActionToBeSetup(1, "report", kpm.encode_kpm(action)),),
        ),
    )
    asyncio.run(agent._handle(req))
    return drain(agent)


def test_style5_two_ues_two_ms_granules_aggregate_the_slots() -> None:
    eng, agent, rec = _agent(_scenario())
    ids = [agent.ue_id(0), agent.ue_id(2)]
    names = ["RRU.PrbUsedDl", "OCC.DlBufferBytes", "OCC.DlArrivedBytes"]
    (resp,) = _kpm_sub(agent, kpm.action_definition_style5(ids, names, granularity_ms=2), 20)
    assert isinstance(resp, e2ap.RicSubscriptionResponse) and resp.admitted == [1]
    eng.run_until(2000)
    inds = [m for m in drain(agent) if isinstance(m, e2ap.RicIndication)]
    assert len(inds) >= 90  # one per 20 ms
    by_start = {r.start_slot: r for r in rec.reports}
    checked = 0
    for ind in inds[5:15]:
        cols = indication.parse_indication(ind.header, ind.message)
        assert [u.amf_ue_ngap_id for u in cols.ue_ids if u] == [1000, 1002]
        assert cols.metrics == names and cols.values.shape == (2, 3, 10)
        start = round((cols.collect_start - 0) * 1000)
        slots = np.concatenate([by_start[s].prb_used_dl for s in (start, start + 10)])
        buf = np.concatenate([by_start[s].dl_buffer_bytes for s in (start, start + 10)])
        arr = np.concatenate([by_start[s].dl_arrived_bytes for s in (start, start + 10)])
        for u, col in enumerate((0, 2)):
            np.testing.assert_allclose(cols.values[u, 0], slots[:, col].reshape(10, 2).mean(1))
            np.testing.assert_array_equal(cols.values[u, 1], buf[1::2, col])
            np.testing.assert_array_equal(cols.values[u, 2], arr[:, col].reshape(10, 2).sum(1))
            checked += 1
    assert checked == 20


def test_style1_cell_level_and_styles_2_3() -> None:
    eng, agent, rec = _agent(_scenario())
    names = ["RRU.PrbAvailDl", "RRU.PrbUsedDl", "DRB.UEThpDl"]
    (resp,) = _kpm_sub(agent, kpm.action_definition_style1(names))
    assert isinstance(resp, e2ap.RicSubscriptionResponse)
    eng.run_until(300)
    inds = [m for m in drain(agent) if isinstance(m, e2ap.RicIndication)]
    msg = kpm.decode_kpm(kpm.KpmIndicationMessage, inds[3].message)
    assert isinstance(msg.format, kpm.IndicationFormat1)
    rep = next(r for r in rec.reports if r.start_slot == 30)
    got = [r.values for r in msg.format.records]
    for g, row in enumerate(got):
        assert row[0] == rep.prb_avail_dl[g].sum()  # idle PRBs of both cells
        assert row[1] == rep.prb_used_dl[g].sum()
    # style 2: one UE, format 1
    agent.subs.clear()
    _kpm_sub(agent, kpm.action_definition_style2(agent.ue_id(1), ["OCC.McsDl"]))
    eng.run_until(400)
    ind = next(m for m in drain(agent) if isinstance(m, e2ap.RicIndication))
    m2 = kpm.decode_kpm(kpm.KpmIndicationMessage, ind.message)
    assert isinstance(m2.format, kpm.IndicationFormat1) and len(m2.format.records) == 10
    # style 3: format 2 with the matched UEs
    agent.subs.clear()
    cond = kpm.MeasCond("DRB.UEThpDl", (kpm.MatchingCond(test=kpm.TestCond("isStat", "present")),))
    _kpm_sub(agent, kpm.action_definition_style3([cond]))
    eng.run_until(500)
    ind = next(m for m in drain(agent) if isinstance(m, e2ap.RicIndication))
    m3 = kpm.decode_kpm(kpm.KpmIndicationMessage, ind.message)
    assert isinstance(m3.format, kpm.IndicationFormat2)
    assert len(m3.format.conditions[0].matched_ues or ()) == 4


def test_subscription_and_delete_errors() -> None:
    _, agent, _ = _agent(_scenario())
    (fail,) = _kpm_sub(agent, kpm.action_definition_style4(["Not.AMeasurement"]))
    assert isinstance(fail, e2ap.RicSubscriptionFailure)
    assert fail.cause.value == "action-not-supported"
    bad_rf = e2ap.RicSubscriptionRequest(
        RicRequestId(1, 2), 9, RicSubscriptionDetails(b"\x00", (RicActionToBeSetup(1),))
    )
    asyncio.run(agent._handle(bad_rf))
    (fail2,) = drain(agent)
    assert isinstance(fail2, e2ap.RicSubscriptionFailure)
    assert fail2.cause.value == "ran-function-id-invalid"
    asyncio.run(agent._handle(e2ap.RicSubscriptionDeleteRequest(RicRequestId(5, 5), 2)))
    (dfail,) = drain(agent)
    assert isinstance(dfail, e2ap.RicSubscriptionDeleteFailure)
    assert not agent.subs


def _control(agent: E2Agent, ue: UeId, a: rc.OctopusAdaptation) -> e2ap.E2apMessage:
    h, m = rc.octopus_control(ue, a)
    asyncio.run(agent._handle(e2ap.RicControlRequest(RicRequestId(3, 4), 3, h, m)))
    (ans,) = drain(agent)
    return ans


def test_control_action_100() -> None:
    eng, agent, _ = _agent(_scenario())
    ans = _control(agent, agent.ue_id(1), rc.OctopusAdaptation(1, drop_by_message=False))
    assert isinstance(ans, e2ap.RicControlAcknowledge) and ans.outcome is not None
    d = eng.ues[1].queue.dropper
    assert d is not None and not d.cfg.drop_by_msg and d.cfg.window_ms == 50
    ans = _control(agent, agent.ue_id(1), rc.OctopusAdaptation(1, enable=False))
    assert isinstance(ans, e2ap.RicControlAcknowledge) and eng.ues[1].queue.dropper is None
    stranger = UeId.gnb(77, Guami(bytes.fromhex("00f110"), 1, 1, 0))
    ans = _control(agent, stranger, rc.OctopusAdaptation(1))
    assert isinstance(ans, e2ap.RicControlFailure)
    ans = _control(agent, agent.ue_id(1), rc.OctopusAdaptation(5))
    assert isinstance(ans, e2ap.RicControlFailure)
    assert agent.stats.controls_applied == 2 and agent.stats.controls_failed == 2


def test_rc_report_at_handovers_from_the_right_gnb() -> None:
    sc = _scenario(cells=2, ues=2)
    sc.ran.cells_per_gnb = 1  # two gNBs: the source reports the start, the target the end
    for u in sc.ues:
        u.mobility = MobilitySpec("hsr", ho_interval_s=0.5, failure_prob=0.0)
    eng = Engine(sc, 4)
    agents = [E2Agent(eng, g, "127.0.0.1", 1) for g in (0, 1)]
    for a in agents:
        eng.add_mobility_sink(a.on_mobility)
        a.conn = QueuedConn()
        req = e2ap.RicSubscriptionRequest(
            RicRequestId(20, 1),
            3,
            RicSubscriptionDetails(
                rc.encode_rc(rc.event_trigger_ue_info()),
                (RicActionToBeSetup(7, "report", rc.encode_rc(rc.RcActionDefinition(4, (202,)))),),
            ),
        )
        asyncio.run(a._handle(req))
        assert isinstance(drain(a)[0], e2ap.RicSubscriptionResponse)
    eng.run_until(4000)
    assert eng.handovers
    phases: dict[int, list[int]] = {0: [], 1: []}
    for g, a in enumerate(agents):
        for m in drain(a):
            assert isinstance(m, e2ap.RicIndication) and m.action_id == 7
            msg = rc.decode_rc(rc.RcIndicationMessage, m.message)
            assert msg.ue_params is not None
            (ue, params) = msg.ue_params[0]
            assert ue.guami == GUAMI
            v = {p.id: p.value for p in params}
            phase = v[30001]
            assert isinstance(phase, rc.Element) and isinstance(phase.value, int)
            src, tgt = v[30002], v[17011]
            assert isinstance(src, rc.Element) and isinstance(src.value, rc.Bits)
            assert isinstance(tgt, rc.Element) and isinstance(tgt.value, rc.Bits)
            # starts come from the source gNB, ends from the target gNB
            here = src.value.value if phase.value == 1 else tgt.value.value
            assert here >> 14 == a.gnb_id
            phases[g].append(phase.value)
    n = len(eng.handovers)
    assert sum(p.count(1) for p in phases.values()) == n
    assert sum(p.count(2) for p in phases.values()) >= n - 2  # the last may still be running


def test_feedback_parser_and_listener() -> None:
    fb = parse_feedback(b'{"ue": 1003, "target_bps": 2.5e6, "fallback": false}')
    assert (fb.ue, fb.target_bps, fb.fallback) == (1003, 2.5e6, False)
    fb = parse_feedback(b'{"ue": 1003, "fallback": true}')
    assert (fb.ue, fb.fallback) == (1003, True)
    bad_datagrams = [
        b"nope",
        b"[1]",
        b'{"ue": -1, "target_bps": 1}',
        b'{"ue": 1, "target_bps": "x"}',
        b'{"ue": 1, "target_bps": 1, "fallback": 2}',
        b'{"ue": true, "target_bps": 1}',
    ]
    for bad in bad_datagrams:
        with pytest.raises(FeedbackFormatError):
            parse_feedback(bad)
    sc = _scenario(cells=1, ues=2)
    for u in sc.ues:
        for f in u.flows:
            f.scheme = "occ"
    abw = UdpAbw()
    eng = Engine(sc, 1, None, abw)
    lst = FeedbackApplier(eng, abw)
    lst.datagram_received(b'{"ue": 1001, "target_bps": 1500000}', ("127.0.0.1", 9))
    lst.datagram_received(b'{"ue": 5, "target_bps": 1}', ("127.0.0.1", 9))
    lst.datagram_received(b"garbage", ("127.0.0.1", 9))
    assert abw.estimate_bps(1001) == 1.5e6 and abw.estimate_bps(1000) is None
    assert eng.flows[1].ctrl is not None and eng.flows[1].ctrl.target_bps(0) == 1.5e6
    assert (lst.stats.applied, lst.stats.unknown_ue, lst.stats.bad) == (1, 1, 1)


def test_layout_overrides() -> None:
    sc = apply_layout(load("multi-ue"), cells=2, ues=5)
    assert sc.ran.cells == 2 and sc.ran.cells_per_gnb == 2
    assert [u.cell for u in sc.ues] == [0, 1, 0, 1, 0] and all(u.count == 1 for u in sc.ues)
    sc = apply_layout(load("hsr"), cells_per_gnb=3, mobility="static")
    assert sc.ran.cells_per_gnb == 3 and all(u.mobility.profile == "static" for u in sc.ues)
    with pytest.raises(SimError):
        apply_layout(load("static"), ues=0)
    with pytest.raises(SimError):
        apply_layout(load("static"), mobility="teleport")


def test_live_cli_errors(capsys: pytest.CaptureFixture[str]) -> None:
    from octoric.cli import main

    # (without --ric-e2, --live uses the embedded RIC's endpoint: tests/sim/test_inputs.py)
    assert main(["sim", "run", "--ric-e2", "127.0.0.1:1", "--duration", "1"]) != 0
    assert "needs --live" in capsys.readouterr().err
    assert main(["sim", "run", "--live", "--ric-e2", "nohost", "--duration", "1"]) != 0


def test_live_sim_registers_occ_flows_and_takes_udp_feedback() -> None:
    import json
    import socket
    import threading
    from http.server import BaseHTTPRequestHandler, HTTPServer

    from octoric.redis_server import free_port
    from octoric.sim.live import LiveOptions, LiveSim

    posted: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            posted.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(201)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    http = HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=http.serve_forever, daemon=True).start()
    sc = _scenario(cells=1, ues=2)
    for u in sc.ues:
        for f in u.flows:
            f.scheme = "occ"
    url = f"http://127.0.0.1:{http.server_address[1]}/occ/v1/flows"
    # no RIC listens on the E2 port: the agent keeps retrying, the sim runs regardless
    opts = LiveOptions(ric_port=free_port(), duration_s=1.5, feedback_port=0, occ_register=url)

    async def main() -> tuple[LiveSim, Any]:
        sim = LiveSim(sc, 1, opts)
        task = asyncio.create_task(sim.run())
        while sim.feedback_addr is None or sim.engine.slot < 300:
            await asyncio.sleep(0.01)
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.sendto(b'{"ue": 1001, "target_bps": 1234567, "fallback": false, "ts": 1.0}',
                     sim.feedback_addr)  # fmt: skip
            s.sendto(b"not json", sim.feedback_addr)
        return sim, await task

    try:
        sim, res = asyncio.run(main())
    finally:
        http.shutdown()
    assert {p["ue"] for p in posted} == {1000, 1001}
    assert all(p["format"] == "json" and p["guami"] == "00f110:1:1:0" for p in posted)
    assert posted[0]["address"] == f"127.0.0.1:{sim.feedback_addr[1]}"  # type: ignore[index]
    fb = res.summary["live"]["feedback"]
    assert (fb["applied"], fb["bad"], fb["registered_ues"]) == (1, 1, [1000, 1001])
    assert sim.engine.flows[1].abw_bps == 1234567
    assert res.summary["live"]["nodes"][0]["stats"]["connects"] == 0
    assert res.stopped_because == "duration" and res.summary["sim_seconds"] == 1.5
