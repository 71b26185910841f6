"""Byte-level tests through the C ABI over real sockets: hand-built golden frames (from
RMR-WIRE.md) decode; frames we send match byte for byte; lying frames are dropped and
counted; a garbage peer does not disturb other connections."""

from __future__ import annotations

import ctypes
import json
import socket
import struct
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .conftest import free_port

pytestmark = pytest.mark.integration


def golden(
    mtype: int,
    payload: bytes,
    *,
    sub_id: int = -1,
    meid: bytes = b"",
    xid: bytes = b"",
    src: bytes = b"raw:1",
    srcip: bytes = b"127.0.0.1:9999",
    trace: bytes = b"",
    plen: int | None = None,
) -> bytes:
    """A frame built by hand, field by field, from the documented layout."""
    hdr = bytearray(280)
    struct.pack_into(">iII", hdr, 0, mtype, len(payload) if plen is None else plen, 3)
    hdr[12 : 12 + len(xid)] = xid
    hdr[76 : 76 + len(src)] = src
    hdr[140 : 140 + len(meid)] = meid
    struct.pack_into(">IIIIIi", hdr, 192, 1 if trace else 0, 280, len(trace), 4, 0, sub_id)
    hdr[216 : 216 + len(srcip)] = srcip
    body = bytes(hdr) + trace + b"\0\0\0\0" + payload
    total = 50 + len(body)
    prefix = struct.pack("<I", total) + struct.pack(">I", total) + b"$" + bytes(41)
    return prefix + body


_RAW: list[socket.socket] = []


def raw_port() -> int:
    """Where this test process, the raw peer, listens: a receiver delivers a frame only if
    its sender fields name a port the connection's peer process listens on (issue #43)."""
    if not _RAW:
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        s.listen()
        _RAW.append(s)
    return int(_RAW[0].getsockname()[1])


def raw(mtype: int, payload: bytes, *, name: bytes = b"raw", **kw: Any) -> bytes:
    """``golden`` from the raw peer, its sender fields naming where it listens."""
    p = raw_port()
    return golden(mtype, payload, src=b"%s:%d" % (name, p), srcip=b"127.0.0.1:%d" % p, **kw)


@pytest.fixture
def rmr(monkeypatch: pytest.MonkeyPatch, our_lib: Path) -> Any:
    monkeypatch.setenv("RMR_RTG_SVC", "-1")
    monkeypatch.setenv("RMR_BIND_IF", "127.0.0.1")
    monkeypatch.setenv("RMR_SRC_ID", "tester")
    monkeypatch.setenv("OCTORIC_LIB_DIR", str(our_lib.parent))
    import octoric.rmr  # noqa: F401

    from ricxappframe.rmr import rmr as mod

    return mod


