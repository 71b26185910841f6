"""e2term's native relay (``ric/native``, Rust, ``libocto_e2relay.so``; issue #44).

After a node's E2 Setup, e2term hands its TCP-framed socket to a native thread
(``E2Relay.adopt``): each RIC indication goes straight to RMR as e2term's Python path sends it;
every other PDU, and how the connection ended, comes back to e2term's loop through a socket
pair (``RelayedConnection``, an ``E2Connection``), so the rest of e2term is unchanged. The
relay's counters and forwarding latencies are pulled into e2term's own (``E2Relay.stats``).

``OCTORIC_E2TERM_NATIVE=0`` keeps every PDU on the Python path; SCTP connections always stay
there (one PDU per recvmsg, the kernel frames them), and so does everything where the library
is not built.
"""

from __future__ import annotations

import asyncio
import ctypes
import logging
import os
import socket
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from octoric import native_lib
from octoric.e2sm.transport import (
    E2Connection,
    E2ReadTimeout,
    E2TransportError,
    TcpFramedConnection,
)

log = logging.getLogger("ric.e2relay")
ENV = "OCTORIC_E2TERM_NATIVE"
LIB_NAME = "libocto_e2relay.so"
END_EOF, END_FRAMING, END_TIMEOUT, END_IO = 0, 1, 2, 3
TRAILER = 0xFFFFFFFF
_P, _I = ctypes.c_void_p, ctypes.c_int
LAT_CAP = 65536


def library_path() -> Path | None:
    """``$OCTORIC_E2RELAY_LIB``, ``$OCTORIC_LIB_DIR``, ``<repo>/build/lib``, then beside this
    file."""
    return native_lib.find(LIB_NAME, __file__, "OCTORIC_E2RELAY_LIB")


# (name, argument types, result type) of every function this module calls
_SIGNATURES = (
    ("e2relay_new", [_P, _P, _P, _P, _P, _I, ctypes.c_uint64], _P),
    ("e2relay_add", [_P, _I, _I, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t, _I],
     ctypes.c_int64),
    ("e2relay_stats", [_P, ctypes.c_int64, _P, _P, ctypes.c_size_t], ctypes.c_size_t),
    ("e2relay_close", [_P, ctypes.c_int64], None),
)  # fmt: skip


def _lib() -> ctypes.CDLL | None:
    if os.environ.get(ENV, "1") == "0":
        return None
    return native_lib.load(library_path(), _SIGNATURES)


@dataclass
class RelayStats:
    """One connection's counters (cumulative) and the latencies since the last read (us)."""

    indications: int
    to_python: int
    sent: int
    send_failures: int
    waited: int
    gave_up: int
    last_rx: float  # time.monotonic() of the node's last PDU
    running: bool
    latencies_us: list[float]


class E2Relay:
    """The native relay of one e2term (one RMR context)."""

    def __init__(self, lib: ctypes.CDLL, rmr_lib: Any, ctx: int, mtype: int,
                 patience_s: float) -> None:  # fmt: skip
        self.lib = lib
        names = ("rmr_alloc_msg", "rmr_send_msg", "rmr_free_msg", "rmr_bytes2meid")
        fns = [ctypes.cast(getattr(rmr_lib, n), ctypes.c_void_p).value for n in names]
        self.h = lib.e2relay_new(ctx, *fns, mtype, round(patience_s * 1000))

    @classmethod
    def create(cls, ctx: int, mtype: int, patience_s: float = 2.0) -> E2Relay | None:
        """The relay where the library is built and not switched off; else None."""
        lib = _lib()
        if lib is None:
            return None
        from ricxappframe.rmr.rmrclib.rmrclib import rmr_c_lib

        return cls(lib, rmr_c_lib, ctx, mtype, patience_s)

    async def adopt(self, conn: E2Connection, meid: str, read_timeout_s: float) -> E2Connection:
        """Hand a set-up node's connection to the native relay; the connection e2term reads
        from now on (the PDUs the relay leaves to Python). Anything but TCP framing: as is."""
        if not isinstance(conn, TcpFramedConnection):
            return conn
        transport: Any = conn.writer.transport
        transport.pause_reading()
        buffered = conn.reader._buffer  # type: ignore[attr-defined]  # read, not yet taken
        pre = bytes(buffered)
        buffered.clear()
        sock = conn.writer.get_extra_info("socket")
        fd = os.dup(sock.fileno())
        mine, theirs = socket.socketpair()
        out_fd = theirs.detach()
        cid = self.lib.e2relay_add(self.h, fd, out_fd, meid.encode(), pre, len(pre),
                                   max(1, round(read_timeout_s * 1000)))  # fmt: skip
        if cid < 0:
            os.close(fd)
            os.close(out_fd)
            mine.close()
            transport.resume_reading()
            log.warning("native relay refused %s: it stays on the Python path", meid)
            return conn
        # the writer is kept: dropping it would close the pair (StreamWriter.__del__)
        reader, writer = await asyncio.open_connection(sock=mine)
        return RelayedConnection(conn, reader, writer, self, cid)

    def stats(self, cid: int) -> RelayStats:
        v = np.zeros(9, dtype=np.uint64)
        lat = np.zeros(LAT_CAP, dtype=np.uint64)
        n = self.lib.e2relay_stats(self.h, cid, v.ctypes.data, lat.ctypes.data, LAT_CAP)
        return RelayStats(
            int(v[0]), int(v[1]), int(v[2]), int(v[3]), int(v[4]), int(v[5]), int(v[6]) / 1e9,
            bool(v[7]), (lat[:n] / 1e3).tolist(),
        )  # fmt: skip

    def close(self, cid: int) -> None:
        self.lib.e2relay_close(self.h, cid)


class RelayedConnection(E2Connection):
    """A node's connection whose reading the native relay does: ``recv`` gives the PDUs it
    leaves to Python (and raises as ``TcpFramedConnection`` does when the connection ends);
    ``send`` writes to the node as before."""

    def __init__(self, inner: TcpFramedConnection, reader: asyncio.StreamReader,
                 pair: asyncio.StreamWriter, relay: E2Relay, cid: int) -> None:  # fmt: skip
        super().__init__(inner.transport, inner.peer)
        self.inner, self.reader, self.pair, self.relay, self.cid = inner, reader, pair, relay, cid
        self.stats = inner.stats
        self._closed = False

    async def send(self, pdu: bytes) -> None:
        await self.inner.send(pdu)

    async def recv(self) -> bytes:
        try:
            (n,) = struct.unpack(">I", await self.reader.readexactly(4))
            if n == TRAILER:
                why = (await self.reader.readexactly(1))[0]
                if why == END_EOF:
                    raise EOFError("peer closed the E2 connection")
                if why == END_FRAMING:
                    self.stats.framing_errors += 1
                    raise E2TransportError("frame length outside 1..MAX_PDU (native relay)")
                if why == END_TIMEOUT:
                    raise E2ReadTimeout("PDU not complete within the read timeout (native relay)")
                raise OSError("E2 connection broken (native relay)")
            pdu = await self.reader.readexactly(n)
        except asyncio.IncompleteReadError as e:
            raise EOFError("the native relay ended") from e
        self.stats.pdus_in += 1
        self.stats.bytes_in += len(pdu)
        return pdu

    def alive(self) -> bool:
        return not self._closed and self.inner.alive() and not self.reader.at_eof()

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self.relay.close(self.cid)
            self.pair.close()
        self.inner.close()
