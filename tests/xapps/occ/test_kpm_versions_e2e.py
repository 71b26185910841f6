"""Nodes of every E2SM-KPM version end to end (issue #15): the embedded RIC (processes), a live
simulated RAN of three gNBs that announce and speak KPM v02.03 (4-octet time stamps),
v03.00 and v05.00 (OID ...1.3.2.2; v05 lists its integrated report style), and the OCC xApp as
a subprocess. The xApp reads each node's version from the R-NIB, subscribes to all three and
estimates the UEs of each, with no indication rejected."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from octoric.e2sm.kpm_version import KpmVersion
from octoric.redis_server import free_port
from octoric.ric.stack import LoopThread, free_pair, running_ric
from octoric.sim.live import LiveOptions, LiveSim
from octoric.sim.overrides import apply_layout
from octoric.sim.scenario import load

from .test_xapp_e2e import OccProc, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.e2e]
VERSIONS = (KpmVersion.V2_03, KpmVersion.V3_00, KpmVersion.V5_00)


def test_nodes_of_kpm_v2_v3_v5_are_subscribed_and_decoded(tmp_path: Path) -> None:
    with running_ric(tmp_path) as stack:
        lt = LoopThread()
        occ = OccProc(stack, tmp_path, free_pair(), free_port())
        started: list[Any] = []
        try:

            async def start() -> tuple[LiveSim, asyncio.Task[Any]]:
                sc = load("multi-ue")
                apply_layout(sc, cells=3, cells_per_gnb=1, ues=6)
                sc.duration_s = 120
                opts = LiveOptions("127.0.0.1", stack.rt.ric.e2_port, "tcp", kpm_versions=VERSIONS)
                sim = LiveSim(sc, 1, opts)
                return sim, asyncio.create_task(sim.run())

            sim, task = lt.call(start())
            started[:] = [sim, task]
            assert [a.kpm_version for a in sim.agents] == list(VERSIONS)
            wait_until(lambda: all(a.setup_done.is_set() for a in sim.agents), 20, "E2 setups")
            occ.start()
            meids = {a.meid: a.kpm_version for a in sim.agents}

            def active() -> dict[str, Any] | None:
                st = occ.status()
                subs = {s["meid"]: s for s in st["subscriptions"] if s["kind"] == "kpm"}
                ok = set(subs) == set(meids) and all(s["state"] == "active" for s in subs.values())
                return st if ok else None

            try:
                st = wait_until(active, 60, "active KPM subscriptions to the three nodes")
            except AssertionError:
                raise AssertionError(occ.log()) from None
            assert st["kpm_versions"] == {m: v.label for m, v in meids.items()}

            def estimates() -> set[str] | None:
                st = occ.status()
                seen = {u["meid"] for u in st["ues"] if u["fair_share_bps"] > 0}
                return seen if seen == set(meids) else None

            wait_until(estimates, 30, "estimates of the UEs of every node")
            # the v02.03 node's reports (whole-second time stamps) keep arriving in order
            before = occ.status()["counters"].get("indications", 0)
            wait_until(lambda: occ.status()["counters"].get("indications", 0) > before + 30, 20,
                       "more indications")  # fmt: skip
            st = occ.status()
            assert not st["rejected_indications"], st["rejected_indications"]
            assert not st["dropped_ue_rows"], st["dropped_ue_rows"]
        finally:
            occ.stop()
            if started:
                sim, task = started
                lt.loop.call_soon_threadsafe(sim.stop, "test")
                lt.call(asyncio.wait_for(asyncio.shield(task), 20))
            lt.stop()
