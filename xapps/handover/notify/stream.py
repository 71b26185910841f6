"""The push stream: server-sent events at ``GET /handover/v1/events``.

Each event is ``id: <seq>`` + ``data: <the event JSON>``; a client that reconnects with
``Last-Event-ID`` gets what it missed from a ring of the last ``ring_len`` events (or
everything still in it, if its id is older). Query filters ``ue``, ``cell`` and ``event``
(repeatable) narrow the stream. A comment line every ``heartbeat_s`` keeps proxies from
closing an idle stream and tells a dead client apart. Each client has a bounded queue: one
that cannot keep up is cut off (counted) rather than slowing anyone else. At most
``max_clients`` at once (503 beyond).
"""

from __future__ import annotations

import json
import threading
from collections import Counter, deque
from typing import Any

from octoric.xapps.base.errors import RestError
from octoric.xapps.base.http import Request, Response, Writer
from octoric.xapps.handover.notify.subscriptions import Filters


class _Client:
    def __init__(self, filters: Filters, queue_len: int) -> None:
        self.filters = filters
        self.queue: deque[tuple[int, bytes]] = deque()
        self.queue_len = queue_len
        self.cond = threading.Condition()
        self.cut = False


class EventStream:
    def __init__(
        self, ring_len: int = 1000, max_clients: int = 32, queue_len: int = 1000,
        heartbeat_s: float = 10.0,
    ) -> None:  # fmt: skip
        self.ring: deque[tuple[int, dict[str, Any], bytes]] = deque(maxlen=ring_len)
        self.max_clients, self.queue_len, self.heartbeat_s = max_clients, queue_len, heartbeat_s
        self.counters: Counter[str] = Counter()
        self._seq = 0
        self._clients: set[_Client] = set()
        self._lock = threading.Lock()
        self._closed = threading.Event()

    @property
    def clients(self) -> int:
        with self._lock:
            return len(self._clients)

    def close(self) -> None:
        self._closed.set()
        with self._lock:
            clients = list(self._clients)
        for c in clients:
            with c.cond:
                c.cond.notify()

    def offer(self, event: dict[str, Any]) -> None:
        """Non-blocking: into the ring and every matching client's queue."""
        data = json.dumps(event, separators=(",", ":")).encode()
        with self._lock:
            self._seq += 1
            seq = self._seq
            self.ring.append((seq, event, data))
            clients = list(self._clients)
        for c in clients:
            if not c.filters.match(event):
                continue
            with c.cond:
                if len(c.queue) >= c.queue_len:
                    c.cut = True  # too slow: cut off rather than hold everyone
                else:
                    c.queue.append((seq, data))
                c.cond.notify()

    def handle(self, req: Request) -> Response:
        filters = _filters(req)
        last = req.headers.get("Last-Event-ID")
        try:
            last_id = int(last) if last else None
        except ValueError:
            raise RestError(400, "bad_last_event_id", "Last-Event-ID must be a number") from None
        client = _Client(filters, self.queue_len)
        with self._lock:
            if len(self._clients) >= self.max_clients:
                self.counters["refused_busy"] += 1
                raise RestError(503, "busy", f"at most {self.max_clients} stream clients")
            if last_id is not None:  # what it missed, from the ring
                client.queue.extend(
                    (s, d) for s, ev, d in self.ring if s > last_id and filters.match(ev)
                )
            self._clients.add(client)
        self.counters["connected"] += 1
        return Response(200, b"", "text/event-stream", stream=lambda w: self._serve(client, w))

    def _serve(self, c: _Client, write: Writer) -> None:
        try:
            if not write(b": octoric handover events\n\n"):
                return
            while not self._closed.is_set():
                with c.cond:
                    if not c.queue and not c.cut:
                        c.cond.wait(self.heartbeat_s)
                    if c.cut:
                        self.counters["cut_slow"] += 1
                        return
                    items = list(c.queue)
                    c.queue.clear()
                if not items:
                    if not write(b": heartbeat\n\n"):
                        return
                    continue
                chunk = b"".join(b"id: %d\ndata: %s\n\n" % (s, d) for s, d in items)
                if not write(chunk):
                    self.counters["client_gone"] += 1
                    return
                self.counters["sent"] += len(items)
        finally:
            with self._lock:
                self._clients.discard(c)


def _filters(req: Request) -> Filters:
    q = req.query
    try:
        ues = frozenset(int(x) for x in q.get("ue", []))
    except ValueError:
        raise RestError(400, "bad_filter", "ue must be an AMF-UE-NGAP-ID") from None
    return Filters(ues, frozenset(q.get("cell", [])), frozenset(q.get("event", [])))
