"""OCC.PrbTotalDl end to end: the embedded RIC (processes), a live simulated gNB with a
106-PRB cell whose KPM RAN function definition lists OCC.PrbTotalDl, a scripted node whose
definition does not (as a stock gNB), and the OCC xApp as a subprocess. The xApp reads both
definitions from the R-NIB that e2term wrote and asks the simulated gNB, and only it, for
OCC.PrbTotalDl; the gNB admits the action and the xApp estimates its UEs."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from octoric.e2sm import kpm
from octoric.e2sm.node_session import ScriptedNode
from octoric.redis_server import free_port
from octoric.ric.stack import LoopThread, free_pair, running_ric
from octoric.sim.live import LiveOptions, LiveSim
from octoric.sim.overrides import apply_layout
from octoric.sim.scenario import load

from .kpm_source import OccIndications
from .test_xapp_e2e import OccProc, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.e2e]
PRB_TOTAL = "OCC.PrbTotalDl"


def test_prb_total_is_asked_of_the_gnb_that_offers_it(tmp_path: Path) -> None:
    with running_ric(tmp_path) as stack:
        lt = LoopThread()
        occ = OccProc(stack, tmp_path, free_pair(), free_port())
        started: list[Any] = []
        try:

            async def start() -> tuple[LiveSim, asyncio.Task[Any], ScriptedNode]:
                sc = load("multi-ue")
                apply_layout(sc, cells=1, ues=2)
                sc.ran.n_prb = 106
                sc.duration_s = 120
                sim = LiveSim(sc, 1, LiveOptions("127.0.0.1", stack.rt.ric.e2_port, "tcp"))
                task = asyncio.create_task(sim.run())
                stock = ScriptedNode(
                    "127.0.0.1", stack.rt.ric.e2_port, "tcp", gnb_id=900, period_s=0.01,
                    indications=OccIndications([201, 202], pool_periods=2),
                )  # fmt: skip
                stock.start()
                return sim, task, stock

            sim, task, stock = lt.call(start())
            started[:] = [sim, task, stock]
            agent = sim.agents[0]
            wait_until(
                lambda: agent.setup_done.is_set() and stock.setup_done.is_set(), 20, "E2 setups"
            )
            occ.start()

            def kpm_subs() -> dict[str, dict[str, Any]] | None:
                subs = {s["meid"]: s for s in occ.status()["subscriptions"] if s["kind"] == "kpm"}
                ok = len(subs) == 2 and all(s["state"] == "active" for s in subs.values())
                return subs if ok else None

            try:
                subs = wait_until(kpm_subs, 60, "active KPM subscriptions to both nodes")
            except AssertionError:
                raise AssertionError(occ.log()) from None
            assert subs[agent.meid]["measurements"] == [*kpm.OCC_MEASUREMENTS, PRB_TOTAL]
            assert subs[stock.meid]["measurements"] == list(kpm.OCC_MEASUREMENTS)

            async def admitted() -> list[tuple[str, ...]]:
                return [a.measurements for s in agent.subs.values() for a in s.kpm_actions]

            assert (*kpm.OCC_MEASUREMENTS, PRB_TOTAL) in lt.call(admitted())

            def estimates() -> list[dict[str, Any]]:
                st = occ.status()
                return [u for u in st["ues"] if u["meid"] == agent.meid and u["fair_share_bps"] > 0]

            ues = wait_until(estimates, 20, "estimates of the simulated gNB's UEs")
            assert {u["ue"] for u in ues} <= {u.amf_ue_ngap_id for u in sim.engine.ues}
            st = occ.status()
            assert not st["rejected_indications"], st["rejected_indications"]
        finally:
            occ.stop()
            if started:
                sim, task, stock = started
                lt.loop.call_soon_threadsafe(sim.stop, "test")
                lt.call(asyncio.wait_for(asyncio.shield(task), 20))
                lt.call(stock.stop())
            lt.stop()
