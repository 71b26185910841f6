"""The live simulator's E2 node agent against the real embedded RIC (Redis, e2term, submgr,
rtmgr, appmgr, a1 as processes): E2 setup with KPM + RC, a KPM style-4 subscription through
submgr's REST API by an unmodified ricxappframe xApp whose decoded per-UE values equal the
engine's own KpmReports for the same slots, RC style-4 handover reports, and RC control
action 100 reaching the dropper and being acknowledged."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from testkit.live_sim import start_live_sim

from octoric.deploy.xapp_env import descriptor, xapp_environment
from octoric.e2sm import e2ap, indication, rc
from octoric.redis_server import free_port
from octoric.ric.stack import LoopThread, RicStack, free_pair
from octoric.sim.measurements import KpmReport
from octoric.sim.overrides import apply_layout
from octoric.sim.scenario import MobilitySpec, load

pytestmark = [pytest.mark.integration, pytest.mark.e2e]
PROBE = Path(__file__).parent / "programs" / "e2_probe.py"


@pytest.fixture(scope="module")
def ric(shared_ric: RicStack) -> RicStack:
    return shared_ric


class Recorder:
    def __init__(self) -> None:
        self.reports: dict[int, KpmReport] = {}

    def on_report(self, report: KpmReport, now_us: int) -> None:
        self.reports[report.start_slot] = report


def run_probe(stack: RicStack, tmp: Path, meid: str, *args: str) -> list[dict[str, Any]]:
    rmr_port, http_port = free_pair(), free_port()
    cfg = tmp / "probe-config.json"
    rx = ["RIC_INDICATION", "RIC_CONTROL_ACK", "RIC_CONTROL_FAILURE"]
    cfg.write_text(json.dumps(descriptor("simprobe", rmr_port, rx=rx, tx=["RIC_CONTROL_REQ"])))
    env = xapp_environment(stack.rt, "simprobe", rmr_port, http_port, cfg)
    out = subprocess.run(
        [sys.executable, str(PROBE), str(rmr_port), str(http_port), meid, *args],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    return [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]


def ric_status(stack: RicStack) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-m", "octoric.cli", "ric", "status", "--json"],
        capture_output=True, text=True, timeout=30,
        env={**os.environ, "OCTORIC_STATE_DIR": str(stack.state_dir)},
    )  # fmt: skip
    return dict(json.loads(out.stdout))


def expected(rep: KpmReport, i: int, j: int) -> dict[str, float]:
    """What a gNB must report for slot row i, UE column j of an engine report."""
    c = int(rep.ue_cell[i, j])
    if c < 0:
        return {}
    mcs = int(rep.mcs_dl[i, j])
    return {
        "RRU.PrbUsedDl": float(rep.prb_used_dl[i, j]),
        "RRU.PrbAvailDl": float(rep.prb_avail_dl[i, c]),
        "OCC.ActiveUesDl": float(rep.active_ues_dl[i, c]),
        "OCC.McsDl": float(mcs) if mcs >= 0 else float("nan"),
        "OCC.BitsPerPrbDl": float(rep.bits_per_prb_dl[i, j]),
        "OCC.DlBufferBytes": float(rep.dl_buffer_bytes[i, j]),
        "OCC.DlArrivedBytes": float(rep.dl_arrived_bytes[i, j]),
        "DRB.UEThpDl": float(rep.ue_thp_dl_kbps[i, j]),
    }


def test_live_agent_with_the_ric(ric: RicStack, tmp_path: Path) -> None:
    sc = load("multi-ue")
    apply_layout(sc, cells=2, ues=8)
    for u in sc.ues:  # frequent handovers between the gNB's two cells
        u.mobility = MobilitySpec("hsr", ho_interval_s=1.0, failure_prob=0.0)
    sc.duration_s = 120
    rec = Recorder()
    lt = LoopThread()
    try:
        sim, task = start_live_sim(lt, sc, 3, ric.rt.ric.e2_port, rec)
        agent = sim.agents[0]

        # the node is in `octoric ric status` with both RAN functions
        st = ric_status(ric)
        node = next(n for n in st["nodes"] if n["meid"] == agent.meid)
        assert node["connected"]
        assert {(f["id"], f["oid"]) for f in node["ran_functions"]} == {
            (2, "1.3.6.1.4.1.53148.1.2.2.2"),
            (3, "1.3.6.1.4.1.53148.1.1.2.3"),
        }

        ue3 = sim.engine.ues[3]
        assert ue3.queue.dropper is None
        events = run_probe(
            ric, tmp_path, agent.meid, "--kpm", "40", "--rc", "2", "--control-ue",
            str(ue3.amf_ue_ngap_id),
        )  # fmt: skip
        by = lambda kind: [e for e in events if e["event"] == kind]  # noqa: E731
        assert all(p["status"] == 201 for p in by("posted")), by("posted")

        # KPM: decoded per-UE values == the engine's records of the same slots
        kpm_inds = [e for e in by("indication") if e["kind"] == "kpm"]
        assert len(kpm_inds) >= 40
        slot_s = sim.engine.slot_us / 1e6
        compared = 0
        sns = []
        for e in kpm_inds:
            ind, cols = indication.parse_ric_indication(bytes.fromhex(e["payload"]))
            assert ind.ran_function_id == 2 and e["meid"] == agent.meid
            sns.append(ind.sn)
            assert cols.granularity_ms == 1 and cols.values.shape[2] == 10  # 10 ms, 1 ms granules
            start = round((cols.collect_start - sim.t0_unix) / slot_s)
            rep = rec.reports[start - start % 10]
            off = start - rep.start_slot
            for u, ue_id in enumerate(cols.ue_ids):
                assert ue_id is not None and ue_id.guami is not None
                j = rep.ue_ids.index(ue_id.amf_ue_ngap_id)
                for g in range(10):
                    exp = expected(rep, off + g, j)
                    for m, name in enumerate(cols.metrics):
                        got = cols.values[u, m, g]
                        want = exp.get(name, float("nan"))
                        assert got == want or (np.isnan(got) and np.isnan(want)), (name, g)
                        compared += 1
        assert compared >= 40 * 8 * 10 * 4
        assert sns == list(range(sns[0], sns[0] + len(sns))), "indications lost or reordered"

        # RC style 4: handover reports name the UE and its new serving cell
        rc_inds = [e for e in by("indication") if e["kind"] == "rc"]
        assert len(rc_inds) >= 2
        amfs = {u.amf_ue_ngap_id for u in sim.engine.ues}
        for e in rc_inds:
            ind = e2ap.decode_e2ap(bytes.fromhex(e["payload"]))
            assert isinstance(ind, e2ap.RicIndication) and ind.ran_function_id == 3
            hdr = rc.decode_rc(rc.RcIndicationHeader, ind.header)
            assert hdr.condition_id == 2  # the UE-ID-change condition of event_trigger_ue_info
            msg = rc.decode_rc(rc.RcIndicationMessage, ind.message)
            assert msg.ue_params is not None
            ((ue_id, params),) = msg.ue_params
            assert ue_id.amf_ue_ngap_id in amfs
            values = {p.id: p.value for p in params}
            cell = values[17011]
            assert isinstance(cell, rc.Element) and isinstance(cell.value, rc.Bits)
            assert cell.value.value >> 14 == agent.gnb_id and cell.value.nbits == 36

        # RC control action 100: acknowledged, and the UE's queue has the configured dropper
        (ans,) = by("control_answer")
        assert ans["mtype"] == 12041
        ack = e2ap.decode_e2ap(bytes.fromhex(ans["payload"]))
        assert isinstance(ack, e2ap.RicControlAcknowledge) and ack.request_id.instance_id == 42
        d = ue3.queue.dropper
        assert d is not None and d.cfg.window_ms == 80 and not d.cfg.drop_by_bitrate
        assert agent.stats.controls_applied == 1
        assert all(x["status"] == 204 for x in by("deleted"))

        deadline = time.monotonic() + 10
        while agent.subs:
            assert time.monotonic() < deadline, "subscriptions were not deleted at the node"
            time.sleep(0.05)

        # a lost E2 association: the agent reconnects (backoff) and sets up again
        assert agent.conn is not None
        lt.loop.call_soon_threadsafe(agent.conn.close)
        deadline = time.monotonic() + 15
        while agent.stats.setups < 2 or not agent.setup_done.is_set():
            assert time.monotonic() < deadline, agent.stats
            time.sleep(0.05)
        assert agent.stats.connects == 2
        node = next(n for n in ric_status(ric)["nodes"] if n["meid"] == agent.meid)
        assert node["connected"]

        lt.loop.call_soon_threadsafe(sim.stop, "test")
        res = lt.call(asyncio.wait_for(asyncio.shield(task), 20))
        assert res.stopped_because == "test"
        live = res.summary["live"]
        assert live["nodes"][0]["stats"]["kpm_indications"] >= 40
        assert live["nodes"][0]["stats"]["encode_fallbacks"] == 0
        assert res.summary["ues"][3]["dropper"] is not None
    finally:
        lt.stop()
