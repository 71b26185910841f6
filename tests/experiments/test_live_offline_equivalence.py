"""Issue #11 done-when 3: the same simulated slots reach the OCC engine identically through the
live E2 path and through the offline path, and the engine's outputs are identical.

- live: the gNB's E2 agent aggregates the slots into 1 ms granules, encodes E2SM-KPM format 3
  in E2AP RIC indications (real bytes), and the OCC xApp's own handler decodes them
  (``OccXapp.on_indication``: ``kpm_input.engine_input``, then ``OccEngine.ingest``);
- offline: ``octoric.experiments.occ_source.OccEngineAbw`` takes the engine's ``KpmReport``s.

Both engines are tapped at ``ingest``: per UE, granule (ms) and measurement the input block the
kernel gets must be equal (NaN-equal), and so must every per-granule and per-batch output.
The first test stays in-process (the agent's queued PDUs go straight to the xApp handler); the
second sends them through the embedded RIC's real e2term (``@pytest.mark.e2e``).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from ricsdl.syncstorage import SyncStorage
from testkit.live_sim import start_live_sim
from testkit.sim_agent import offline_agent

from octoric.contracts import kpm as K
from octoric.contracts.message_types import RIC_INDICATION
from octoric.e2sm import e2ap, indication, kpm
from octoric.e2sm.e2ap_ies import RicActionToBeSetup, RicRequestId, RicSubscriptionDetails
from octoric.experiments.occ_source import OccEngineAbw
from octoric.redis_server import free_port
from octoric.sim.e2agent import MEASUREMENTS, E2Agent
from octoric.sim.engine import Engine
from octoric.sim.measurements import KpmReport
from octoric.sim.overrides import apply_layout
from octoric.sim.scenario import Scenario, load
from octoric.xapps.base.sdl import SdlStore
from octoric.xapps.base.shell import RmrMessage
from octoric.xapps.occ import metrics as M
from octoric.xapps.occ.batch import AbwBatch
from octoric.xapps.occ.engine import OccEngine
from octoric.xapps.occ.kpm_input import engine_input
from octoric.xapps.occ.xapp import OccXapp

GRANULE_OUT = ("target_bps_granules", "frame_abw_bps_granules", "cp_bps_granules")
BATCH_OUT = (
    "target_bps", "cp_bps", "frame_abw_bps", "fair_share_bps", "cp_prime_bps",
    "frame_interval_ms", "frame_aware", "bottleneck", "handover", "fallback", "outage",
)  # fmt: skip


class Tap:
    """Records what an ``OccEngine`` is given and returns, keyed by (UE, ms)."""

    def __init__(self, engine: OccEngine) -> None:
        self.shift_ms = 0  # subtracted from the engine's times (Unix ms -> slot ms)
        self.inputs: dict[tuple[int, int], np.ndarray] = {}  # BLOCK_ROWS values
        self.granules: dict[tuple[int, int], np.ndarray] = {}  # GRANULE_OUT values
        self.batches: dict[tuple[int, int], np.ndarray] = {}  # BATCH_OUT values at t_ms
        inner = engine.ingest

        def ingest(ue_ids: Any, t0_ms: int, metrics: dict[str, Any]) -> AbwBatch:
            batch = inner(ue_ids, t0_ms, metrics)  # raises before we record a rejected batch
            ids = np.asarray(ue_ids, dtype=np.int64)
            t0_ms -= self.shift_ms
            block = M.build_block(ids, metrics, engine.config.prb_total_dl)
            for i, ue in enumerate(ids.tolist()):
                for g in range(block.shape[2]):
                    self.inputs[(ue, t0_ms + g)] = block[:, i, g].copy()
            for i, ue in enumerate(batch.ue_ids.tolist()):
                per_g = np.stack([getattr(batch, f)[i] for f in GRANULE_OUT])
                for g in range(per_g.shape[1]):
                    self.granules[(ue, t0_ms + g)] = per_g[:, g]
                row = [float(getattr(batch, f)[i]) for f in BATCH_OUT]
                self.batches[(ue, batch.t_ms - self.shift_ms)] = np.asarray(row)
            return batch

        engine.ingest = ingest  # type: ignore[method-assign,assignment]


def assert_same(live: dict[tuple[int, int], np.ndarray], off: dict[tuple[int, int], np.ndarray],
                what: str, keys: set[tuple[int, int]] | None = None) -> int:  # fmt: skip
    """``live`` and ``off`` agree on ``keys`` (default: all of either), NaN-equal."""
    if keys is None:
        assert live.keys() == off.keys(), f"{what}: different (UE, ms) sets"
        keys = set(live)
    for key in sorted(keys):
        np.testing.assert_array_equal(live[key], off[key], err_msg=f"{what} at (UE, ms) {key}")
    return len(keys)


def scenario(seconds: float) -> Scenario:
    """A small static cell at 30 kHz SCS (two slots per 1 ms granule, so the aggregation
    matters) with TDD, four UEs with video flows and fading channels."""
    sc = load("multi-ue")
    apply_layout(sc, cells=1, ues=4)
    sc.ran.slot_ms = 0.5
    sc.ran.tdd = "DDDSU"
    sc.duration_s = seconds
    return sc


def offline_source(eng: Engine) -> OccEngineAbw:
    dl = sum(eng.tdd) / len(eng.tdd)
    src = OccEngineAbw(eng.slot_us, eng.sc.ran.n_prb, eng.sc.ran.scheduler, dl)
    eng.add_kpm_sink(src)
    return src


def in_process_xapp(config_of: OccEngineAbw) -> OccXapp:
    """The OCC xApp's handlers without RMR (SDL in memory), its engine configured as the
    offline source's (the comparison is of the input path, not of two configurations)."""
    sdl = SdlStore("occ", storage=SyncStorage(fake_db_backend="dict"))
    xapp = OccXapp(free_port(), free_port(), sdl=sdl)
    xapp.cfg = type(xapp.cfg)(publish_reports=False)
    xapp.engine = OccEngine(config_of.engine.config)
    return xapp


