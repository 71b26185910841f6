"""A live simulated gNB (octoric.sim.live) on a test's loop thread, up to its E2 setup."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from octoric.redis_server import free_port
from octoric.ric.stack import LoopThread, RicStack, free_pair
from octoric.sim.live import LiveOptions, LiveSim
from octoric.sim.scenario import Scenario
from testkit.occ_xapp import OccProc
from testkit.rest import wait_until


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


@contextlib.contextmanager
def real_ue_sim_with_occ(
    ric: RicStack, tmp: Path, sc: Scenario, seed: int = 5
) -> Iterator[tuple[LoopThread, LiveSim]]:
    """An OCC xApp on ``ric`` and ``sc`` (a real UE whose flow is OCC-fed) live, its flow
    registered with the xApp and OCC's first feedback relayed into the server namespace: a real
    application started in the block is in the loop from its first packet. At the end the sim
    stops, then the xApp and the loop thread; on an error the xApp's log is printed."""
    occ = OccProc(ric, tmp, free_pair(), free_port())
    occ.start()
    lt = LoopThread()
    try:
        sim, task = start_live_sim(lt, sc, seed, ric.rt.ric.e2_port, feedback_port=0,
                                   occ_register=occ.url("/occ/v1/flows"))  # fmt: skip
        wait_until(lambda: sim.real_ready.is_set() and sim.registered, 60,
                   "the real UE registered with the OCC xApp")  # fmt: skip
        wait_until(lambda: sim.real is not None and sim.real.stats.feedback_relayed > 0, 60,
                   "OCC feedback relayed to the server namespace")  # fmt: skip
        yield lt, sim
        sim.stop("test done")
        lt.call(asyncio.wait_for(task, 30))
    except BaseException:
        print(occ.log())
        raise
    finally:
        occ.stop()
        lt.stop()
