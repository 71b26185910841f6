"""E2 transport over real sockets: TCP framing here, SCTP where the kernel has it."""

from __future__ import annotations

import asyncio
import struct

import pytest

from octoric.e2sm.transport import (
    MAX_PDU,
    E2Connection,
    E2Server,
    E2TransportError,
    connect,
    kernel_has_sctp,
)

pytestmark = pytest.mark.integration


async def _echo_server(transport: str) -> tuple[E2Server, list[BaseException]]:
    errors: list[BaseException] = []

    async def handler(conn: E2Connection) -> None:
        try:
            while True:
                await conn.send(await conn.recv())
        except (EOFError, E2TransportError) as e:
            errors.append(e)
            conn.close()

    server = E2Server(handler, "127.0.0.1", 0, transport)  # type: ignore[arg-type]
    await server.start()
    return server, errors


@pytest.mark.parametrize("transport", ["tcp", "sctp"])
def test_pdus_keep_their_boundaries(transport: str) -> None:
    if transport == "sctp" and not kernel_has_sctp():
        pytest.skip(
            "this kernel has no SCTP (EPROTONOSUPPORT); the TCP framing test covers E2 here"
        )

    async def go() -> list[bytes]:
        server, _ = await _echo_server(transport)
        conn = await connect("127.0.0.1", server.port, transport)  # type: ignore[arg-type]
        pdus = [b"\x00" * n for n in (1, 3, 1500)] + [bytes(range(256)) * 300]
        for p in pdus:
            await conn.send(p)
        got = [await conn.recv() for _ in pdus]
        assert conn.stats.pdus_out == len(pdus) and conn.stats.pdus_in == len(pdus)
        conn.close()
        await server.stop()
        return got

    got = asyncio.run(go())
    assert [len(p) for p in got] == [1, 3, 1500, 256 * 300]


def test_hostile_length_closes_only_that_connection() -> None:
    async def go() -> tuple[list[BaseException], bytes]:
        server, errors = await _echo_server("tcp")
        good = await connect("127.0.0.1", server.port, "tcp")
        r, w = await asyncio.open_connection("127.0.0.1", server.port)
        w.write(struct.pack(">I", MAX_PDU + 1) + b"garbage")
        await w.drain()
        assert await r.read() == b""  # the server hung up on the hostile peer
        await good.send(b"still here")
        echoed = await good.recv()
        good.close()
        await server.stop()
        return errors, echoed

    errors, echoed = asyncio.run(go())
    assert echoed == b"still here"
    assert any(isinstance(e, E2TransportError) and "outside" in str(e) for e in errors)


def test_peer_close_is_eof() -> None:
    async def go() -> list[BaseException]:
        server, errors = await _echo_server("tcp")
        conn = await connect("127.0.0.1", server.port, "tcp")
        await conn.send(b"\x01\x02")
        await conn.recv()
        conn.close()
        for _ in range(100):
            if errors:
                break
            await asyncio.sleep(0.01)
        await server.stop()
        return errors

    assert any(isinstance(e, EOFError) for e in asyncio.run(go()))
