"""``XappShell``: what every octoric xApp shares, around ricxappframe's ``RMRXapp``.

- RMR through ``RMRXapp`` (health check 100 -> 101 is RMRXapp's default handler); message
  handlers get an ``RmrMessage`` and never see (or leak) RMR buffers;
- the descriptor from ``CONFIG_FILE``, re-read on every write (RMRXapp's inotify watch), given
  to ``on_config``; a rejected edit keeps the previous configuration and is counted;
- the SDL namespace ``octoric.<name>`` (``SdlStore``);
- one HTTP server: ``/ric/v1/health/alive|ready``, ``/metrics`` (Prometheus text from
  ``registry``), ``/ric/v1/subscriptions/response`` (to ``on_subscription_response``; it
  wants the run's API token unless ``$OCTORIC_SUBMGR_CALLBACK_AUTH=none``, see
  ``callback_needs_token``) and whatever routes the xApp adds; requests it refuses (a foreign
  Host, a callback without the token) are counted in ``octoric_<name>_rest_refused_total``;
- ``send``: one RMR message, a few retries on transient failures only, counted by outcome.

``octoric.rmr`` is imported before ricxappframe, so ricxappframe binds octoric's
``librmr_si.so`` (docs/ric.md).
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import threading
import time
from collections import Counter
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import generate_latest

from octoric.xapps.base.config import load_descriptor
from octoric.xapps.base.errors import RestError, XappConfigError, XappError
from octoric.xapps.base.http import HttpServer, Request, Response
from octoric.xapps.base.metrics import StatsCollector
from octoric.xapps.base.sdl import SdlStore, use_redis_credentials
from octoric.xapps.base.subscription import SubscriptionResponse

log = logging.getLogger("xapps.shell")


@dataclass
class RmrMessage:
    mtype: int
    sub_id: int
    meid: str
    payload: bytes


MessageHandler = Callable[[RmrMessage], None]


CALLBACK_AUTH_ENV = "OCTORIC_SUBMGR_CALLBACK_AUTH"


def callback_needs_token(environ: Mapping[str, str] | None = None) -> bool:
    """Must submgr's ``/ric/v1/subscriptions/response`` carry the run's API token?

    ``token`` (the default): octoric's submgr sends ``Authorization: Bearer <token>``, so a
    local process that cannot read the run folder cannot forge an outcome (a forged failure
    made the xApp subscribe again and again). ``none``: O-RAN SC's submgr, which POSTs to
    ``http://<Host>:<HTTPPort>/ric/v1/subscriptions/response`` with no header and no room for
    a secret in the path (the Helm charts set it; there the NetworkPolicy admits only the
    platform's pods and the sender path to the HTTP port, and an outcome is acted on only for
    a SubscriptionId the xApp holds)."""
    env = os.environ if environ is None else environ
    mode = env.get(CALLBACK_AUTH_ENV, "token").strip().lower() or "token"
    if mode not in ("token", "none"):
        raise XappError(f"${CALLBACK_AUTH_ENV} must be token or none, not {mode!r}")
    return mode == "token"


RMR_QUEUE_LEN = 10_000  # received messages waiting for the dispatch thread
OVERLOAD_WINDOW_S = 10.0  # "overloaded" while messages were shed this recently


class SheddingQueue(queue.Queue):  # type: ignore[type-arg]
    """ricxappframe's receive queue with a bound: a message that finds it full is freed and
    counted (``rmr_counters["shed_queue_full"]``), never queued without end."""

    def __init__(self, maxsize: int, free: Callable[[Any], None], counters: Counter[str]) -> None:
        super().__init__(maxsize)
        self._free, self._counters = free, counters
        self.last_shed = 0.0  # monotonic
        # message type -> callback(summary, sbuf), run in the RMR receive thread (see start_rmr)
        self.inline: dict[int, Callable[[Any, Any], None]] = {}
        self.type_key: Any = None

    def put(self, item: Any, block: bool = True, timeout: float | None = None) -> None:
        if self.inline:
            fn = self.inline.get(item[0].get(self.type_key))
            if fn is not None:
                fn(*item)  # the callback frees the buffer
                return
        try:
            super().put(item, block=False)
        except queue.Full:
            self._counters["shed_queue_full"] += 1
            self.last_shed = time.monotonic()
            with contextlib.suppress(Exception):
                self._free(item[1])  # (summary, sbuf)

    def overloaded(self) -> bool:
        return self.last_shed > 0 and time.monotonic() - self.last_shed < OVERLOAD_WINDOW_S


class XappShell:
    def __init__(
        self,
        name: str,
        rmr_port: int,
        http_port: int,
        host: str = "127.0.0.1",
        sdl: SdlStore | None = None,
    ) -> None:
        self.name, self.rmr_port, self.http_port, self.host = name, rmr_port, http_port, host
        self.sdl = sdl or SdlStore(name)
        self.registry = CollectorRegistry()
        self.http = HttpServer(host, http_port)
        self.rmr_counters: Counter[str] = Counter()
        self.last_tx_failure: str | None = None  # why the last failed send failed
        self.config_errors = 0
        self.last_config_error = ""
        self.on_config: Callable[[dict[str, Any]], None] | None = None
        self.on_subscription_response: Callable[[SubscriptionResponse], None] | None = None
        self.xapp: Any = None  # the RMRXapp once start_rmr ran
        self._send_lock = threading.Lock()
        self._ready = threading.Event()
        # the message types the descriptor declares (rxMessages / txMessages), once declare() ran
        self.rx_declared: frozenset[int] | None = None
        self.tx_declared: frozenset[int] | None = None
        self.rmr_queue_len = RMR_QUEUE_LEN
        # RMR's own receive ring (our library: it drops and counts when full, which is where
        # an overload lands for handlers run inline): the count last read, when it last grew
        self._ring_drops = 0
        self._ring_drop_at = 0.0
        self.http.add("GET", "/ric/v1/health/alive", lambda r: Response.text("OK\n"))
        self.http.add("GET", "/ric/v1/health/ready", self._ready_probe)
        self.http.add("GET", "/metrics", self._metrics)
        self.http.add("POST", "/ric/v1/subscriptions/response", self._sub_response,
                      auth=callback_needs_token(), refused_as="subscription_callback")  # fmt: skip
        for kind in ("host", "subscription_callback"):  # exported from 0, before any refusal
            self.http.counters.refused[kind] += 0
        refused_help = {"rest_refused": "HTTP requests refused before any handler ran, by kind "
                        "(host: a Host this listener does not serve; subscription_callback: a "
                        "subscription outcome without the token)"}  # fmt: skip
        prefix = "octoric_" + name.replace("-", "_")
        refused = self.http.counters.refused
        collector = StatsCollector(prefix, lambda: {"rest_refused": refused}, None, refused_help)
        self.registry.register(collector)

    # --- HTTP ---------------------------------------------------------------------------------
    def _ready_probe(self, req: Request) -> Response:
        if not self._ready.is_set():
            return Response.text("starting\n", 503)
        if not self.sdl.healthy():  # state would not survive: say so (issue #17)
            return Response.text(f"SDL unreachable: {self.sdl.last_error}\n", 503)
        if self.overloaded():  # still serving, but shedding: say so, without failing the probe
            shed = self.rmr_counters["shed_queue_full"] + self.rmr_counters["dropped_ring_full"]
            return Response.text(f"OK overloaded: {shed} RMR messages shed\n")
        return Response.text("OK\n")

    def overloaded(self) -> bool:
        """Were received messages shed in the last seconds: the dispatch queue full, or RMR's
        receive ring full (counted in ``rmr_counters["dropped_ring_full"]``)?"""
        q = getattr(getattr(self.xapp, "_rmr_loop", None), "rcv_queue", None)
        self.ring_drops()
        recent = (
            self._ring_drop_at > 0 and time.monotonic() - self._ring_drop_at < OVERLOAD_WINDOW_S
        )
        return (isinstance(q, SheddingQueue) and q.overloaded()) or recent

    def ring_drops(self) -> int:
        """Messages RMR's receive ring dropped, full (octoric's librmr counts them; real RMR
        does not say: 0), mirrored into ``rmr_counters["dropped_ring_full"]``; the library's
        refusals go to ``rmr_counters["refused_<kind>"]`` on the way."""
        mrc = getattr(self.xapp, "_mrc", None)
        if mrc is None:
            return self._ring_drops
        try:
            import octoric.rmr

            st = octoric.rmr.stats(mrc)
            n = st.dropped_overflow
        except Exception:  # real RMR (no octoric_rmr_stats), or no context yet
            return self._ring_drops
        # what the library refused (issue #43): other users' connections, frames whose sender
        # field is not their connection's peer, replayed route tables, listener limits
        for k in ("peers_rejected", "forged_senders", "rt_replayed", "conns_over_cap",
                  "frames_timed_out", "frames_too_big"):  # fmt: skip
            self.rmr_counters[f"refused_{k}"] = getattr(st, k, 0)  # 0: a library without it
        if n > self._ring_drops:
            self._ring_drop_at = time.monotonic()
            self.rmr_counters["dropped_ring_full"] += n - self._ring_drops
            self._ring_drops = n
        return n

    def _metrics(self, req: Request) -> Response:
        return Response(200, generate_latest(self.registry), "text/plain; version=0.0.4")

    def _sub_response(self, req: Request) -> Response:
        resp = SubscriptionResponse.parse(req.json())
        if self.on_subscription_response is not None:
            self.on_subscription_response(resp)
        return Response.json({"ok": True})

    def start_sdl(self, stop: threading.Event) -> int:
        """Mirror the namespace (what a previous run kept) and watch Redis (re-seeded when it
        comes back empty); the number of keys found."""
        n = self.sdl.load()
        self.sdl.watch_in_thread(stop)
        return n

    def start_http(self) -> None:
        self.http.start()

    # --- config -------------------------------------------------------------------------------
    def apply_config(self, descriptor: dict[str, Any]) -> bool:
        """Hand the descriptor to ``on_config``; False (and counted) if it was rejected."""
        if self.on_config is None:
            return True
        try:
            self.on_config(descriptor)
            return True
        except XappConfigError as e:
            self.config_errors += 1
            self.last_config_error = str(e)
            log.error("configuration rejected, keeping the previous one: %s", e)
            return False

    def load_config(self) -> dict[str, Any]:
        return load_descriptor()

    # --- RMR ----------------------------------------------------------------------------------
    def declare(self, rx: Collection[int], tx: Collection[int]) -> None:
        """The RMR message types this xApp receives and sends, as its descriptor lists them
        (a test holds descriptor and declaration equal). ``start_rmr`` then wants a handler
        for exactly ``rx``, and ``send`` refuses (and counts) any type not in ``tx``."""
        self.rx_declared, self.tx_declared = frozenset(rx), frozenset(tx)

    def start_rmr(self, handlers: dict[int, MessageHandler], inline: Collection[int] = ()) -> None:
        """Start the RMRXapp (blocks until RMR has a route table) and its dispatch thread.

        Handlers of the message types in ``inline`` run in ricxappframe's RMR receive thread
        instead of going through its queue to the dispatch thread: one thread hand-off less
        (each a futex wake-up plus a GIL hand-over, ~0.1-1 ms on a busy 2-core VM) for a
        latency-critical handler that is short and thread-safe. While one runs, RMR's own
        receive ring holds what arrives."""
        import os
        import socket

        if self.rx_declared is not None and set(handlers) != self.rx_declared:
            raise XappError(
                f"RMR handlers for {sorted(handlers)} but the descriptor declares "
                f"{sorted(self.rx_declared)} (rxMessages)"
            )
        ports = [self.rmr_port]
        rtg = os.environ.get("RMR_RTG_SVC", "")
        if rtg.isdigit():  # a bare port: RMR listens there for route-manager pushes
            ports.append(int(rtg))
        for port in ports:
            with socket.socket() as s:
                # as RMR does: connections of a previous run in TIME_WAIT do not block it
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                try:
                    s.bind(("", port))
                except OSError as e:
                    raise XappError(f"RMR port {port} is not free: {e}") from None
        import octoric.rmr  # our librmr_si.so before ricxappframe binds one

        from ricxappframe.xapp_frame import RMRXapp, rmr

        octoric.rmr.warm_ricxappframe_constants()
        octoric.rmr.fast_ricxappframe_payloads()
        if os.environ.get("OCTORIC_RMR_BATCH_RECEIVE") != "1":  # A/B switch for the benchmark
            octoric.rmr.stream_ricxappframe_receives()

        def wrap(fn: MessageHandler | None) -> Callable[[Any, dict[str, Any], Any], None]:
            def cb(xapp: Any, summary: dict[str, Any], sbuf: Any) -> None:
                try:
                    mtype = int(summary[rmr.RMR_MS_MSG_TYPE])
                    self.rmr_counters[f"rx_{mtype}"] += 1
                    if fn is None:
                        self.rmr_counters["rx_unexpected"] += 1
                        return
                    meid = summary.get(rmr.RMR_MS_MEID) or b""
                    payload = summary.get(rmr.RMR_MS_PAYLOAD) or b""
                    fn(
                        RmrMessage(
                            mtype,
                            int(summary[rmr.RMR_MS_SUB_ID]),
                            meid.decode(errors="replace") if isinstance(meid, bytes) else str(meid),
                            bytes(payload),
                        )
                    )
                except Exception:  # a handler bug must not stop the dispatch loop
                    self.rmr_counters["handler_errors"] += 1
                    log.exception("RMR handler failed")
                finally:
                    xapp.rmr_free(sbuf)

            return cb

        def config_handler(xapp: Any, data: dict[str, Any]) -> None:
            self.apply_config(data)

        use_redis_credentials()  # ricxappframe's own SDL (R-NIB, health) too
        self.xapp = RMRXapp(
            wrap(None), config_handler=config_handler, rmr_port=self.rmr_port, use_fake_sdl=False
        )
        # ricxappframe queues received messages without a bound: under overload the xApp's
        # memory grew without end and nothing counted the loss (issue #17). A bounded queue
        # instead; what does not fit is freed and counted, and the status says overloaded.
        self.xapp._rmr_loop.rcv_queue = SheddingQueue(
            self.rmr_queue_len, lambda sbuf: rmr.rmr_free_msg(sbuf), self.rmr_counters
        )
        wrapped = {mtype: wrap(fn) for mtype, fn in handlers.items()}
        for mtype, cb in wrapped.items():
            self.xapp.register_callback(cb, mtype)
        q = self.xapp._rmr_loop.rcv_queue
        q.type_key = rmr.RMR_MS_MSG_TYPE
        xapp = self.xapp
        for mtype in inline:
            q.inline[mtype] = lambda summary, sbuf, cb=wrapped[mtype]: cb(xapp, summary, sbuf)
        # short receive timeout: the dispatch loop also polls the config file between messages
        self.xapp.run(thread=True, rmr_timeout=1)
        self._ready.set()

    def send(
        self,
        mtype: int,
        payload: bytes,
        meid: str | None = None,
        retries: int = 3,
        xact: bool = True,
    ) -> bool:
        """Send one message by route table. No route or a dead peer is counted, not raised.
        ``xact=False`` leaves the transaction ID empty: for one-way publications, where
        ricxappframe's per-message UUID is pure cost."""
        if self.tx_declared is not None and mtype not in self.tx_declared:
            self.rmr_counters[f"tx_{mtype}_undeclared"] += 1
            log.error("refusing to send message type %d: not in the descriptor's txMessages", mtype)
            return False
        if self.xapp is None:
            self.rmr_counters["tx_not_started"] += 1
            return False
        from ricxappframe.xapp_frame import rmr

        with self._send_lock:
            sbuf = rmr.rmr_alloc_msg(
                self.xapp._mrc,
                len(payload),
                payload=payload,
                mtype=mtype,
                meid=meid.encode() if meid else None,
                gen_transaction_id=xact,
            )
            try:
                for attempt in range(retries + 1):
                    sbuf = rmr.rmr_send_msg(self.xapp._mrc, sbuf)
                    state = sbuf.contents.state
                    if state == rmr.RMR_OK:
                        self.rmr_counters[f"tx_{mtype}"] += 1
                        return True
                    if state != rmr.RMR_ERR_RETRY or attempt == retries:
                        break
                    time.sleep(0.001)
                why = "no_route" if state == rmr.RMR_ERR_NOENDPT else f"state_{state}"
                self.rmr_counters[f"tx_{mtype}_failed_{why}"] += 1
                self.last_tx_failure = why
                return False
            finally:
                rmr.rmr_free_msg(sbuf)

    def rnib_nodes(self) -> list[Any]:
        from octoric.xapps.base.discovery import rnib_nodes

        if self.xapp is None:
            return []
        return rnib_nodes(self.xapp)


def bad_request(reason: str, message: str) -> RestError:
    return RestError(400, reason, message)
