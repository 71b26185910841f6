"""A live simulated gNB (octoric.sim.live) on a test's loop thread, up to its E2 setup."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from octoric.ric.stack import LoopThread
from octoric.sim.live import LiveOptions, LiveSim
from octoric.sim.scenario import Scenario


def start_live_sim(
    lt: LoopThread, sc: Scenario, seed: int, e2_port: int, kpm_sink: Any = None, **opts: Any
) -> tuple[LiveSim, asyncio.Task[Any]]:
    """Start ``sc`` against the RIC's E2 port (TCP) with ``kpm_sink`` added to its engine and
    ``opts`` as further ``LiveOptions``; returns once the first gNB's E2 setup is done (20 s
    at most)."""

    async def start() -> tuple[LiveSim, asyncio.Task[Any]]:
        sim = LiveSim(sc, seed, LiveOptions("127.0.0.1", e2_port, "tcp", **opts))
        if kpm_sink is not None:
            sim.engine.add_kpm_sink(kpm_sink)
        return sim, asyncio.create_task(sim.run())

    sim, task = lt.call(start())
    deadline = time.monotonic() + 20
    while not sim.agents[0].setup_done.is_set():
        assert time.monotonic() < deadline, "E2 setup did not complete"
        assert not task.done(), task
        time.sleep(0.05)
    return sim, task
