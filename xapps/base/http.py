"""The xApp's HTTP server (``http.server`` threads): health probes, Prometheus ``/metrics``,
submgr's ``/ric/v1/subscriptions/response`` and the xApp's own REST API.

Handlers take a ``Request`` and return a ``Response``; a ``RestError`` becomes a JSON
``{"error": ...}`` answer with its status, and is counted by reason; anything else a 500.

Routes added with ``auth=True`` change state: they want the run's API token
(``contracts.auth``: ``Authorization: Bearer``; the token from ``$OCTORIC_API_TOKEN``) and
answer 401 without it; with no token configured they answer 403 (secure by default: nobody
may change state until an operator sets one). A ``Response`` with ``stream`` set is written
as it comes (server-sent events), on a connection that then closes.

Every request's ``Host`` must be one this listener answers (``contracts.hosts``: loopback
names, configured ones; a DNS-rebinding page says its own name): 421 otherwise. Refusals are
counted in ``counters.refused`` by kind (``host``, and per route, e.g. ``subscription_callback``).
"""

from __future__ import annotations

import json
import logging
import re
import sys
import threading
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from octoric.contracts import auth, hosts
from octoric.xapps.base.errors import RestError, XappError

log = logging.getLogger("xapps.http")
MAX_BODY = 1 << 20
IDLE_TIMEOUT_S = 30.0  # an idle keep-alive or half-sent request frees its thread after this


@dataclass
class Request:
    method: str
    path: str
    params: dict[str, str]
    query: dict[str, list[str]]
    body: bytes
    headers: Mapping[str, str] = field(default_factory=dict)  # case-insensitive when served

    def json(self) -> Any:
        if not self.body:
            raise RestError(400, "empty_body", "the request needs a JSON body")
        try:
            return json.loads(self.body)
        except ValueError as e:
            raise RestError(400, "bad_json", f"the body is not JSON: {e}") from None
        except RecursionError:  # found by xapps/fuzz_rest.py: it was a 500
            raise RestError(400, "too_deep", "the JSON body is nested too deeply") from None


Writer = Callable[[bytes], bool]  # writes and flushes; False once the client is gone


@dataclass
class Response:
    status: int = 200
    body: bytes = b""
    content_type: str = "application/json"
    # a streaming answer: called with a writer after the headers; returns when it is done
    stream: Callable[[Writer], None] | None = None
    headers: Mapping[str, str] = field(default_factory=dict)  # more, e.g. Link

    @classmethod
    def json(cls, obj: Any, status: int = 200) -> Response:
        return cls(status, json.dumps(obj).encode(), "application/json")

    @classmethod
    def text(cls, text: str, status: int = 200, content_type: str = "text/plain") -> Response:
        return cls(status, text.encode(), content_type)


Handler = Callable[[Request], Response]


@dataclass
class Route:
    method: str
    pattern: re.Pattern[str]
    handler: Handler
    auth: bool = False
    refused_as: str = ""  # a refusal of its token is also counted in counters.refused


@dataclass
class HttpCounters:
    requests: Counter[str] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)  # by RestError reason
    # requests refused before any handler saw them, by kind (a hostile caller's trace)
    refused: Counter[str] = field(default_factory=Counter)


