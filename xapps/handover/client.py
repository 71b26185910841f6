"""Handover events on an application server: receive them, keep per-UE state, adapt.

Standard library only, and no other octoric module: a server may copy this one file.

- **Receiving** (the handover xApp's three paths carry the same JSON, ``ho_event`` version 2):
  ``verify`` checks a webhook delivery's signature (HMAC-SHA256 over ``timestamp + "." +
  body`` with the subscription's secret) and its age; ``WebhookReceiver`` is a small HTTP
  server that does that and hands each event on; ``SseClient`` follows the xApp's
  ``/handover/v1/events`` stream and resumes with ``Last-Event-ID``; ``parse_event`` reads a
  30501 payload (RMR) or any of them.
- **State**: ``HandoverState`` keeps, per UE, whether it is in a handover and when its last
  one ended, with the server's own map from flows (a 5-tuple or an app id) to UEs, deduplicating
  by event id (the same event may come over two paths).
- **Adaptations** (Octopus, ToN'22 §IV): ``bbr_h_interval_us`` / ``bbr_h_delivery_rate``
  (BBR-H, Eq. 2) and ``dash_h_bitrate`` (DASH-H's veto of a handover-induced downgrade).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
import urllib.request
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SIG_HEADER = "X-Octoric-Signature"
TS_HEADER = "X-Octoric-Timestamp"
ID_HEADER = "X-Octoric-Event-Id"
MAX_AGE_S = 300.0  # a delivery older than this (or this far in the future) is refused
KINDS = ("start", "complete", "failure", "ping_pong")
VERSION = 2


class EventError(ValueError):
    """A payload that is not a handover event, or a delivery that does not verify."""


# --- receiving ----------------------------------------------------------------------------------
def sign(secret: str, timestamp: str, body: bytes) -> str:
    """The signature header's value for a delivery (what the xApp sends)."""
    mac = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256)
    return "sha256=" + mac.hexdigest()


def verify(
    secret: str, headers: Any, body: bytes, now: float | None = None, max_age_s: float = MAX_AGE_S
) -> dict[str, Any]:
    """The event of a webhook delivery whose signature and time stamp check out, else
    ``EventError``. ``headers``: any mapping with ``get`` (case as sent)."""
    sig, ts = headers.get(SIG_HEADER), headers.get(TS_HEADER)
    if not sig or not ts:
        raise EventError(f"unsigned delivery: no {SIG_HEADER} / {TS_HEADER}")
    if not hmac.compare_digest(sign(secret, ts, body), sig):
        raise EventError("bad signature")
    try:
        age = (time.time() if now is None else now) - float(ts)
    except ValueError:
        raise EventError(f"bad {TS_HEADER}: {ts!r}") from None
    if abs(age) > max_age_s:
        raise EventError(f"delivery {age:.0f} s old: a replay?")
    return parse_event(body)


def parse_event(payload: bytes | str | dict[str, Any]) -> dict[str, Any]:
    """A version-2 handover event (JSON bytes, text, or an already decoded dict)."""
    try:
        ev = json.loads(payload) if isinstance(payload, bytes | str) else payload
    except ValueError as e:
        raise EventError(f"not JSON: {e}") from None
    if not isinstance(ev, dict) or ev.get("version") != VERSION:
        raise EventError(f"not a version-{VERSION} handover event")
    if ev.get("event") not in KINDS or not isinstance(ev.get("ue"), int):
        raise EventError(f"bad event kind or UE: {ev.get('event')!r} / {ev.get('ue')!r}")
    return ev


class WebhookReceiver:
    """An HTTP server (a thread) that verifies deliveries and calls ``on_event(event)``;
    answers 204, or 401 for one that does not verify (the xApp counts and retries it)."""

    def __init__(
        self, secret: str, on_event: Callable[[dict[str, Any]], None],
        host: str = "127.0.0.1", port: int = 0, path: str = "/",
    ) -> None:  # fmt: skip
        self.secret, self.on_event, self.path = secret, on_event, path
        self.rejected = 0
        recv = self

        class _H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(min(n, 1 << 20))
                try:
                    if self.path.split("?")[0] != recv.path:
                        raise EventError(f"no such path {self.path}")
                    ev = verify(recv.secret, self.headers, body)
                except EventError:
                    recv.rejected += 1
                    self.send_response(401)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                self.send_response(204)
                self.send_header("Content-Length", "0")
                self.end_headers()
                recv.on_event(ev)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer((host, port), _H)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://{host}:{self.port}{path}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class SseClient:
    """Follows the xApp's event stream (``GET /handover/v1/events``), reconnecting with
    ``Last-Event-ID`` so no event is lost across a reconnect the xApp can still serve."""

    def __init__(self, url: str, token: str = "", timeout_s: float = 30.0) -> None:
        self.url, self.token, self.timeout_s = url, token, timeout_s
        self.last_id: str | None = None
        self._stop = threading.Event()

    def stop(self) -> None:
        self._stop.set()

    def events(self, reconnect_s: float = 1.0) -> Iterator[dict[str, Any]]:
        """Every event, in order, until ``stop()``; reconnects after errors."""
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        while not self._stop.is_set():
            headers = {"Accept": "text/event-stream"}
            if self.token:
                headers["Authorization"] = f"Bearer {self.token}"
            if self.last_id is not None:
                headers["Last-Event-ID"] = self.last_id
            try:
                req = urllib.request.Request(self.url, headers=headers)
                with opener.open(req, timeout=self.timeout_s) as r:
                    yield from self._read(r)
            except (OSError, EventError):
                if self._stop.wait(reconnect_s):
                    return

    def _read(self, r: Any) -> Iterator[dict[str, Any]]:
        data: list[str] = []
        ev_id: str | None = None
        for raw in r:
            if self._stop.is_set():
                return
            line = raw.decode("utf-8").rstrip("\r\n")
            if not line:  # the end of one event
                if data:
                    ev = parse_event("\n".join(data))
                    if ev_id is not None:
                        self.last_id = ev_id
                    yield ev
                data, ev_id = [], None
            elif line.startswith(":"):
                continue  # a heartbeat
            elif line.startswith("data:"):
                data.append(line[5:].lstrip(" "))
            elif line.startswith("id:"):
                ev_id = line[3:].strip()


