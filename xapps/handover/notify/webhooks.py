"""Webhook deliveries that never block detection.

``offer(event)`` only appends the event to the queue of each subscription it matches
(bounded; an overflow drops the oldest, counted). One worker thread per subscription POSTs
its queue in order: the event's JSON with ``X-Octoric-Signature: sha256=<HMAC-SHA256(secret,
timestamp + "." + body)>``, ``X-Octoric-Timestamp`` (unix s) and ``X-Octoric-Event-Id``
(``client.verify`` checks them). A failed delivery (an error, a timeout, a non-2xx answer) is
tried again with exponential backoff and jitter up to ``max_retries`` times, then given up
(counted). A subscription whose deliveries have failed for longer than ``expire_after_s``, or
whose ``ttl_s`` has run out, is expired: removed, counted, and ``on_expire`` told.
"""

from __future__ import annotations

import http.client
import json
import logging
import random
import threading
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from octoric.xapps.base.metrics import Quantiles
from octoric.xapps.handover.client import ID_HEADER, SIG_HEADER, TS_HEADER, sign
from octoric.xapps.handover.notify.subscriptions import WebhookSubscription
from octoric.xapps.handover.notify.targets import TargetPolicy, TargetRefused

log = logging.getLogger("xapps.handover.webhooks")


@dataclass(frozen=True)
class DeliveryConfig:
    timeout_s: float = 2.0  # one POST
    max_retries: int = 5
    backoff_s: float = 0.1  # first retry after this, doubling, with jitter
    backoff_max_s: float = 5.0
    expire_after_s: float = 300.0  # failing for this long: the subscription is dead
    queue_len: int = 1000  # per subscription
    # loopback, link-local and private targets allowed (notify.targets; controls.webhook_allow)
    allow: tuple[str, ...] = ()


@dataclass
class _Item:
    offered: float  # monotonic
    body: bytes
    event_id: str


class _Hook:
    def __init__(self, sub: WebhookSubscription, queue_len: int) -> None:
        self.sub = sub
        self.queue: deque[_Item] = deque(maxlen=queue_len)
        self.cond = threading.Condition()
        self.failing_since: float | None = None
        self.stopped = False
        self.conn: http.client.HTTPConnection | None = None  # kept alive between deliveries
        self.delivered = 0
        self.failed = 0


