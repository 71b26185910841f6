"""E2 admission (issue 17): nobody takes over a connected node by reusing its ID, a restarted
node gets back in, and half-open connections are timed out and limited. Real e2term over
loopback TCP, with short admission timeouts so each test takes seconds."""

from __future__ import annotations

import asyncio
import socket
import struct
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from octoric.e2sm import e2ap
from octoric.e2sm.node_session import ScriptedNode
from octoric.e2sm.transport import TcpFramedConnection, connect
from octoric.ric import nodes
from octoric.ric.sdl import Sdl
from octoric.ric.stack import running_ric

from .conftest import LoopThread, RicStack
from .test_ric_faults import ProbeStream

pytestmark = [pytest.mark.integration, pytest.mark.e2e]

SETUP_TIMEOUT_S = 3.0
READ_TIMEOUT_S = 1.0
MAX_HALF_OPEN = 4
IDLE_TAKEOVER_S = 4.0
ADMISSION = [
    f"ric.e2_setup_timeout_s={SETUP_TIMEOUT_S}",
    f"ric.e2_read_timeout_s={READ_TIMEOUT_S}",
    f"ric.e2_max_half_open={MAX_HALF_OPEN}",
    f"ric.e2_idle_takeover_s={IDLE_TAKEOVER_S}",
]


@pytest.fixture(scope="module")
def ric(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RicStack]:
    with running_ric(tmp_path_factory.mktemp("ric-admission"), ADMISSION) as stack:
        yield stack


def errors(stack: RicStack, kind: str) -> float:
    with urllib.request.urlopen(stack.url("e2term_http_port", "/metrics"), timeout=5) as r:
        text = r.read().decode()
    for line in text.splitlines():
        if line.startswith(f'octoric_e2term_errors_total{{kind="{kind}"}}'):
            return float(line.split()[-1])
    return 0.0


def e2_addr(stack: RicStack) -> tuple[str, int]:
    return ("127.0.0.1", stack.rt.ric.e2_port)


def start_node(
    stack: RicStack, lt: LoopThread, gnb_id: int, wait: bool = True, du_id: int | None = None
) -> ScriptedNode:
    async def make() -> ScriptedNode:
        node = ScriptedNode(*e2_addr(stack), "tcp", gnb_id=gnb_id, period_s=0.01, du_id=du_id)
        node.start()
        return node

    node = lt.call(make())
    assert isinstance(node, ScriptedNode)
    if wait:
        wait_until(node.setup_done.is_set, 10, "E2 setup did not complete")
    return node


def wait_until(cond: Any, timeout: float, what: str) -> float:
    t0 = time.monotonic()
    while not cond():
        assert time.monotonic() - t0 < timeout, what
        time.sleep(0.05)
    return time.monotonic() - t0


def local_addr(node: ScriptedNode) -> str:
    assert isinstance(node.conn, TcpFramedConnection)
    host, port = node.conn.writer.get_extra_info("sockname")[:2]
    return f"{host}:{port}"


def node_record(stack: RicStack, lt: LoopThread, meid: str) -> dict[str, Any]:
    async def read() -> Any:
        sdl = Sdl("127.0.0.1", stack.redis.port)
        try:
            return await sdl.get_json(nodes.NS, meid)
        finally:
            await sdl.close()

    rec = lt.call(read())
    assert isinstance(rec, dict)
    return rec


def closed_within(s: socket.socket, timeout: float) -> float:
    """Seconds until e2term closed ``s`` (reading and discarding whatever it sends first)."""
    t0 = time.monotonic()
    s.settimeout(timeout)
    try:
        while s.recv(4096):
            pass
    except ConnectionResetError:
        pass
    except TimeoutError:
        raise AssertionError(f"e2term did not close the connection in {timeout} s") from None
    return time.monotonic() - t0


async def raw_setup(addr: tuple[str, int], gnb_id: int) -> tuple[Any, e2ap.E2apMessage]:
    conn = await connect(*addr, "tcp")
    req = ScriptedNode(*addr, gnb_id=gnb_id)._setup_request()
    await conn.send(e2ap.encode_e2ap(req))
    return conn, e2ap.decode_e2ap(await conn.recv())


def test_second_node_with_a_connected_id_is_refused_then_admitted_after_a_restart(
    ric: RicStack, loop_thread: LoopThread, tmp_path: Path
) -> None:
    first = start_node(ric, loop_thread, gnb_id=501)
    probe = ProbeStream(ric, tmp_path, first.meid)
    intruder: ScriptedNode | None = None
    try:
        probe.wait_indications(0, 10, timeout=60)
        peer = local_addr(first)
        assert node_record(ric, loop_thread, first.meid)["peer"] == peer
        before = errors(ric, "duplicate_node")

        # (a) a second node claims the same ID: refused, and it keeps retrying
        intruder = start_node(ric, loop_thread, gnb_id=501, wait=False)
        wait_until(lambda: intruder.stats.setup_failures >= 1, 10, "no E2setupFailure")
        t0 = time.monotonic()
        time.sleep(1.0)
        assert not intruder.setup_done.is_set()
        assert errors(ric, "duplicate_node") > before
        # the first node kept its association, record and subscription traffic
        assert first.connected and first.stats.setups == 1 and first.subs
        assert local_addr(first) == peer
        rec = node_record(ric, loop_thread, first.meid)
        assert rec["peer"] == peer and rec["connected"] is True
        probe.wait_indications(t0, 20, timeout=10)

        # (b) the first node's connection really closes (a restart): the retrying node is in
        loop_thread.call(first.stop())
        took = wait_until(intruder.setup_done.is_set, 8, "the restarted node was not admitted")
        assert took < 5  # within the refusal's TimeToWait (2 s) and a retry
        assert node_record(ric, loop_thread, first.meid)["peer"] == local_addr(intruder)
    finally:
        probe.stop()
        loop_thread.call(first.stop())
        if intruder is not None:
            loop_thread.call(intruder.stop())