# --- state --------------------------------------------------------------------------------------
@dataclass
class UeHandover:
    in_handover: bool = False
    started_ms: int | None = None  # of the handover in progress (or the last one)
    ended_ms: int | None = None  # when the last one completed or failed
    count: int = 0
    ping_pongs: int = 0


@dataclass
class HandoverState:
    """Per-UE handover state, from events in any order of arrival over any path, and the
    server's map from its flows to UEs (the paper's per-socket store)."""

    ues: dict[int, UeHandover] = field(default_factory=dict)
    flows: dict[Hashable, int] = field(default_factory=dict)  # flow key -> AMF-UE-NGAP-ID
    _seen: OrderedDict[str, None] = field(default_factory=OrderedDict)
    max_seen: int = 10_000

    def bind(self, flow: Hashable, ue: int) -> None:
        """``flow``: a 5-tuple, an app or session id: whatever the server knows its flow by."""
        self.flows[flow] = ue

    def on_event(self, ev: dict[str, Any]) -> bool:
        """Apply one event; False if it was seen already (same id over another path)."""
        eid = ev.get("id")
        if isinstance(eid, str):
            if eid in self._seen:
                return False
            self._seen[eid] = None
            if len(self._seen) > self.max_seen:
                self._seen.popitem(last=False)
        u = self.ues.setdefault(int(ev["ue"]), UeHandover())
        kind = ev["event"]
        if kind == "start":
            u.in_handover, u.started_ms = True, ev.get("t_ms")
        elif kind in ("complete", "failure"):
            u.in_handover, u.ended_ms = False, ev.get("t_ms")
            u.started_ms = ev.get("started_ms", u.started_ms)
            u.count += 1
        elif kind == "ping_pong":
            u.ping_pongs += 1
        return True

    def of_flow(self, flow: Hashable) -> UeHandover | None:
        ue = self.flows.get(flow)
        return None if ue is None else self.ues.get(ue)

    def handover_since(self, flow: Hashable, since_ms: int) -> bool:
        """Did the flow's UE start or end a handover after ``since_ms`` (or is it in one)?"""
        u = self.of_flow(flow)
        if u is None:
            return False
        return u.in_handover or any(
            t is not None and t > since_ms for t in (u.started_ms, u.ended_ms)
        )


# --- adaptations --------------------------------------------------------------------------------
def bbr_h_interval_us(
    interval_us: float, seq_acked: int, seq_ho: int | None, rt_prop_us: float
) -> float:
    """BBR-H, ToN'22 Eq. (2): the interval of a delivery-rate sample. When the server learns
    of a handover it records Seq_HO, the sequence number of the last packet it sent; an ACK
    for a packet up to Seq_HO was delayed by the handover, so its sample's interval is
    RT_prop (BBR's minimum RTT over up to 10 s) instead of the inflated measured one, and
    the bottleneck-bandwidth estimate is not lowered by the link freeze."""
    if seq_ho is not None and seq_acked <= seq_ho:
        return rt_prop_us
    return interval_us


def bbr_h_delivery_rate(
    delivered_bytes: int, interval_us: float, seq_acked: int, seq_ho: int | None,
    rt_prop_us: float,
) -> float:  # fmt: skip
    """A delivery-rate sample (bit/s) with BBR-H's interval (Eq. 2)."""
    iv = bbr_h_interval_us(interval_us, seq_acked, seq_ho, rt_prop_us)
    return 0.0 if iv <= 0 else delivered_bytes * 8 * 1e6 / iv


def dash_h_bitrate(
    current_kbps: float, proposed_kbps: float, handover_since_decision: bool, buffer_s: float,
    min_buffer_s: float = 5.0,
) -> float:  # fmt: skip
    """DASH-H (ToN'22 §IV, Fig. 18): the ABR rule proposes the next segment's bitrate. A
    downgrade with a handover since the last decision and at least ``min_buffer_s`` buffered
    (type A) is the handover's doing: keep the current bitrate. A downgrade with a short buffer
    (type B), or with no handover since (types C, D), goes through."""
    if proposed_kbps < current_kbps and handover_since_decision and buffer_s >= min_buffer_s:
        return current_kbps
    return proposed_kbps
