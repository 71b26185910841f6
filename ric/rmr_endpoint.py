"""An RMR endpoint for the RIC's own components (e2term, submgr, a1-lite, routing).

It wraps one RMR context of our ``librmr_si.so`` through ricxappframe's ctypes bindings (the
same calls an xApp makes): a receive thread hands messages to asyncio, ``send``/``reply``
(return-to-sender) go out from the event loop. Each context reads its route table from its own
seed file and listens for route-manager pushes on its own control port, so several endpoints
can live in one process.
"""

# ruff: noqa: I001  (octoric.rmr must load the library before ricxappframe binds it)
from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import os
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import octoric.rmr
from ricxappframe.rmr import rmr

octoric.rmr.warm_ricxappframe_constants()

log = logging.getLogger("ric.rmr")
MAX_MSG = 65536
_ENV_LOCK = threading.Lock()


@dataclass
class RmrMessage:
    mtype: int
    payload: bytes
    sub_id: int
    meid: str
    xid: bytes
    src: str
    _mbuf: Any = field(default=None, repr=False)  # kept for reply(); freed by the endpoint


@dataclass
class RmrCounters:
    received: int = 0
    sent: int = 0
    send_failures: int = 0
    receive_errors: int = 0
    waited: int = 0  # sends that found the peer full and waited (backpressure)
    gave_up: int = 0  # sends dropped after waiting out their patience
    # what the library refused (issue #43), by kind: peers_rejected (a local user not allowed,
    # or a remote peer when denied), forged_senders (a frame naming a sender its connection's
    # peer is not), rt_replayed (an old route table), conns_over_cap, frames_timed_out,
    # frames_too_big; read from the library about once a second
    rmr_refused: Counter[str] = field(default_factory=Counter)


_REFUSALS = (
    "peers_rejected",
    "forged_senders",
    "rt_replayed",
    "conns_over_cap",
    "frames_timed_out",
    "frames_too_big",
)


@contextlib.contextmanager
def _env(values: dict[str, str]) -> Iterator[None]:
    """Set environment variables for one rmr_init (the library reads them there)."""
    with _ENV_LOCK:
        old = {k: os.environ.get(k) for k in values}
        os.environ.update(values)
        try:
            yield
        finally:
            for k, v in old.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


