"""E2 transport: SCTP where the kernel has it, else octoric's TCP framing.

SCTP (IETF RFC 4960, E2AP payload protocol id 70) preserves message boundaries; TCP does not,
so the TCP transport frames each E2AP PDU with a 4-byte big-endian length. TCP framing is our
development transport for kernels without SCTP (containers, this CI): say so to users, and keep
SCTP for real E2 nodes (srsRAN_Project only speaks SCTP).

Both sides (e2term's server, the simulated gNB's client) use ``E2Connection``: ``send(pdu)`` and
``recv() -> pdu``, whatever the transport underneath.

Liveness: TCP connections carry keepalive with short timers (``KEEPALIVE``), so a peer whose
host died is noticed in seconds, not hours; and a PDU whose length header has arrived must be
complete within ``read_timeout_s`` (a stalled sender cannot hold a connection half-read).
"""

from __future__ import annotations

import asyncio
import errno
import socket
import struct
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Literal

IPPROTO_SCTP = 132
SOL_SCTP = 132
SCTP_SNDRCV = 1  # cmsg type carrying struct sctp_sndrcvinfo
E2AP_PPID = 70
MAX_PDU = 1 << 20  # a frame announcing more is hostile: the connection is closed
# TCP keepalive: idle seconds before the first probe, seconds between probes, probes lost
# before the connection is dead: a vanished peer is detected after about 5 + 3 * 1 = 8 s
KEEPALIVE = (5, 1, 3)
Transport = Literal["sctp", "tcp"]


class E2TransportError(Exception):
    """The peer broke the framing (length over MAX_PDU, or a zero-length frame)."""


class E2ReadTimeout(E2TransportError):
    """A PDU started but did not complete within the connection's read timeout."""


def enable_keepalive(sock: Any, keepalive: tuple[int, int, int] = KEEPALIVE) -> None:
    """SO_KEEPALIVE with short timers on a TCP socket (and the same bound on unacknowledged
    data via TCP_USER_TIMEOUT, as keepalive probes stop while data is in flight)."""
    idle, interval, probes = keepalive
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    for opt, value in (
        ("TCP_KEEPIDLE", idle),
        ("TCP_KEEPINTVL", interval),
        ("TCP_KEEPCNT", probes),
        ("TCP_USER_TIMEOUT", (idle + interval * probes) * 1000),
    ):
        if hasattr(socket, opt):  # Linux names; other kernels keep their defaults
            sock.setsockopt(socket.IPPROTO_TCP, getattr(socket, opt), value)


def kernel_has_sctp() -> bool:
    try:
        socket.socket(socket.AF_INET, socket.SOCK_STREAM, IPPROTO_SCTP).close()
    except OSError as e:
        if e.errno in (errno.EPROTONOSUPPORT, errno.ESOCKTNOSUPPORT, errno.EAFNOSUPPORT):
            return False
        raise
    return True


def resolve(transport: Literal["auto", "sctp", "tcp"]) -> Transport:
    if transport == "auto":
        return "sctp" if kernel_has_sctp() else "tcp"
    return transport


@dataclass
class E2Stats:
    pdus_in: int = 0
    pdus_out: int = 0
    bytes_in: int = 0
    bytes_out: int = 0
    framing_errors: int = 0


class E2Connection:
    """One E2 association: PDUs in, PDUs out."""

    def __init__(self, transport: Transport, peer: str) -> None:
        self.transport = transport
        self.peer = peer
        self.stats = E2Stats()
        # once a PDU has started, the rest must arrive within this (None: wait for ever)
        self.read_timeout_s: float | None = None

    async def send(self, pdu: bytes) -> None:
        raise NotImplementedError

    async def recv(self) -> bytes:
        """The next PDU; raises EOFError when the peer closed."""
        raise NotImplementedError

    def alive(self) -> bool:
        """False once the connection is known closed or broken (peer EOF, keepalive failure)."""
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError


class TcpFramedConnection(E2Connection):
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        super().__init__("tcp", f"{peer[0]}:{peer[1]}" if peer else "?")
        self.reader, self.writer = reader, writer
        sock = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            enable_keepalive(sock)

    async def send(self, pdu: bytes) -> None:
        self.writer.write(struct.pack(">I", len(pdu)) + pdu)
        await self.writer.drain()
        self.stats.pdus_out += 1
        self.stats.bytes_out += len(pdu)

    async def recv(self) -> bytes:
        try:
            head = await self.reader.readexactly(4)
            (n,) = struct.unpack(">I", head)
            if n == 0 or n > MAX_PDU:
                self.stats.framing_errors += 1
                raise E2TransportError(f"frame length {n} outside 1..{MAX_PDU}")
            try:
                # asyncio.timeout, not wait_for: no task per PDU, no extra loop iteration
                async with asyncio.timeout(self.read_timeout_s):
                    pdu = await self.reader.readexactly(n)
            except TimeoutError:
                raise E2ReadTimeout(
                    f"{n}-byte PDU not complete within {self.read_timeout_s} s"
                ) from None
        except asyncio.IncompleteReadError as e:
            raise EOFError("peer closed the E2 connection") from e
        self.stats.pdus_in += 1
        self.stats.bytes_in += len(pdu)
        return pdu

    def alive(self) -> bool:
        r = self.reader
        return not (self.writer.is_closing() or r.exception() is not None or r.at_eof())

    def close(self) -> None:
        self.writer.close()


