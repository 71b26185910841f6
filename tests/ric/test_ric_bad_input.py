"""Hostile and broken input at every RIC door: clear errors, counters, no crash, and the
node that behaves keeps streaming throughout."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import struct
import time
import urllib.request
from pathlib import Path

import pytest

from octoric.e2sm import e2ap
from octoric.e2sm.node_session import ScriptedNode
from octoric.e2sm.transport import connect

from .conftest import LoopThread, RicStack
from .test_a1 import http
from .test_ric_faults import ProbeStream

pytestmark = [pytest.mark.integration, pytest.mark.e2e]


def metrics(stack: RicStack, port_name: str) -> str:
    with urllib.request.urlopen(stack.url(port_name, "/metrics"), timeout=5) as r:
        return r.read().decode()


def counter(text: str, name: str, kind: str) -> float:
    for line in text.splitlines():
        if line.startswith(f'{name}{{kind="{kind}"}}'):
            return float(line.split()[-1])
    return 0.0


def test_garbage_everywhere_leaves_the_good_node_streaming(
    shared_ric: RicStack, loop_thread: LoopThread, tmp_path: Path
) -> None:
    from .test_ric_e2e import start_node

    node = start_node(shared_ric, loop_thread)
    probe = ProbeStream(shared_ric, tmp_path, node.meid)
    e2 = ("127.0.0.1", shared_ric.rt.ric.e2_port)
    try:
        probe.wait_indications(0, 10, timeout=60)
        t0 = time.monotonic()

        # 1. random bytes on the E2 port (a hostile frame length, then junk)
        with socket.create_connection(e2) as s:
            s.sendall(os.urandom(4096))
            s.settimeout(5)
            with pytest.raises((ConnectionResetError, TimeoutError, OSError)):
                while s.recv(100):
                    pass
                raise OSError("closed")

        # 2. a well-framed PDU that is not E2AP, then a setup and a malformed PDU
        async def malformed() -> list[type]:
            conn = await connect(*e2, "tcp")
            await conn.send(b"\x00\x01\x02\x03 not E2AP")
            first = e2ap.decode_e2ap(await conn.recv())
            other = ScriptedNode(*e2, gnb_id=999)
            await conn.send(e2ap.encode_e2ap(other._setup_request()))
            second = e2ap.decode_e2ap(await conn.recv())
            await conn.send(b"\x00\x05\x00\x7f\x00\x00\x01")  # truncated indication
            third = e2ap.decode_e2ap(await conn.recv())
            conn.close()
            return [type(first), type(second), type(third)]

        answers = asyncio.run(malformed())
        assert answers == [e2ap.ErrorIndication, e2ap.E2SetupResponse, e2ap.ErrorIndication]

        # 3. garbage on e2term's RMR port: a hostile SI95 length, then junk
        with socket.create_connection(("127.0.0.1", shared_ric.rt.ric.e2term_rmr_port)) as s:
            s.sendall(
                struct.pack("<I", 0x7FFFFFF0)
                + struct.pack(">I", 0x7FFFFFF0)
                + b"$"
                + os.urandom(2000)
            )

        # 4. bad REST bodies to submgr: 400 with the reason
        url = shared_ric.url("submgr_rest_port", "/ric/v1/subscriptions")
        for body, words in [
            (b"{", "invalid subscription request"),
            (b'{"ClientEndpoint": {"Host": "h", "HTTPPort": 1, "RMRPort": 2}}', "Meid"),
            (
                json.dumps(
                    {
                        "ClientEndpoint": {"Host": "h", "HTTPPort": 1, "RMRPort": 2},
                        "Meid": "gnb",
                        "RANFunctionID": 99999,
                    }
                ).encode(),
                "RANFunctionID",
            ),
        ]:
            code, resp = http("POST", url, raw=body)
            assert code == 400 and words in resp["error"]
        assert http("DELETE", url + "/nope")[0] == 404

        # the good node never stopped; every component is alive and counted the trouble
        probe.wait_indications(t0, 50, timeout=20)
        sns = [e["sn"] for e in probe.indications_since(0)]
        assert sns == list(range(sns[0], sns[0] + len(sns))), "an indication was lost"
        m = metrics(shared_ric, "e2term_http_port")
        assert counter(m, "octoric_e2term_errors_total", "framing") >= 1
        assert counter(m, "octoric_e2term_errors_total", "decode") >= 1
        assert counter(m, "octoric_e2term_errors_total", "envelope") >= 1
        assert (
            counter(
                metrics(shared_ric, "submgr_rest_port"), "octoric_submgr_errors_total", "bad_rest"
            )
            >= 3
        )
    finally:
        probe.stop()
        loop_thread.call(node.stop())