def subscribe(agent: E2Agent, xapp: OccXapp) -> None:
    """What the xApp asks submgr for (its reporting period, granularity and measurements,
    plus OCC.PrbTotalDl the agent offers), delivered to the agent as E2AP."""
    meas = xapp.kpm_measurements(MEASUREMENTS)
    action = kpm.action_definition_style4(meas, granularity_ms=xapp.cfg.granularity_ms)
    req = e2ap.RicSubscriptionRequest(
        RicRequestId(10, 1),
        kpm.RAN_FUNCTION_ID,
        RicSubscriptionDetails(
            kpm.encode_kpm(kpm.KpmEventTrigger(xapp.cfg.reporting_period_ms)),
            (RicActionToBeSetup(1, "report", kpm.encode_kpm(action)),),
        ),
    )
    asyncio.run(agent._handle(req))
    first = agent._queue.get_nowait()
    assert isinstance(e2ap.decode_e2ap(first), e2ap.RicSubscriptionResponse)


@pytest.mark.unit
def test_live_and_offline_paths_feed_the_occ_engine_identically() -> None:
    sc = scenario(4.0)
    eng, agent = offline_agent(sc, seed=7)  # gNB 0's agent is a KPM sink of the engine
    off = offline_source(eng)
    xapp = in_process_xapp(off)
    live_tap, off_tap = Tap(xapp.engine), Tap(off.engine)
    subscribe(agent, xapp)

    pdus = 0
    for slot in range(200, eng.end_slot + 1, 200):  # 100 ms steps
        eng.run_until(slot)
        while not agent._queue.empty():
            pdu = agent._queue.get_nowait()  # the E2AP bytes the agent would send
            xapp.on_indication(RmrMessage(RIC_INDICATION, 1, agent.meid, pdu))
            pdus += 1

    assert pdus >= 390 and xapp.counters["indications"] == pdus
    assert not xapp.rejected and not xapp.dropped_rows
    # every granule of every UE made it, through both paths
    n_ms = round(sc.duration_s * 1000)
    assert len(off_tap.inputs) == 4 * n_ms
    n_in = assert_same(live_tap.inputs, off_tap.inputs, "engine input")
    n_g = assert_same(live_tap.granules, off_tap.granules, "per-granule output")
    n_b = assert_same(live_tap.batches, off_tap.batches, "per-batch output")
    assert n_in == n_g == 4 * n_ms and n_b == 4 * n_ms // 10
    # the scenario exercised the engine: traffic, idle PRBs, several active UEs, targets
    inp = np.stack(list(off_tap.inputs.values()))
    row = {name: i for i, name in enumerate(M.BLOCK_ROWS)}
    assert inp[:, row[K.PRB_USED_DL]].max() > 0 and inp[:, row[K.PRB_AVAIL_DL]].max() > 0
    assert inp[:, row[K.ACTIVE_UES_DL]].max() >= 2
    assert (inp[:, row[K.PRB_USED_DL]] % 1 != 0).any()  # a granule mean of two slots
    out = np.stack(list(off_tap.batches.values()))
    assert (out[:, BATCH_OUT.index("target_bps")] > 0).any()