@pytest.fixture
def ctx(
    rmr: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> Iterator[tuple[Any, int, int]]:
    """A context on a free port whose table routes mtypes 1-3 to a raw listener."""
    port = free_port()
    lsock = socket.socket()
    lsock.bind(("127.0.0.1", 0))
    lsock.listen()
    lport = lsock.getsockname()[1]
    seed = tmp_path / "rt"
    seed.write_text(
        f"newrt|start\nrte|1|127.0.0.1:{lport}\nmse|2|42|127.0.0.1:{lport}\nnewrt|end\n"
    )
    monkeypatch.setenv("RMR_SEED_RT", str(seed))
    mrc = rmr.rmr_init(str(port).encode(), 4096, 0)
    assert rmr.rmr_ready(mrc) == 1
    yield mrc, port, lsock
    lsock.close()
    rmr.rmr_close(mrc)


def stats(mrc: Any) -> Any:
    from octoric.rmr import stats as get

    return get(mrc)


def receive(rmr: Any, mrc: Any, timeout_ms: int = 5000) -> Any:
    m = rmr.rmr_alloc_msg(mrc, 16)
    m = rmr.rmr_torcv_msg(mrc, m, timeout_ms)
    return m


def test_golden_frames_decode(rmr: Any, ctx: Any) -> None:
    mrc, port, _ = ctx
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(
            raw(12050, b"indication", sub_id=5, meid=b"gnb_001", xid=b"X" * 32, name=b"e2term")
        )
        s.sendall(raw(12011, b"with-trace", trace=b"TRACE-BYTES"))
        m = receive(rmr, mrc)
        summ = rmr.message_summary(m)
        assert summ[rmr.RMR_MS_MSG_STATE] == 0
        assert summ[rmr.RMR_MS_MSG_TYPE] == 12050
        assert summ[rmr.RMR_MS_SUB_ID] == 5
        assert summ[rmr.RMR_MS_PAYLOAD] == b"indication"
        assert summ[rmr.RMR_MS_MEID] == b"gnb_001"
        assert summ[rmr.RMR_MS_TRN_ID] == b"X" * 32
        assert summ[rmr.RMR_MS_MSG_SOURCE] == f"e2term:{raw_port()}"
        rmr.rmr_free_msg(m)
        m = receive(rmr, mrc)
        assert rmr.get_payload(m) == b"with-trace"
        assert m.contents.sub_id == -1
        rmr.rmr_free_msg(m)


def test_sent_frame_fixed_fields_byte_for_byte(rmr: Any, ctx: Any) -> None:
    mrc, port, lsock = ctx
    m = rmr.rmr_alloc_msg(
        mrc, 64, payload=b"hello", mtype=2, meid=b"gnb_9", sub_id=42, fixed_transaction_id=b"T" * 32
    )
    m = rmr.rmr_send_msg(mrc, m)
    assert m.contents.state == 0
    rmr.rmr_free_msg(m)
    lsock.settimeout(5)
    conn, _ = lsock.accept()
    with conn:
        conn.settimeout(5)
        got = b""
        while len(got) < 50 + 284 + 5:
            got += conn.recv(4096)
    want = bytearray(
        golden(2, b"hello", sub_id=42, meid=b"gnb_9", xid=b"T" * 32, src=f"tester:{port}".encode())
    )
    want[50 + 216 : 50 + 280] = bytes(64)
    srcip = f"127.0.0.1:{port}".encode()
    want[50 + 216 : 50 + 216 + len(srcip)] = srcip
    assert got == bytes(want)


def test_lying_lengths_dropped_and_counted(rmr: Any, ctx: Any) -> None:
    mrc, port, _ = ctx
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(raw(1, b"short", plen=10_000))  # declares more payload than it has
        s.sendall(raw(3, b"next"))
        m = receive(rmr, mrc)
        assert (m.contents.mtype, rmr.get_payload(m)) == (3, b"next")
        rmr.rmr_free_msg(m)
    assert stats(mrc).dropped_bad_frame == 1


def test_garbage_peer_does_not_disturb_others(rmr: Any, ctx: Any) -> None:
    mrc, port, _ = ctx
    good = socket.create_connection(("127.0.0.1", port))
    bad = socket.create_connection(("127.0.0.1", port))
    good.sendall(raw(1, b"before"))
    bad.sendall(b"\xde\xad\xbe\xef" * 2000)
    bad.settimeout(5)
    assert bad.recv(16) == b""  # the garbage connection is closed by the library
    good.sendall(raw(1, b"after"))
    payloads = []
    for _ in range(2):
        m = receive(rmr, mrc)
        payloads.append(rmr.get_payload(m))
        rmr.rmr_free_msg(m)
    assert payloads == [b"before", b"after"]
    deadline = time.time() + 5
    while stats(mrc).dropped_bad_stream < 1 and time.time() < deadline:
        time.sleep(0.05)
    assert stats(mrc).dropped_bad_stream == 1
    good.close()
    bad.close()


def test_consts_and_timeout(rmr: Any, ctx: Any) -> None:
    mrc, _, _ = ctx
    from ricxappframe.rmr.rmrclib.rmrclib import get_constants

    c = get_constants()
    assert c["RMR_MAX_XID"] == 32 and c["RMR_MAX_MEID"] == 32 and c["RMR_MAX_SRC"] == 64
    assert (c["RMR_ERR_RETRY"], c["RMR_ERR_TIMEOUT"], c["RMR_ERR_INITFAILED"]) == (10, 12, 15)
    m = rmr.rmr_torcv_msg(mrc, None, 50)
    assert m.contents.state == c["RMR_ERR_TIMEOUT"]
    rmr.rmr_free_msg(m)
    # realloc without clone keeps the same buffer (ricxappframe relies on it).
    m = rmr.rmr_alloc_msg(mrc, 4)
    addr = ctypes.addressof(m.contents)
    m2 = rmr.rmr_realloc_payload(m, 5000, True)
    assert ctypes.addressof(m2.contents) == addr
    assert rmr.rmr_payload_size(m) >= 5000
    rmr.rmr_free_msg(m)
    assert json.loads(json.dumps(c))  # plain JSON types


def test_forged_sender_dropped_and_counted(rmr: Any, ctx: Any) -> None:
    """A frame naming a sender its connection's peer is not (no process of that connection
    listens on the port it names) is dropped and counted; the peer's own frames pass."""
    mrc, port, _ = ctx
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(golden(1, b"forged", src=b"submgr:1", srcip=b"127.0.0.1:1"))
        s.sendall(raw(1, b"own"))
        m = receive(rmr, mrc)
        assert rmr.get_payload(m) == b"own"
        rmr.rmr_free_msg(m)
    assert stats(mrc).forged_senders == 1