class RmrEndpoint:
    def __init__(
        self,
        name: str,
        port: int,
        *,
        control_port: int | None = None,
        seed_table: Path | None = None,
        src_id: str = "127.0.0.1",
        bind_if: str = "127.0.0.1",
        route_key: str = "",
    ) -> None:
        """``route_key`` (hex): install only route tables signed with it (the run's)."""
        self.name, self.port, self.bind_if = name, port, bind_if
        self.route_key = route_key
        self.control_port, self.seed_table, self.src_id = control_port, seed_table, src_id
        self.ctx: Any = None
        self.counters = RmrCounters()
        self.queue: asyncio.Queue[RmrMessage] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._running = False
        self._send_lock = threading.Lock()
        self._wormholes: dict[str, int] = {}

    @property
    def address(self) -> str:
        return f"{self.src_id}:{self.port}"

    def start(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        env = {
            "RMR_SRC_ID": self.src_id,
            # RMR listens on every interface unless told; ours stay on loopback by default
            "RMR_BIND_IF": self.bind_if,
            "OCTORIC_RMR_RT_KEY": self.route_key,
            "RMR_RTG_SVC": str(self.control_port) if self.control_port else "-1",
            "RMR_SEED_RT": str(self.seed_table) if self.seed_table else "",
        }
        if self.control_port:
            env["RMR_CTL_PORT"] = str(self.control_port)
        with _env(env):
            self.ctx = rmr.rmr_init(str(self.port).encode(), MAX_MSG, 0x00)
        rmr.rmr_set_stimeout(self.ctx, 1)
        self._loop = loop or asyncio.get_running_loop()
        self.queue = asyncio.Queue(maxsize=100_000)
        self._running = True
        self._thread = threading.Thread(target=self._receive, name=f"rmr-{self.name}", daemon=True)
        self._thread.start()
        log.info("%s: RMR on %d (control %s)", self.name, self.port, self.control_port or "-")

    def ready(self) -> bool:
        return bool(self.ctx is not None and rmr.rmr_ready(self.ctx))

    def refresh_refusals(self) -> None:
        """Copy the library's refusal counters into ``counters.rmr_refused``."""
        try:
            st = octoric.rmr.stats(self.ctx)
        except Exception:  # real RMR (no octoric_rmr_stats), or closed
            return
        for k in _REFUSALS:
            self.counters.rmr_refused[k] = getattr(st, k)

    def _receive(self) -> None:
        sbuf = None
        next_refresh = 0.0
        while self._running:
            if (now := time.monotonic()) >= next_refresh:
                next_refresh = now + 1.0
                self.refresh_refusals()
            sbuf = rmr.rmr_torcv_msg(self.ctx, sbuf, 100)
            st = sbuf.contents.state
            if st != rmr.RMR_OK:
                if st != rmr.RMR_ERR_TIMEOUT:
                    self.counters.receive_errors += 1
                continue
            s = sbuf.contents
            msg = RmrMessage(
                mtype=s.mtype,
                # ricxappframe's get_payload builds a Python list per byte (4.7 ms for 41 KB)
                payload=ctypes.string_at(s.payload, s.len),
                sub_id=s.sub_id,
                meid=rmr.rmr_get_meid(sbuf).decode(errors="replace"),
                xid=rmr.get_xaction(sbuf),
                src=rmr.get_src(sbuf),
                _mbuf=sbuf,
            )
            self.counters.received += 1
            sbuf = None  # ownership moves to the consumer (reply() or release())
            assert self._loop is not None and self.queue is not None
            with contextlib.suppress(RuntimeError):  # loop closed during shutdown
                self._loop.call_soon_threadsafe(self._enqueue, msg)
        if sbuf is not None:
            rmr.rmr_free_msg(sbuf)

    def _enqueue(self, msg: RmrMessage) -> None:
        assert self.queue is not None
        try:
            self.queue.put_nowait(msg)
        except asyncio.QueueFull:
            self.counters.receive_errors += 1
            self.release(msg)

    async def receive(self) -> RmrMessage:
        assert self.queue is not None
        return await self.queue.get()

    def _send_once(
        self, mtype: int, payload: bytes, sub_id: int, meid: str, xid: bytes | None, retries: int
    ) -> int:
        with self._send_lock:
            sbuf = rmr.rmr_alloc_msg(self.ctx, max(len(payload), 1))
            try:
                rmr.set_payload_and_length(payload, sbuf)
                sbuf.contents.mtype = mtype
                sbuf.contents.sub_id = sub_id
                if meid:
                    rmr.rmr_set_meid(sbuf, meid.encode())
                if xid:
                    rmr.set_transaction_id(sbuf, xid.ljust(32, b"\0")[:32])
                for _ in range(retries + 1):
                    sbuf = rmr.rmr_send_msg(self.ctx, sbuf)
                    if sbuf.contents.state != rmr.RMR_ERR_RETRY:
                        break
                return int(sbuf.contents.state)
            finally:
                rmr.rmr_free_msg(sbuf)

    def _count(self, ok: bool) -> bool:
        if ok:
            self.counters.sent += 1
        else:
            self.counters.send_failures += 1
        return ok

    def send(
        self,
        mtype: int,
        payload: bytes,
        sub_id: int = -1,
        meid: str = "",
        xid: bytes | None = None,
        retries: int = 3,
    ) -> bool:
        """Send by route table; True when RMR accepted it."""
        state = self._send_once(mtype, payload, sub_id, meid, xid, retries)
        return self._count(state == rmr.RMR_OK)

    async def send_patiently(
        self, mtype: int, payload: bytes, sub_id: int = -1, meid: str = "", patience_s: float = 2.0
    ) -> bool:
        """Send, waiting out a full peer (RMR_ERR_RETRY) for up to ``patience_s``: the caller
        stops reading its own input meanwhile, so a slow receiver slows the sender down
        (TCP backpressure) instead of losing messages."""
        deadline = time.monotonic() + patience_s
        while True:
            state = self._send_once(mtype, payload, sub_id, meid, None, 0)
            if state != rmr.RMR_ERR_RETRY or time.monotonic() > deadline:
                if state == rmr.RMR_ERR_RETRY:
                    self.counters.gave_up += 1
                return self._count(state == rmr.RMR_OK)
            self.counters.waited += 1
            await asyncio.sleep(0.001)

    def reply(self, msg: RmrMessage, mtype: int, payload: bytes) -> bool:
        """Return to sender on the connection ``msg`` came in on (keeps xid and sub_id)."""
        sbuf = msg._mbuf
        if sbuf is None:
            raise ValueError("message already released")
        msg._mbuf = None
        with self._send_lock:
            if rmr.rmr_payload_size(sbuf) < len(payload):
                sbuf = rmr.rmr_realloc_payload(sbuf, len(payload), False)
            ctypes.memmove(sbuf.contents.payload, payload, len(payload))
            sbuf.contents.len = len(payload)
            sbuf.contents.mtype = mtype
            sbuf = rmr.rmr_rts_msg(self.ctx, sbuf)
            ok = bool(sbuf.contents.state == rmr.RMR_OK)
            rmr.rmr_free_msg(sbuf)
        if ok:
            self.counters.sent += 1
        else:
            self.counters.send_failures += 1
        return ok

    def release(self, msg: RmrMessage) -> None:
        if msg._mbuf is not None:
            rmr.rmr_free_msg(msg._mbuf)
            msg._mbuf = None

    def wh_send_to(self, target: str, mtype: int, payload: bytes) -> bool:
        """Send to ``host:port`` directly through a wormhole (route-table pushes use this)."""
        with self._send_lock:
            whid = self._wormholes.get(target)
            if whid is None:
                whid = rmr.rmr_wh_open(self.ctx, target.encode())
                if whid < 0:
                    return False
                self._wormholes[target] = whid
            sbuf = rmr.rmr_alloc_msg(self.ctx, max(len(payload), 1))
            rmr.set_payload_and_length(payload, sbuf)
            sbuf.contents.mtype = mtype
            sbuf.contents.sub_id = -1
            sbuf = rmr.rmr_wh_send_msg(self.ctx, whid, sbuf)
            ok = bool(sbuf.contents.state == rmr.RMR_OK)
            rmr.rmr_free_msg(sbuf)
            if not ok:  # reopen next time: the peer may have restarted
                rmr.rmr_wh_close(self.ctx, whid)
                del self._wormholes[target]
        return ok

    def close(self) -> None:
        self._running = False
        if self._thread is not None:
            self._thread.join(2)
        if self.queue is not None:
            while not self.queue.empty():
                self.release(self.queue.get_nowait())
        if self.ctx is not None:
            rmr.rmr_close(self.ctx)
            self.ctx = None