class HttpServer:
    def __init__(
        self, host: str, port: int, token: str | None = None, allowed_hosts: list[str] | None = None
    ) -> None:
        """``token``: the API token ``auth`` routes want (default ``$OCTORIC_API_TOKEN``);
        ``allowed_hosts``: Host names answered beyond loopback (default
        ``$OCTORIC_ALLOWED_HOSTS``; ``contracts.hosts``)."""
        self.host, self.port = host, port
        self.token = auth.token_from_env() if token is None else token
        self.hosts = hosts.policy(host, port, allowed_hosts)
        self.routes: list[Route] = []
        self.counters = HttpCounters()
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    def add(
        self, method: str, path: str, handler: Handler, auth: bool = False, refused_as: str = ""
    ) -> None:
        """``path`` may hold ``{name}`` segments, passed in ``Request.params``; ``auth``: the
        call changes state and wants the API token; ``refused_as``: count its refusals in
        ``counters.refused`` under this name."""
        rx = "^" + re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", path) + "$"
        self.routes.append(Route(method.upper(), re.compile(rx), handler, auth, refused_as))

    def _refused(self, headers: Mapping[str, str]) -> Response | None:
        if not self.token:
            self.count_error("no_token_configured")
            return Response.json(
                {"error": f"this call changes state and no API token is set: start the xApp "
                 f"with ${auth.TOKEN_ENV} (octoric run does)", "reason": "forbidden"}, 403,
            )  # fmt: skip
        if not auth.authorized(headers, self.token):
            self.count_error("unauthorized")
            return Response.json(
                {"error": "this call needs the API token: 'Authorization: Bearer <token>' "
                 f"(the run's {auth.TOKEN_FILE} file)", "reason": "unauthorized"}, 401,
            )  # fmt: skip
        return None

    def count_error(self, reason: str) -> None:
        with self._lock:
            self.counters.errors[reason] += 1

    def count_refused(self, kind: str) -> None:
        with self._lock:
            self.counters.refused[kind] += 1

    def dispatch(
        self, method: str, target: str, body: bytes, headers: Mapping[str, str] | None = None
    ) -> Response:
        url = urlsplit(target)  # requests may arrive in absolute form
        path = url.path.rstrip("/") or "/"
        hdrs = headers or {}
        if not self.hosts.allows(hdrs.get("Host")):
            self.count_refused("host")
            return Response.json(
                {"error": self.hosts.refusal(hdrs.get("Host")), "reason": "bad_host"}, hosts.STATUS
            )
        allowed = []
        for r in self.routes:
            m = r.pattern.match(path)
            if not m:
                continue
            if r.method != method:
                allowed.append(r.method)
                continue
            with self._lock:
                self.counters.requests[f"{method} {r.pattern.pattern}"] += 1
            if r.auth and (refused := self._refused(hdrs)) is not None:
                if r.refused_as:
                    self.count_refused(r.refused_as)
                return refused
            req = Request(method, path, m.groupdict(), parse_qs(url.query), body, hdrs)
            try:
                return r.handler(req)
            except RestError as e:
                self.count_error(e.reason)
                return Response.json({"error": str(e), "reason": e.reason}, e.status)
            except Exception as e:  # a handler bug answers 500, never kills the server
                self.count_error("internal")
                log.exception("%s %s failed", method, path)
                return Response.json({"error": f"internal error: {e}", "reason": "internal"}, 500)
        if allowed:
            self.count_error("method_not_allowed")
            return Response.json(
                {"error": f"{method} not allowed on {path} (allowed: {', '.join(allowed)})",
                 "reason": "method_not_allowed"},
                405,
            )  # fmt: skip
        self.count_error("not_found")
        return Response.json({"error": f"no such resource {path}", "reason": "not_found"}, 404)

    def start(self) -> None:
        server = self

        class _H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # an idle or half-sent connection holds a thread: close it after this many seconds
            timeout = IDLE_TIMEOUT_S

            def _serve(self) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                if n > MAX_BODY:
                    server.count_error("too_large")
                    resp = Response.json({"error": "body too large", "reason": "too_large"}, 413)
                    self.close_connection = True
                else:
                    body = self.rfile.read(n) if n > 0 else b""
                    # the Message itself: its get() is case-insensitive, as HTTP headers are
                    resp = server.dispatch(
                        self.command,
                        self.path,
                        body,
                        self.headers,  # type: ignore[arg-type]
                    )
                if resp.stream is not None:
                    self._stream(resp)
                    return
                self.send_response(resp.status)
                self.send_header("Content-Type", resp.content_type)
                self.send_header("Content-Length", str(len(resp.body)))
                for k, v in resp.headers.items():
                    self.send_header(k, v)
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(resp.body)

            def _stream(self, resp: Response) -> None:
                assert resp.stream is not None
                self.close_connection = True
                self.send_response(resp.status)
                self.send_header("Content-Type", resp.content_type)
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()

                def write(data: bytes) -> bool:
                    try:
                        self.wfile.write(data)
                        self.wfile.flush()
                        return True
                    except (OSError, ValueError):  # gone, or too slow for the write timeout
                        return False

                resp.stream(write)

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _serve

            def log_message(self, format: str, *args: Any) -> None:
                pass

        class _Server(ThreadingHTTPServer):
            allow_reuse_address = True

            def handle_error(self, request: Any, client_address: Any) -> None:
                # a client that hangs up or times out is routine: count it, no traceback
                exc = sys.exc_info()[1]
                if isinstance(exc, (ConnectionError, TimeoutError)):
                    server.count_error("client_gone")
                else:
                    server.count_error("connection")
                    log.warning("HTTP connection from %s failed: %r", client_address, exc)

        try:
            self._server = _Server((self.host, self.port), _H)
        except OSError as e:
            raise XappError(f"cannot serve HTTP on {self.host}:{self.port}: {e}") from None
        self._server.daemon_threads = True
        if self.port == 0:  # the port the system chose is the one a Host names
            port = int(self._server.server_address[1])
            self.hosts = hosts.HostPolicy(self.host, port, self.hosts.extra)
        threading.Thread(target=self._server.serve_forever, name="http", daemon=True).start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