class Deliverer:
    def __init__(
        self,
        cfg: DeliveryConfig | None = None,
        on_expire: Callable[[str, str], None] | None = None,
    ) -> None:
        """``on_expire(id, why)``: a subscription was expired (dead receiver, or its TTL)."""
        self.cfg = cfg or DeliveryConfig()
        self.on_expire = on_expire
        self.counters: Counter[str] = Counter()
        self.latency = Quantiles()  # offered -> delivered (2xx), seconds
        self._hooks: dict[str, _Hook] = {}
        self._lock = threading.Lock()

    def configure(self, cfg: DeliveryConfig) -> None:
        self.cfg = cfg

    # --- subscriptions ---------------------------------------------------------------------
    def add(self, sub: WebhookSubscription) -> None:
        hook = _Hook(sub, self.cfg.queue_len)
        with self._lock:
            old = self._hooks.pop(sub.id, None)
            self._hooks[sub.id] = hook
        if old is not None:
            self._stop(old)
        threading.Thread(target=self._run, args=(hook,), name=f"webhook-{sub.id[:8]}",
                         daemon=True).start()  # fmt: skip

    def remove(self, sub_id: str) -> bool:
        with self._lock:
            hook = self._hooks.pop(sub_id, None)
        if hook is None:
            return False
        self._stop(hook)
        return True

    def ids(self) -> list[str]:
        with self._lock:
            return list(self._hooks)

    def stats(self, sub_id: str) -> dict[str, Any]:
        with self._lock:
            h = self._hooks.get(sub_id)
        if h is None:
            return {}
        return {"queued": len(h.queue), "delivered": h.delivered, "failed": h.failed,
                "failing_since": h.failing_since}  # fmt: skip

    def stop(self) -> None:
        with self._lock:
            hooks, self._hooks = list(self._hooks.values()), {}
        for h in hooks:
            self._stop(h)

    @staticmethod
    def _stop(hook: _Hook) -> None:
        with hook.cond:
            hook.stopped = True
            hook.cond.notify()

    # --- the detection side: O(subscriptions), never blocks on a receiver ---------------------
    def offer(self, event: dict[str, Any]) -> int:
        """Queue ``event`` for every subscription it matches; how many."""
        with self._lock:
            hooks = list(self._hooks.values())
        if not hooks:
            return 0
        body = json.dumps(event, separators=(",", ":")).encode()
        item = _Item(time.monotonic(), body, str(event.get("id", "")))
        n = 0
        for h in hooks:
            if not h.sub.filters.match(event):
                continue
            with h.cond:
                if len(h.queue) == h.queue.maxlen:
                    self.counters["dropped_queue_full"] += 1
                h.queue.append(item)
                h.cond.notify()
            n += 1
        self.counters["offered"] += n
        return n

    # --- the worker of one subscription --------------------------------------------------------
    def _run(self, hook: _Hook) -> None:
        while True:
            with hook.cond:
                while not hook.queue and not hook.stopped:
                    hook.cond.wait(1.0)
                    if self._expired(hook):
                        return
                if hook.stopped:
                    return
                item = hook.queue[0]
            ok = self._deliver_with_retries(hook, item)
            with hook.cond:
                if hook.queue and hook.queue[0] is item:
                    hook.queue.popleft()
            if ok:
                hook.failing_since = None
                hook.delivered += 1
                self.counters["delivered"] += 1
                self.latency.observe(time.monotonic() - item.offered)
            else:
                hook.failed += 1
                self.counters["given_up"] += 1
                if hook.failing_since is None:
                    hook.failing_since = time.monotonic()
            if self._expired(hook):
                return

    def _expired(self, hook: _Hook) -> bool:
        now = time.monotonic()
        why = None
        if hook.sub.expires_at is not None and time.time() > hook.sub.expires_at:
            why = "ttl"
        elif hook.failing_since is not None and now - hook.failing_since > self.cfg.expire_after_s:
            why = "dead_receiver"
        if why is None or hook.stopped:
            return False
        self.counters[f"expired_{why}"] += 1
        log.warning("webhook %s (%s) expired: %s", hook.sub.id, hook.sub.url, why)
        with self._lock:
            if self._hooks.get(hook.sub.id) is hook:
                del self._hooks[hook.sub.id]
        hook.stopped = True
        if self.on_expire is not None:
            self.on_expire(hook.sub.id, why)
        return True

    def _deliver_with_retries(self, hook: _Hook, item: _Item) -> bool:
        delay = self.cfg.backoff_s
        for attempt in range(self.cfg.max_retries + 1):
            if hook.stopped:
                return False
            if self._post(hook, item):
                return True
            self.counters["attempts_failed"] += 1
            if attempt == self.cfg.max_retries:
                break
            with hook.cond:  # a stop wakes it early
                hook.cond.wait(delay * (0.5 + random.random()))
            delay = min(delay * 2, self.cfg.backoff_max_s)
            if self._expired(hook):
                return False
        return False

    def _post(self, hook: _Hook, item: _Item) -> bool:
        sub = hook.sub
        u = urlsplit(sub.url)
        ts = f"{time.time():.3f}"
        headers = {
            "Content-Type": "application/json",
            SIG_HEADER: sign(sub.secret, ts, item.body),
            TS_HEADER: ts,
            ID_HEADER: item.event_id,
            "User-Agent": "octoric-handover/1",
        }
        if hook.conn is None:  # one connection per subscription, kept alive (HTTP/1.1)
            cls = http.client.HTTPSConnection if u.scheme == "https" else http.client.HTTPConnection
            hook.conn = cls(u.hostname or "", u.port, timeout=self.cfg.timeout_s)
            # connect only where the target policy admits, checked after resolution (a name
            # re-pointed at 127.0.0.1 since its registration is refused here, counted)
            hook.conn._create_connection = TargetPolicy.of(self.cfg.allow).connector()  # type: ignore[attr-defined]
        conn = hook.conn
        try:
            path = (u.path or "/") + (f"?{u.query}" if u.query else "")
            conn.request("POST", path, item.body, headers)
            resp = conn.getresponse()
            resp.read()  # drain it, so the connection can carry the next one
            status = resp.status
            if resp.will_close:
                conn.close()
                hook.conn = None
        except (OSError, http.client.HTTPException) as e:
            self.counters["target_refused" if isinstance(e, TargetRefused) else "errors"] += 1
            log.debug("webhook %s: %s", sub.url, e)
            conn.close()
            hook.conn = None
            return False
        if 200 <= status < 300:
            return True
        self.counters[f"status_{status // 100}xx"] += 1
        return False
