"""The handover xApp's notifications to application servers: webhooks (REST-managed, kept in
SDL) and the event stream, behind one ``offer`` that never blocks or raises into detection.

REST (every route wants the API token: subscriptions change state, the stream and the list
reveal where UEs go):

| call | answer |
|---|---|
| ``POST /handover/v1/subscriptions`` | 201 with id and secret (the secret: only here) |
| ``GET /handover/v1/subscriptions`` | every subscription (no secrets), with delivery counts |
| ``GET /handover/v1/subscriptions/{id}`` | one; 404 if none |
| ``DELETE /handover/v1/subscriptions/{id}`` | 204; 404 if none |
| ``GET /handover/v1/events`` | the server-sent-events stream (``notify.stream``) |
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from typing import Any

from octoric.xapps.base.errors import RestError
from octoric.xapps.base.http import HttpServer, Request, Response
from octoric.xapps.base.sdl import SdlStore
from octoric.xapps.handover.notify import subscriptions as subs
from octoric.xapps.handover.notify.stream import EventStream
from octoric.xapps.handover.notify.targets import TargetPolicy, TargetRefused
from octoric.xapps.handover.notify.webhooks import Deliverer, DeliveryConfig
from octoric.xapps.handover.notify.worker import RemoteDeliverer

log = logging.getLogger("xapps.handover.notify")
HOOK = "hook."  # SDL keys: hook.<id>
MAX_SUBSCRIPTIONS = 64
BASE = "/handover/v1"


class Notifier:
    def __init__(
        self, sdl: SdlStore, delivery: DeliveryConfig | None = None, process: bool = True
    ) -> None:
        """``process``: deliver from a child process (``notify.worker``), off detection's GIL;
        False: from threads of this one (tests that look inside the deliverer)."""
        self.sdl = sdl
        self.counters: Counter[str] = Counter()
        self.rejected: Counter[str] = Counter()  # subscription requests refused, by reason
        self.deliverer: Deliverer | RemoteDeliverer = (
            RemoteDeliverer(delivery, on_expire=self._expired)
            if process
            else Deliverer(delivery, on_expire=self._expired)
        )
        self.stream = EventStream()
        self.subs: dict[str, subs.WebhookSubscription] = {}
        self._lock = threading.Lock()

    def routes(self, http: HttpServer) -> None:
        http.add("POST", f"{BASE}/subscriptions", self._create, auth=True)
        http.add("GET", f"{BASE}/subscriptions", self._list, auth=True)
        http.add("GET", f"{BASE}/subscriptions/{{id}}", self._get, auth=True)
        http.add("DELETE", f"{BASE}/subscriptions/{{id}}", self._delete, auth=True)
        http.add("GET", f"{BASE}/events", self.stream.handle, auth=True)

    # --- lifecycle -------------------------------------------------------------------------
    def restore(self) -> int:
        """The subscriptions a previous run kept in SDL (a restart keeps them)."""
        n = 0
        for key, d in self.sdl.find_json(HOOK).items():
            try:
                sub = subs.WebhookSubscription.from_sdl(d)
            except (KeyError, TypeError, ValueError) as e:
                self.counters["restore_errors"] += 1
                log.warning("SDL %s is not a webhook subscription (%s); dropped", key, e)
                self.sdl.delete(key)
                continue
            with self._lock:
                self.subs[sub.id] = sub
            self.deliverer.add(sub)
            n += 1
        if n:
            log.info("restored %d webhook subscriptions from SDL", n)
        return n

    def stop(self) -> None:
        self.deliverer.stop()
        self.stream.close()

    def configure(self, delivery: DeliveryConfig) -> None:
        self.deliverer.configure(delivery)

    # --- detection side --------------------------------------------------------------------
    def offer(self, event: dict[str, Any]) -> None:
        """Queue ``event`` for every webhook and stream client it matches; never raises."""
        try:
            self.deliverer.offer(event)
            self.stream.offer(event)
        except Exception:  # a notification bug must not stop detection
            self.counters["offer_errors"] += 1
            log.exception("notification of an event failed")

    # --- REST ------------------------------------------------------------------------------
    def _create(self, req: Request) -> Response:
        try:
            sub = subs.parse(req.json())
        except RestError as e:
            self.rejected[e.reason] += 1
            raise
        except subs.SubscriptionError as e:
            self.rejected[e.reason] += 1
            raise RestError(400, e.reason, str(e)) from None
        try:  # loopback, link-local and private targets only where allow-listed (#43)
            TargetPolicy.of(self.deliverer.cfg.allow).check_url(sub.url)
        except TargetRefused as e:
            self.rejected["target_not_allowed"] += 1
            log.warning("webhook subscription to %s refused: %s", sub.url, e)
            raise RestError(403, "target_not_allowed", str(e)) from None
        with self._lock:
            if len(self.subs) >= MAX_SUBSCRIPTIONS:
                self.rejected["too_many"] += 1
                raise RestError(409, "too_many", f"at most {MAX_SUBSCRIPTIONS} subscriptions")
            self.subs[sub.id] = sub
        self.sdl.set_json(f"{HOOK}{sub.id}", sub.to_sdl())
        self.deliverer.add(sub)
        self.counters["created"] += 1
        log.info("webhook subscription %s -> %s", sub.id, sub.url)
        return Response.json({**sub.public(), "secret": sub.secret}, 201)

    def _list(self, req: Request) -> Response:
        with self._lock:
            items = list(self.subs.values())
        return Response.json([{**s.public(), **self.deliverer.stats(s.id)} for s in items])

    def _get(self, req: Request) -> Response:
        with self._lock:
            sub = self.subs.get(req.params["id"])
        if sub is None:
            raise RestError(404, "no_subscription", f"no subscription {req.params['id']}")
        return Response.json({**sub.public(), **self.deliverer.stats(sub.id)})

    def _delete(self, req: Request) -> Response:
        sid = req.params["id"]
        with self._lock:
            sub = self.subs.pop(sid, None)
        if sub is None:
            raise RestError(404, "no_subscription", f"no subscription {sid}")
        self.deliverer.remove(sid)
        self.sdl.delete(f"{HOOK}{sid}")
        self.counters["deleted"] += 1
        return Response(204)

    def _expired(self, sub_id: str, why: str) -> None:
        with self._lock:
            self.subs.pop(sub_id, None)
        self.sdl.delete(f"{HOOK}{sub_id}")
        self.counters[f"expired_{why}"] += 1

    def snapshot(self) -> dict[str, Any]:
        q = self.deliverer.latency
        return {
            "webhook_subscriptions": len(self.subs),
            "webhook": dict(self.deliverer.counters),
            "webhook_latency_ms": {
                k: None if (v := q.quantile(float(k))) is None else round(v * 1e3, 3)
                for k in ("0.5", "0.99")
            },
            "stream_clients": self.stream.clients,
            "stream": dict(self.stream.counters),
            "notify": dict(self.counters),
            "subscriptions_rejected": dict(self.rejected),
        }
