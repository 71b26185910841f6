"""Issue #44: e2term's native relay (ric/native, ric/e2relay.py).

- the native reader of a RIC indication's request ID agrees with e2term's Python envelope
  reader on every PDU it takes (real srsRAN captures, synthetic ones, other procedures, and
  truncated or mutated ones); what it does not take goes to the Python path;
- a relayed connection hands e2term's loop every PDU that is not an indication, in order, and
  says how the connection ended (the node closed it, a bad frame length, a stalled frame), as
  the Python connection does. The relayed indications themselves are checked end to end by
  the RIC's and the OCC xApp's e2e tests, which run through the relay.
"""

from __future__ import annotations

import asyncio
import ctypes
import random
import struct
from pathlib import Path

import numpy as np
import pytest

from octoric.e2sm import e2ap, envelope, kpm
from octoric.e2sm.common import ntp_timestamp
from octoric.e2sm.e2ap_ies import RicRequestId
from octoric.e2sm.native import library_path
from octoric.e2sm.transport import E2ReadTimeout, E2TransportError, TcpFramedConnection
from octoric.ric import e2relay

pytestmark = [
    pytest.mark.unit,
    pytest.mark.skipif(e2relay.library_path() is None, reason="libocto_e2relay.so not built"),
]
VECTORS = Path(__file__).resolve().parents[1] / "e2sm" / "vectors"


def _native_request_id() -> ctypes._NamedFuncPointer:
    path = library_path()
    assert path is not None
    fn = ctypes.CDLL(str(path)).octo_ric_request_id
    fn.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_void_p]
    fn.restype = ctypes.c_int32
    return fn


def _python(pdu: bytes) -> tuple[int, int] | None:
    try:
        env = envelope.parse(pdu)
        if (env.kind, env.procedure) != (envelope.INITIATING, e2ap.PROC_RIC_INDICATION):
            return None
        return env.request_id()
    except envelope.EnvelopeError:
        return None


def _pdus() -> list[bytes]:
    out = [bytes.fromhex(p.read_text().strip()) for p in sorted(VECTORS.glob("*/*.hex"))]
    msg = kpm.encode_kpm(kpm.KpmIndicationHeader(ntp_timestamp(1.7e9)))
    for rid in ((0, 0), (123, 5), (65535, 65535), (1, 4660)):
        out.append(e2ap.encode_e2ap(e2ap.RicIndication(RicRequestId(*rid), 2, 1, msg, b"\x00")))
    return out


def test_native_request_id_agrees_with_the_envelope_reader() -> None:
    fn = _native_request_id()
    rng = random.Random(7)
    base = _pdus()
    cases = list(base)
    for p in base:  # truncated and mutated ones
        for _ in range(40):
            b = bytearray(p[: rng.randrange(1, len(p) + 1)])
            for _ in range(rng.randrange(0, 3)):
                b[rng.randrange(len(b))] = rng.randrange(256)
            cases.append(bytes(b))
    out = np.zeros(2, dtype=np.uint32)
    taken = 0
    for p in cases:
        rc = fn(p, len(p), out.ctypes.data)
        if rc == 0:
            taken += 1
            assert _python(p) == (int(out[0]), int(out[1])), p.hex()
    indications = [p for p in base if _python(p) is not None]
    assert len(indications) >= 6
    for p in indications:  # the usual ones are all taken
        assert fn(p, len(p), out.ctypes.data) == 0
    assert taken >= len(indications)


async def _pair() -> tuple[TcpFramedConnection, asyncio.StreamWriter, asyncio.Server]:
    got: asyncio.Queue[TcpFramedConnection] = asyncio.Queue()

    async def on_conn(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        await got.put(TcpFramedConnection(r, w))

    srv = await asyncio.start_server(on_conn, "127.0.0.1", 0)
    _, cw = await asyncio.open_connection("127.0.0.1", srv.sockets[0].getsockname()[1])
    return await got.get(), cw, srv


def _relay() -> e2relay.E2Relay:
    lib = e2relay._lib()
    assert lib is not None
    from ricxappframe.rmr.rmrclib.rmrclib import rmr_c_lib

    return e2relay.E2Relay(lib, rmr_c_lib, 0, 12050, 2.0)  # no context: no indication here


def _frame(pdu: bytes) -> bytes:
    return struct.pack(">I", len(pdu)) + pdu


def test_relayed_connection_hands_back_other_pdus_and_the_end() -> None:
    async def main() -> None:
        relay = _relay()
        # what the node sent before the hand-over (read by Python already) comes first
        conn, node, srv = await _pair()
        a, b, c = b"\x20\x08\x00\x01\x00", b"\x40\x08\x00\x01\x01", b"\x00\x0b\x00\x01\x02"
        node.write(_frame(a) + _frame(b)[:3])
        await node.drain()
        await asyncio.sleep(0.05)  # read into e2term's buffer before the hand-over
        rc = await relay.adopt(conn, "gnb1", 0.3)
        assert isinstance(rc, e2relay.RelayedConnection)
        node.write(_frame(b)[3:] + _frame(c))
        await node.drain()
        got = [await asyncio.wait_for(rc.recv(), 2) for _ in range(3)]
        assert got == [a, b, c]
        st = relay.stats(rc.cid)
        assert (st.to_python, st.indications, st.running) == (3, 0, True)
        node.close()
        with pytest.raises(EOFError):
            await asyncio.wait_for(rc.recv(), 2)
        rc.close()
        # a frame length of 0 is a framing error; a frame that stalls, a read timeout
        for bad, exc in ((struct.pack(">I", 0), E2TransportError),
                         (struct.pack(">I", 100) + b"xx", E2ReadTimeout)):  # fmt: skip
            conn, node, srv2 = await _pair()
            rc = await relay.adopt(conn, "gnb2", 0.3)
            node.write(bad)
            await node.drain()
            with pytest.raises(exc):
                await asyncio.wait_for(rc.recv(), 3)
            rc.close()
            node.close()
            srv2.close()
        srv.close()

    asyncio.run(main())