# --- through the embedded RIC's real e2term ------------------------------------------------

PROBE = Path(__file__).resolve().parents[1] / "sim" / "programs" / "e2_probe.py"


class Recorder:
    def __init__(self) -> None:
        self.reports: list[KpmReport] = []

    def on_report(self, report: KpmReport, now_us: int) -> None:
        self.reports.append(report)


def run_probe(stack: Any, tmp: Path, meid: str, n_kpm: int) -> list[bytes]:
    """KPM indications an unmodified ricxappframe xApp received from e2term (E2AP bytes)."""
    from octoric.deploy.xapp_env import descriptor, xapp_environment
    from octoric.ric.stack import free_pair

    rmr_port, http_port = free_pair(), free_port()
    cfg = tmp / "probe-config.json"
    rx = ["RIC_INDICATION", "RIC_CONTROL_ACK", "RIC_CONTROL_FAILURE"]
    cfg.write_text(json.dumps(descriptor("eqprobe", rmr_port, rx=rx, tx=["RIC_CONTROL_REQ"])))
    env = xapp_environment(stack.rt, "eqprobe", rmr_port, http_port, cfg)
    out = subprocess.run(
        [sys.executable, str(PROBE), str(rmr_port), str(http_port), meid, "--kpm", str(n_kpm)],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    events = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    return [
        bytes.fromhex(e["payload"])
        for e in events
        if e["event"] == "indication" and e["kind"] == "kpm"
    ]


@pytest.mark.integration
@pytest.mark.e2e
def test_through_e2term_the_occ_engine_sees_what_offline_sees(
    shared_ric: Any, tmp_path: Path
) -> None:
    from octoric.ric.stack import LoopThread

    sc = scenario(120.0)
    rec = Recorder()
    lt = LoopThread()
    try:
        sim, task = start_live_sim(lt, sc, 7, shared_ric.rt.ric.e2_port, rec)
        agent = sim.agents[0]
        pdus = run_probe(shared_ric, tmp_path, agent.meid, 60)
        lt.loop.call_soon_threadsafe(sim.stop, "test")
        lt.call(asyncio.wait_for(asyncio.shield(task), 20))
    finally:
        lt.stop()
    assert len(pdus) >= 60

    eng = sim.engine
    off = OccEngineAbw(eng.slot_us, sc.ran.n_prb, sc.ran.scheduler, sum(eng.tdd) / len(eng.tdd))
    xapp = in_process_xapp(off)
    live_tap, off_tap = Tap(xapp.engine), Tap(off.engine)

    # live: the bytes e2term delivered, through the xApp's handler. Its engine runs on Unix ms
    # (the indication header's collection start), the offline one on slot ms: the offset must
    # be one constant, and the live tap keys by slot ms.
    slot_s = eng.slot_us / 1e6
    first_slot: int | None = None
    shifts = set()
    for pdu in pdus:
        _, cols = indication.parse_ric_indication(pdu)
        slot0 = round((cols.collect_start - sim.t0_unix) / slot_s)
        first_slot = slot0 if first_slot is None else first_slot
        live_tap.shift_ms = engine_input(pdu).t0_ms - slot0 * eng.slot_us // 1000
        shifts.add(live_tap.shift_ms)
        xapp.on_indication(RmrMessage(RIC_INDICATION, 1, agent.meid, pdu))
    assert len(shifts) == 1 and not xapp.rejected and not xapp.dropped_rows
    assert first_slot is not None
    # offline: the recorded reports of the same slots, from the first reported one on
    for r in rec.reports:
        if r.start_slot >= first_slot:
            off.on_report(r, r.start_slot * eng.slot_us)
    live_keys = set(live_tap.inputs)
    assert live_keys <= set(off_tap.inputs), "live granules the offline path never saw"
    n = assert_same(live_tap.inputs, off_tap.inputs, "engine input", live_keys)
    assert n >= 60 * 10 * 4
    assert_same(live_tap.granules, off_tap.granules, "per-granule output", live_keys)
    assert_same(live_tap.batches, off_tap.batches, "per-batch output", set(live_tap.batches))
