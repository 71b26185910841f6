"""A simulated gNB's E2 agent on an offline engine, for tests without sockets: the agent's
PDUs stay in its send queue (``drain`` reads them)."""

from __future__ import annotations

from octoric.e2sm import e2ap
from octoric.sim.e2agent import E2Agent
from octoric.sim.engine import Engine
from octoric.sim.scenario import Scenario


class QueuedConn:
    """Stands in for the agent's E2 connection; nothing is sent anywhere."""

    async def send(self, pdu: bytes) -> None:
        pass

    def close(self) -> None:
        pass


def offline_agent(sc: Scenario, seed: int = 2) -> tuple[Engine, E2Agent]:
    """An engine for ``sc`` with gNB 0's agent attached as a KPM sink."""
    eng = Engine(sc, seed)
    agent = E2Agent(eng, 0, "127.0.0.1", 1)
    eng.add_kpm_sink(agent)
    agent.conn = QueuedConn()
    return eng, agent


def drain(agent: E2Agent) -> list[e2ap.E2apMessage]:
    """Every PDU the agent queued since the last call, decoded."""
    out = []
    while not agent._queue.empty():
        out.append(e2ap.decode_e2ap(agent._queue.get_nowait()))
    return out