def test_a_gnb_s_du_and_cu_cp_agents_are_two_nodes(ric: RicStack, loop_thread: LoopThread) -> None:
    """srsRAN's gNB runs a DU and a CU-CP E2 agent with the same gNB ID; the DU's adds its
    gNB-DU-ID. Both are admitted, as two nodes (O-RAN SC e2term's naming: the DU's meid ends in
    the DU ID), not one refused as a duplicate of the other."""
    before = errors(ric, "duplicate_node")
    cu_cp = start_node(ric, loop_thread, gnb_id=502)
    du = start_node(ric, loop_thread, gnb_id=502, du_id=0)
    try:
        assert (cu_cp.meid, du.meid) == ("gnb_001_001_0001f6", "gnb_001_001_0001f6_0")
        assert node_record(ric, loop_thread, du.meid)["connected"] is True
        assert node_record(ric, loop_thread, cu_cp.meid)["connected"] is True
        assert errors(ric, "duplicate_node") == before
    finally:
        loop_thread.call(du.stop())
        loop_thread.call(cu_cp.stop())


def test_a_silent_node_can_be_taken_over_after_the_idle_limit(
    ric: RicStack, loop_thread: LoopThread
) -> None:
    addr = e2_addr(ric)

    async def scenario() -> tuple[type, type, float]:
        old, ok = await raw_setup(addr, gnb_id=502)
        assert isinstance(ok, e2ap.E2SetupResponse)
        t0 = time.monotonic()
        new, refused = await raw_setup(addr, gnb_id=502)
        new.close()
        await asyncio.sleep(IDLE_TAKEOVER_S + 0.5)  # the old association says nothing
        newer, admitted = await raw_setup(addr, gnb_id=502)
        silent = time.monotonic() - t0
        newer.close()
        old.close()
        return type(refused), type(admitted), silent

    refused, admitted, silent = loop_thread.call(scenario())
    assert refused is e2ap.E2SetupFailure
    assert admitted is e2ap.E2SetupResponse and silent > IDLE_TAKEOVER_S


def test_a_connection_without_setup_is_closed_after_the_setup_timeout(ric: RicStack) -> None:
    before = errors(ric, "setup_timeout")
    with socket.create_connection(e2_addr(ric)) as s:
        took = closed_within(s, SETUP_TIMEOUT_S + 5)
    assert SETUP_TIMEOUT_S - 0.5 < took < SETUP_TIMEOUT_S + 3
    assert errors(ric, "setup_timeout") == before + 1


def test_a_half_sent_pdu_is_closed_after_the_read_timeout(
    ric: RicStack, loop_thread: LoopThread
) -> None:
    before = errors(ric, "read_timeout")
    with socket.create_connection(e2_addr(ric)) as s:
        # a set-up node (so the setup timeout does not apply), then half a PDU
        req = ScriptedNode(*e2_addr(ric), gnb_id=503)._setup_request()
        pdu = e2ap.encode_e2ap(req)
        s.sendall(struct.pack(">I", len(pdu)) + pdu)
        s.settimeout(5)
        (n,) = struct.unpack(">I", s.recv(4, socket.MSG_WAITALL))
        assert isinstance(e2ap.decode_e2ap(s.recv(n, socket.MSG_WAITALL)), e2ap.E2SetupResponse)
        s.sendall(struct.pack(">I", 100) + b"\x00" * 50)
        took = closed_within(s, READ_TIMEOUT_S + 5)
    assert took < READ_TIMEOUT_S + 2
    assert errors(ric, "read_timeout") == before + 1


def test_past_the_half_open_limit_new_connections_are_refused(
    ric: RicStack, loop_thread: LoopThread, tmp_path: Path
) -> None:
    node = start_node(ric, loop_thread, gnb_id=504)
    probe = ProbeStream(ric, tmp_path, node.meid)
    idle: list[socket.socket] = []
    try:
        probe.wait_indications(0, 10, timeout=60)
        before = errors(ric, "half_open_limit")
        t0 = time.monotonic()
        idle = [socket.create_connection(e2_addr(ric)) for _ in range(MAX_HALF_OPEN)]
        time.sleep(0.3)  # e2term has taken them all
        with socket.create_connection(e2_addr(ric)) as extra:
            assert closed_within(extra, 1.5) < 1.5  # at once, not after the setup timeout
        assert errors(ric, "half_open_limit") == before + 1

        # the established node kept streaming to its subscriber meanwhile
        assert node.connected and node.stats.setups == 1
        probe.wait_indications(t0, 20, timeout=10)

        # once the half-open ones time out, newcomers are served again
        for s in idle:
            closed_within(s, SETUP_TIMEOUT_S + 5)

        async def setup_again() -> type:
            conn, answer = await raw_setup(e2_addr(ric), gnb_id=505)
            conn.close()
            return type(answer)

        assert loop_thread.call(setup_again()) is e2ap.E2SetupResponse
    finally:
        for s in idle:
            s.close()
        probe.stop()
        loop_thread.call(node.stop())
