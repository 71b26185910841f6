"""Webhook deliveries in a process of their own.

Delivering is Python work (HTTP, JSON, HMAC) that, in the xApp's process, competes with
detection for the GIL and lengthens the detection latency's tail. So the ``Deliverer`` runs
in a child process (``multiprocessing``, spawned: the xApp's threads are never forked), and
the xApp talks to it through a pipe: ``RemoteDeliverer`` has the ``Deliverer``'s interface;
``offer`` sends the event's bytes and returns (a full pipe is never waited on: the event is
dropped and counted). The child reports expiries at once and its counters and latency every
half second. A child that dies is started again with every subscription (counted
``worker_restarts``).
"""

from __future__ import annotations

import contextlib
import json
import logging
import multiprocessing as mp
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict
from multiprocessing.connection import Connection
from typing import Any

from octoric.xapps.base.metrics import Quantiles
from octoric.xapps.handover.notify.subscriptions import WebhookSubscription
from octoric.xapps.handover.notify.webhooks import Deliverer, DeliveryConfig

log = logging.getLogger("xapps.handover.webhooks")
REPORT_EVERY_S = 0.5


def _child(conn: Connection, cfg: dict[str, Any]) -> None:
    """The delivery process: commands in, expiries and stats out."""
    out_lock = threading.Lock()

    def send(msg: tuple[Any, ...]) -> None:
        with out_lock, contextlib.suppress(OSError, EOFError):
            conn.send(msg)

    d = Deliverer(DeliveryConfig(**cfg), on_expire=lambda sid, why: send(("expired", sid, why)))

    def report() -> None:
        while True:
            time.sleep(REPORT_EVERY_S)
            q = d.latency
            lat = {k: q.quantile(float(k)) for k in ("0.5", "0.9", "0.99")}
            per = {sid: d.stats(sid) for sid in d.ids()}
            send(("stats", dict(d.counters), lat, q.count, q.total, per))

    threading.Thread(target=report, daemon=True).start()
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            break  # the xApp is gone
        op = msg[0]
        if op == "offer":
            d.offer(json.loads(msg[1]))
        elif op == "add":
            d.add(WebhookSubscription.from_sdl(msg[1]))
        elif op == "remove":
            d.remove(msg[1])
        elif op == "cfg":
            d.cfg = DeliveryConfig(**msg[1])
        elif op == "stop":
            break
    d.stop()


class _Latency(Quantiles):
    """The child's latency quantiles, as the xApp's metrics and status read them."""

    def __init__(self) -> None:
        super().__init__(1)
        self.q: dict[str, float | None] = {}

    def quantile(self, q: float) -> float | None:
        return self.q.get(str(q))


class RemoteDeliverer:
    def __init__(
        self,
        cfg: DeliveryConfig | None = None,
        on_expire: Callable[[str, str], None] | None = None,
    ) -> None:
        self.cfg = cfg or DeliveryConfig()
        self.on_expire = on_expire
        self.counters: Counter[str] = Counter()  # the child's, as last reported, + ours
        self.latency = _Latency()
        self._local: Counter[str] = Counter()
        self._per: dict[str, dict[str, Any]] = {}
        self._subs: dict[str, WebhookSubscription] = {}
        self._lock = threading.Lock()
        self._send_lock = threading.Lock()
        self._stopped = False
        self._conn: Connection | None = None
        self._proc: Any = None  # started with the first subscription

    def _start_child(self) -> None:
        ctx = mp.get_context("spawn")
        parent, child = ctx.Pipe(duplex=True)
        proc = ctx.Process(target=_child, args=(child, asdict(self.cfg)), daemon=True,
                           name="handover-webhooks")  # fmt: skip
        proc.start()
        child.close()
        self._conn, self._proc = parent, proc
        threading.Thread(target=self._reader, args=(parent, proc), daemon=True).start()
        with self._lock:
            subs = list(self._subs.values())
        for s in subs:
            self._send(("add", s.to_sdl()))

    def _reader(self, conn: Connection, proc: Any) -> None:
        while True:
            try:
                msg = conn.recv()
            except (EOFError, OSError):
                break
            if msg[0] == "expired":
                with self._lock:
                    self._subs.pop(msg[1], None)
                if self.on_expire is not None:
                    self.on_expire(msg[1], msg[2])
            elif msg[0] == "stats":
                counters, lat, n, total, per = msg[1:]
                with self._lock:
                    self.counters = Counter(counters) + self._local
                    self.latency.q, self.latency.count, self.latency.total = lat, n, total
                    self._per = per
        with self._lock:
            needed = bool(self._subs)
        if not self._stopped and needed:  # it died: another one, with every subscription
            self._local["worker_restarts"] += 1
            log.warning("the webhook worker exited (%s); starting another", proc.exitcode)
            time.sleep(0.5)
            if not self._stopped:
                self._start_child()

    def _send(self, msg: tuple[Any, ...]) -> bool:
        conn = self._conn
        if conn is None:
            return False
        with self._send_lock:
            try:
                conn.send(msg)
                return True
            except (OSError, EOFError, ValueError):
                self._local["worker_unreachable"] += 1
                return False

    # --- the Deliverer's interface ---------------------------------------------------------
    def add(self, sub: WebhookSubscription) -> None:
        with self._lock:
            self._subs[sub.id] = sub
            start = self._proc is None and not self._stopped
        if start:
            self._start_child()  # it adds every subscription, this one included
        else:
            self._send(("add", sub.to_sdl()))

    def remove(self, sub_id: str) -> bool:
        with self._lock:
            known = self._subs.pop(sub_id, None) is not None
        self._send(("remove", sub_id))
        return known

    def ids(self) -> list[str]:
        with self._lock:
            return list(self._subs)

    def stats(self, sub_id: str) -> dict[str, Any]:
        with self._lock:
            return dict(self._per.get(sub_id, {}))

    def configure(self, cfg: DeliveryConfig) -> None:
        self.cfg = cfg
        self._send(("cfg", asdict(cfg)))

    def offer(self, event: dict[str, Any]) -> int:
        """Hand the event to the worker (a pipe write); 1 if sent, 0 if there is nobody to
        deliver to or the worker is unreachable (counted)."""
        with self._lock:
            if not self._subs:
                return 0
        if not self._send(("offer", json.dumps(event, separators=(",", ":")))):
            return 0
        return 1

    def stop(self) -> None:
        self._stopped = True
        self._send(("stop",))
        if self._proc is not None:
            self._proc.join(3)
            if self._proc.is_alive():
                self._proc.terminate()