class SctpConnection(E2Connection):
    """A one-to-one SCTP socket: one recvmsg = one PDU (MSG_EOR), PPID 70 on send."""

    def __init__(self, sock: socket.socket) -> None:
        try:
            peer = sock.getpeername()
            name = f"{peer[0]}:{peer[1]}"
        except OSError:
            name = "?"
        super().__init__("sctp", name)
        self.sock = sock
        sock.setblocking(False)

    async def send(self, pdu: bytes) -> None:
        # struct sctp_sndrcvinfo: stream u16, ssn u16, flags u16, (pad), ppid u32 (network
        # order), context u32, timetolive u32, tsn u32, cumtsn u32, assoc_id i32
        info = struct.pack("=HHHxxIIIIIi", 0, 0, 0, socket.htonl(E2AP_PPID), 0, 0, 0, 0, 0)
        loop = asyncio.get_running_loop()
        while True:
            try:
                self.sock.sendmsg([pdu], [(SOL_SCTP, SCTP_SNDRCV, info)])
                break
            except BlockingIOError:
                fut = loop.create_future()
                loop.add_writer(self.sock, fut.set_result, None)
                try:
                    await fut
                finally:
                    loop.remove_writer(self.sock)
        self.stats.pdus_out += 1
        self.stats.bytes_out += len(pdu)

    async def recv(self) -> bytes:
        loop = asyncio.get_running_loop()
        parts: list[bytes] = []
        while True:
            try:
                data, _, flags, _ = self.sock.recvmsg(MAX_PDU + 1)
            except BlockingIOError:
                fut = loop.create_future()
                loop.add_reader(self.sock, fut.set_result, None)
                # a message already begun must finish within the read timeout
                limit = self.read_timeout_s if parts else None
                try:
                    await asyncio.wait_for(fut, limit)
                except TimeoutError:
                    raise E2ReadTimeout(
                        f"SCTP message not complete within {self.read_timeout_s} s"
                    ) from None
                finally:
                    loop.remove_reader(self.sock)
                continue
            if not data:
                raise EOFError("peer closed the E2 association")
            parts.append(data)
            if flags & socket.MSG_EOR or sum(map(len, parts)) > MAX_PDU:
                break
        pdu = b"".join(parts)
        if len(pdu) > MAX_PDU:
            self.stats.framing_errors += 1
            raise E2TransportError(f"SCTP message over {MAX_PDU} bytes")
        self.stats.pdus_in += 1
        self.stats.bytes_in += len(pdu)
        return pdu

    def alive(self) -> bool:
        return self.sock.fileno() != -1  # SCTP heartbeats close a dead association

    def close(self) -> None:
        self.sock.close()


Handler = Callable[[E2Connection], Coroutine[Any, Any, None]]


class E2Server:
    """Accepts E2 nodes on ``host:port`` and runs ``handler(conn)`` for each association."""

    def __init__(
        self,
        handler: Handler,
        host: str,
        port: int,
        transport: Transport,
        read_timeout_s: float | None = None,
    ) -> None:
        self.handler, self.host, self.port, self.transport = handler, host, port, transport
        self.read_timeout_s = read_timeout_s
        self._server: asyncio.base_events.Server | None = None
        self._sctp_sock: socket.socket | None = None
        self._accept_task: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        if self.transport == "tcp":

            async def on_conn(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
                conn = TcpFramedConnection(r, w)
                conn.read_timeout_s = self.read_timeout_s
                await self.handler(conn)

            self._server = await asyncio.start_server(
                on_conn, self.host, self.port, reuse_address=True
            )
            if self.port == 0:
                self.port = self._server.sockets[0].getsockname()[1]
            return
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, IPPROTO_SCTP)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((self.host, self.port))
        s.listen(64)
        s.setblocking(False)
        self.port = s.getsockname()[1]
        self._sctp_sock = s
        self._accept_task = asyncio.create_task(self._accept_sctp())

    async def _accept_sctp(self) -> None:
        loop = asyncio.get_running_loop()
        assert self._sctp_sock is not None
        while True:
            conn, _ = await loop.sock_accept(self._sctp_sock)
            sc = SctpConnection(conn)
            sc.read_timeout_s = self.read_timeout_s
            t = asyncio.create_task(self.handler(sc))
            self._tasks.add(t)
            t.add_done_callback(self._tasks.discard)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        if self._accept_task is not None:
            self._accept_task.cancel()
        for t in list(self._tasks):
            t.cancel()
        if self._sctp_sock is not None:
            self._sctp_sock.close()


async def connect(host: str, port: int, transport: Transport) -> E2Connection:
    """The E2 node side: connect to e2term."""
    if transport == "tcp":
        r, w = await asyncio.open_connection(host, port)
        return TcpFramedConnection(r, w)
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, IPPROTO_SCTP)
    s.setblocking(False)
    await asyncio.get_running_loop().sock_connect(s, (host, port))
    return SctpConnection(s)
