"""The xApps' HTTP server (issue #17): an idle or half-sent connection is closed after the idle
timeout instead of holding a thread forever; a client that resets its connection is counted,
with no traceback in the log."""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Iterator

import pytest

from octoric.redis_server import free_port
from octoric.xapps.base import http as xhttp

pytestmark = pytest.mark.integration


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[xhttp.HttpServer]:
    monkeypatch.setattr(xhttp, "IDLE_TIMEOUT_S", 0.5)
    s = xhttp.HttpServer("127.0.0.1", free_port())
    s.add("GET", "/ok", lambda req: xhttp.Response.json({"ok": True}))
    s.start()
    yield s
    s.stop()


def test_a_half_sent_request_is_closed_after_the_idle_timeout(server: xhttp.HttpServer) -> None:
    with socket.create_connection((server.host, server.port), timeout=5) as c:
        c.sendall(b"GET /ok HTTP/1.1\r\nHost: localhost\r\n")  # never finishes its headers
        t0 = time.monotonic()
        assert c.recv(1) == b""  # the server hung up
        assert time.monotonic() - t0 < 3.0


def test_a_reset_is_counted_without_a_traceback(
    server: xhttp.HttpServer, capfd: pytest.CaptureFixture[str]
) -> None:
    c = socket.create_connection((server.host, server.port), timeout=5)
    c.sendall(b"GET /ok HTTP/1.1\r\nHost: localhost\r\n")
    c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    c.close()  # RST
    deadline = time.monotonic() + 5
    while not server.counters.errors.get("client_gone") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.counters.errors["client_gone"] >= 1
    assert "Traceback" not in capfd.readouterr().err
    with socket.create_connection((server.host, server.port), timeout=5) as ok:
        ok.sendall(b"GET /ok HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        assert b"200" in ok.recv(200)  # and it still serves
