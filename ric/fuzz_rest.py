"""Mutation fuzzer for the embedded RIC's REST APIs: a1 (A1-P v2), submgr, appmgr, rtmgr
(issue #17: bad input gets a 4xx, never a 5xx, a hang, a crash or lost state).

    .venv/bin/python -m octoric.ric.fuzz_rest --inputs 1000000 --seed 1 [--only a1]

Unlike the xApps' fuzzer (``octoric.xapps.fuzz_rest``, which calls a dispatcher in process),
this one runs the real thing: a private Redis and the RIC's processes (``ric.stack``), and
every request goes over a kept-alive loopback TCP connection as raw HTTP/1.1 bytes, so
aiohttp's request parser, the auth middleware, the routing and the handlers all see it.
Requests: valid ones of every route (with and without the run's API token), then mutated
ones: JSON bodies with fields dropped, retyped, added or replaced by random values or bytes,
nesting far past any recursion limit; random path segments, odd characters, absolute-form
targets; random methods; broken Authorization and Content-Length headers.

A request passes when the answer is a 2xx-4xx or 503 with a JSON body wherever the
Content-Type says JSON. A finding is anything else: a 5xx, no answer within 10 s, a
connection refused (the process died), a body that does not parse. Every 5,000 requests
and at the end, the run also checks that nothing was lost: each service answers its health
check, and the sentinel state made at the start (an A1 policy type and policy, a registered
xApp, its route in rtmgr's table) is still there. Prints a line per API (with its rate);
exit 1 on any finding.

``--in-process`` (``InProcessRic``): the same requests, the same raw bytes and the same pass
and finding rules, faster, with the four services built in the fuzzer's own process by the
functions their processes use (``services.platform_services``, ``platform_apps``,
``submgr_app``, ``a1_service``, ``a1_app``; ``app_runner`` sets each app up as its server
does): the same routes, auth middleware with the run's token, body limit and health routes,
each service with its own real ``Sdl`` (owned namespaces mirrored, Redis watched) on a
private real redis-server, appmgr's changes rebuilding rtmgr's route table as in the platform
process. Each request's bytes go to the protocol object aiohttp makes for a new TCP
connection (its RequestHandler, over an in-memory transport), through ``data_received``
(aiohttp's HTTP parser, and its 400 for what does not parse), then as its reading loop hands
a parsed request on: the server's request factory and ``_handle_request`` (middleware,
router, handler; an HTTPException as the answer, another exception a 500; the answer
written). The written answer is parsed and checked. The state checks go through the same
apps; an exception raised where nobody awaits it (a background task: submgr's subscription
procedures, route rebuilds) is a finding too, which the socket mode cannot see. No request
is skipped.

What the in-process mode does not exercise:
- the loopback socket and aiohttp's reading loop: keep-alive, lingering over a body the
  handler did not read, further requests on a connection. Every request is alone on its
  connection. A Content-Length shorter than the body is passed as it is: the handler gets
  that many bytes, as from the socket; the leftover bytes are the start of a next request,
  which aiohttp's parser refuses with its 400 when they cannot be one (as when they arrive
  with the request, as the socket mode's single send usually does) and which is not
  answered otherwise (the socket mode's server waits for the rest of it);
- RMR: a stand-in endpoint (``_RmrStandIn``) takes submgr's subscription requests (e2term
  drops them in the fuzz RIC: no E2 node), refuses a1's policy requests (no xApp takes a
  policy type there), takes rtmgr's route-table pushes; nothing ever arrives, so no E2 or A1
  answers, as in the fuzz RIC;
- the route manager behind submgr: its calls are answered yes without reaching rtmgr
  (whose handle API is fuzzed on its own);
- the processes themselves: start-up from ric.json, signals, restarts, e2term, and the
  isolation between services (they share this process, its event loop and Redis).
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import logging
import os
import random
import secrets
import socket
import sys
import tempfile
import time
import traceback
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, TypeVar

from octoric.contracts import a1 as a1_paths
from octoric.contracts import auth
from octoric.fuzz_inputs import deep_json, junk, junk_bytes, mutate_json, odd_path

if TYPE_CHECKING:
    from aiohttp import web

    from octoric.ric.sdl import Sdl

METHODS = ["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"]
CHECK_EVERY = 5_000
TIMEOUT_S = 10.0
FUZZ_TID = 31001  # the policy type the fuzzer's valid requests create and delete
SENTINEL_TID = 31999  # made once at the start, must survive the run
SENTINEL_XAPP = "fuzz-sentinel"
SENTINEL_RMR = "127.0.0.1:4997"
HOST = "127.0.0.1"
T = TypeVar("T")


@dataclass
class Api:
    name: str
    port_name: str  # the RicConfig field of its REST port
    valid: list[tuple[str, str, dict[str, Any] | None]]  # method, path, JSON body
    paths: list[str]  # "{x}": a random segment


def _descriptor(name: str, port: int) -> str:
    d = {"name": name, "messaging": {"ports": [
        {"name": "rmr-data", "container": name, "port": port,
         "rxMessages": ["OCTORIC_ABW_REPORT"], "txMessages": [], "policies": []}]}}  # fmt: skip
    return json.dumps(d)


def _register_body(name: str, rmr: str) -> dict[str, Any]:
    return {"appName": name, "appInstanceName": name, "appVersion": "1",
            "httpEndpoint": "127.0.0.1:8997", "rmrEndpoint": rmr,
            "config": _descriptor(name, int(rmr.rsplit(":", 1)[1]))}  # fmt: skip


def _type_body(tid: int) -> dict[str, Any]:
    schema = {"type": "object", "properties": {"x": {"type": "integer", "maximum": 100},
                                               "s": {"type": "string", "pattern": "^[a-z]+$"}},
              "required": ["x"], "additionalProperties": False}  # fmt: skip
    return {"name": "fuzz", "description": "fuzz", "policy_type_id": tid, "create_schema": schema}


def apis() -> list[Api]:
    a1 = a1_paths.policy_type_path(FUZZ_TID)
    sub = {
        "ClientEndpoint": {"Host": "127.0.0.1", "HTTPPort": 9, "RMRPort": 4999},
        "Meid": "gnb_999_999_000001",  # no such node: it fails after its timer, as it should
        "RANFunctionID": 2,
        "E2SubscriptionDirectives": {"E2TimeoutTimerValue": 1, "E2RetryCount": 0},
        "SubscriptionDetails": [{"XappEventInstanceId": 7, "EventTriggers": [1],
                                 "ActionToBeSetupList": [{"ActionID": 1,
                                                          "ActionType": "report"}]}],
    }  # fmt: skip
    handle = {"address": "127.0.0.1", "port": 4998, "subscription_id": 77}
    return [
        Api("a1", "a1_rest_port", [
            ("PUT", a1, _type_body(FUZZ_TID)), ("GET", f"{a1_paths.PREFIX}/policytypes", None),
            ("GET", a1, None), ("DELETE", a1, None),
            ("PUT", f"{a1}/policies/p1", {"x": 5, "s": "abc"}), ("GET", f"{a1}/policies", None),
            ("GET", f"{a1}/policies/p1", None), ("GET", f"{a1}/policies/p1/status", None),
            ("DELETE", f"{a1}/policies/p1", None), ("GET", f"{a1_paths.PREFIX}/healthcheck", None),
        ], [a1_paths.policy_type_path("{x}"), a1_paths.policy_path("{x}", "{x}"),
            a1_paths.policy_path("{x}", "{x}") + "/status", a1_paths.PREFIX + "/{x}", "/metrics",
            "/ric/v1/health/ready"]),
        Api("submgr", "submgr_rest_port", [
            ("POST", "/ric/v1/subscriptions", sub), ("GET", "/ric/v1/subscriptions", None),
            ("DELETE", "/ric/v1/subscriptions/fuzz-1", None),
        ], ["/ric/v1/subscriptions/{x}", "/ric/v1/{x}", "/metrics", "/ric/v1/health/alive"]),
        Api("appmgr", "appmgr_port", [
            ("POST", "/ric/v1/register", _register_body("fuzzapp", "127.0.0.1:4996")),
            ("POST", "/ric/v1/deregister", {"appName": "fuzzapp", "appInstanceName": "fuzzapp"}),
            ("GET", "/ric/v1/xapps", None),
        ], ["/ric/v1/register", "/ric/v1/deregister", "/ric/v1/xapps/{x}", "/ric/v1/{x}"]),
        Api("rtmgr", "rtmgr_rest_port", [
            ("POST", "/ric/v1/handles/xapp-subscription-handle", handle),
            ("DELETE", "/ric/v1/handles/xapp-subscription-handle", handle),
            ("GET", "/ric/v1/routes", None),
        ], ["/ric/v1/handles/{x}", "/ric/v1/routes", "/ric/v1/{x}", "/metrics"]),
    ]  # fmt: skip


# --- one kept-alive connection, raw HTTP/1.1 ----------------------------------------------


class _KeepOpen:
    """The connection's reader for one response: HTTPResponse closes its file when the body
    is read, which must not close the kept-alive connection's."""

    def __init__(self, f: BinaryIO) -> None:
        self._f = f

    def __getattr__(self, name: str) -> Any:
        return getattr(self._f, name)

    def close(self) -> None:
        pass


class _Conn:
    """A loopback connection to one service; reopened when the server closes it."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.sock: socket.socket | None = None
        self.rfile: BinaryIO | None = None

    def _open(self) -> None:
        self.sock = socket.create_connection(("127.0.0.1", self.port), timeout=TIMEOUT_S)
        self.rfile = self.sock.makefile("rb")

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
        self.sock = self.rfile = None

    def makefile(self, mode: str) -> Any:  # what http.client.HTTPResponse reads from
        assert self.rfile is not None
        return _KeepOpen(self.rfile)

    def request(self, raw: bytes, method: str) -> tuple[int, str, bytes]:
        """Send one request; (status, content type, body). Reconnects once if the kept-alive
        connection was closed by the server in between."""
        for attempt in (0, 1):
            if self.sock is None:
                self._open()
            assert self.sock is not None
            try:
                self.sock.sendall(raw)
                resp = http.client.HTTPResponse(self, method=method)  # type: ignore[arg-type]
                resp.begin()
                body = resp.read()
                if resp.will_close:
                    self.close()
                return resp.status, resp.getheader("Content-Type") or "", body
            except (ConnectionResetError, BrokenPipeError, http.client.RemoteDisconnected) as e:
                self.close()
                if attempt:
                    raise ConnectionError(f"closed without an answer: {e}") from None
        raise AssertionError("unreachable")


def _raw(method: str, path: str, body: bytes, headers: dict[str, str]) -> bytes:
    head = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1"]
    if "Content-Length" not in headers:
        head.append(f"Content-Length: {len(body)}")
    head += [f"{k}: {v}" for k, v in headers.items()]
    return ("\r\n".join(head) + "\r\n\r\n").encode("utf-8", "surrogatepass") + body


def _no_crlf(s: str) -> str:
    # a CR/LF in the target would start a second request on the kept-alive connection and
    # the answers would no longer pair up; the target's other bytes go as they are
    return s.replace("\r", "%0D").replace("\n", "%0A")


def request_for(rng: random.Random, api: Api, token: str) -> tuple[str, str, bytes, dict[str, str]]:
    method, path, body = rng.choice(api.valid)
    headers = {"Content-Type": "application/json"}
    if rng.random() < 0.8:
        headers.update(auth.bearer(token))
    elif rng.random() < 0.7:
        headers["Authorization"] = rng.choice(
            ["Bearer", "Bearer x", "Basic ?", "bearer " + token, "Bearer " + token[:-1],
             "Bearer " + token * 40]
        )  # fmt: skip
    data = b"" if body is None else json.dumps(body).encode()
    r = rng.random()
    if r < 0.15:
        return method, path, data, headers  # valid
    if r < 0.6 and body is not None:
        data = mutate_json(rng, body, (*body, "extra", "id"))
    elif r < 0.65:
        data = junk_bytes(rng)
    elif r < 0.7:  # nesting far past any parser's recursion limit
        data = deep_json(rng)
    elif r < 0.75:
        data = json.dumps(junk(rng), allow_nan=True).encode()
    if rng.random() < 0.3:
        method = rng.choice(METHODS)
    if rng.random() < 0.3:
        path = odd_path(rng, api.paths)
    if rng.random() < 0.05:
        headers["Content-Type"] = rng.choice(["text/plain", "", "application/json; charset=x"])
    if rng.random() < 0.03:  # a length that disagrees with the body (shorter only: longer waits)
        headers["Content-Length"] = str(max(0, len(data) - rng.randrange(1, 10)))
    return method, _no_crlf(path), data, headers


# --- the run ------------------------------------------------------------------------------


@dataclass
class Report:
    name: str
    inputs: int = 0
    by_status: dict[int, int] = field(default_factory=dict)
    findings: list[str] = field(default_factory=list)  # the first 20
    failures: int = 0
    checks: int = 0
    seconds: float = 0.0


def _call(port: int, method: str, path: str, token: str, body: Any = None) -> tuple[int, bytes]:
    c = _Conn(port)
    try:
        data = b"" if body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json", **auth.bearer(token)}
        st, _, out = c.request(_raw(method, path, data, headers), method)
        return st, out
    finally:
        c.close()


# (API, method, path, JSON body) -> (status, body), with the run's token; OSError: unreachable
Call = Callable[[str, str, str, Any], Awaitable[tuple[int, bytes]]]


def _socket_call(ports: dict[str, int], token: str) -> Call:
    async def call(name: str, method: str, path: str, body: Any) -> tuple[int, bytes]:
        return _call(ports[name], method, path, token, body)  # blocking: nothing else runs

    return call


def make_sentinels(ports: dict[str, int], token: str) -> None:
    """State the fuzzing must not lose: an A1 type and policy, a registered xApp (its route)."""
    asyncio.run(_make_sentinels(_socket_call(ports, token)))


async def _make_sentinels(call: Call) -> None:
    tid = a1_paths.policy_type_path(SENTINEL_TID)
    for method, name, path, body in (
        ("PUT", "a1", tid, _type_body(SENTINEL_TID)),
        ("PUT", "a1", f"{tid}/policies/sentinel", {"x": 1}),
        ("POST", "appmgr", "/ric/v1/register", _register_body(SENTINEL_XAPP, SENTINEL_RMR)),
    ):  # fmt: skip
        st, out = await call(name, method, path, body)
        if st >= 300:
            raise RuntimeError(f"fuzz set-up: {method} {path} answered {st}: {out[:300]!r}")


def check_state(ports: dict[str, int], token: str) -> list[str]:
    """What is wrong with the RIC after fuzzing (empty: nothing)."""
    return asyncio.run(_check_state(_socket_call(ports, token), list(ports)))


async def _check_state(call: Call, names: list[str]) -> list[str]:
    bad = []
    for name in names:
        try:
            st, _ = await call(name, "GET", "/ric/v1/health/alive", None)
        except OSError as e:
            bad.append(f"{name}: health check failed: {e!r}")
            continue
        if st != 200:
            bad.append(f"{name}: health check answered {st}")
    tid = a1_paths.policy_type_path(SENTINEL_TID)
    for path in (tid, f"{tid}/policies/sentinel"):
        st, out = await call("a1", "GET", path, None)
        if st != 200:
            bad.append(f"a1: sentinel {path} answered {st}: {out[:200]!r}")
    st, out = await call("appmgr", "GET", "/ric/v1/xapps", None)
    if st != 200 or SENTINEL_XAPP.encode() not in out:
        bad.append(f"appmgr: the sentinel xApp is no longer registered ({st})")
    st, out = await call("rtmgr", "GET", "/ric/v1/routes", None)
    if st != 200 or SENTINEL_RMR.encode() not in out:
        bad.append(f"rtmgr: the sentinel xApp's route is gone ({st})")
    return bad


class _Target:
    """Where one API's fuzz requests go: a loopback connection, or the app in process."""

    tb_limit: int | None = 2  # a finding's traceback: the fuzzer's frames (None: all)

    async def request(self, raw: bytes, method: str) -> tuple[int, str, bytes]:
        """One raw HTTP/1.1 request; (status, content type, body)."""
        raise NotImplementedError

    def reset(self) -> None:
        """After a finding: start afresh (a new connection)."""

    async def check(self) -> list[str]:
        """The state check (``check_state``)."""
        raise NotImplementedError

    def server_traceback(self) -> str:
        """What the server logged with a traceback about the last request (in process)."""
        return ""


class _SocketTarget(_Target):
    def __init__(self, api: Api, ports: dict[str, int], token: str) -> None:
        self.conn = _Conn(ports[api.name])
        self.ports, self.token = ports, token

    async def request(self, raw: bytes, method: str) -> tuple[int, str, bytes]:
        return self.conn.request(raw, method)  # blocking: nothing else runs

    def reset(self) -> None:
        self.conn.close()

    async def check(self) -> list[str]:
        return await _check_state(_socket_call(self.ports, self.token), list(self.ports))


def fuzz(api: Api, ports: dict[str, int], token: str, n: int, seed: int,
         progress: Callable[[int, int], None] | None = None) -> Report:  # fmt: skip
    target = _SocketTarget(api, ports, token)
    try:
        return asyncio.run(_fuzz(api, target, token, n, seed, progress))
    finally:
        target.reset()


async def _fuzz(api: Api, target: _Target, token: str, n: int, seed: int,
                progress: Callable[[int, int], None] | None = None) -> Report:  # fmt: skip
    """The run of one API, either mode (a coroutine for the in-process one, whose services
    share the loop; the socket mode's calls block, nothing else runs in its loop)."""
    rng = random.Random(seed)
    rep = Report(api.name)

    def finding(what: str) -> None:
        rep.failures += 1
        if len(rep.findings) < 20:
            rep.findings.append(what)
            print(f"[fuzz] {api.name} FINDING: {what}", file=sys.stderr, flush=True)
        if progress is not None:
            progress(rep.inputs, rep.failures)

    t0 = time.monotonic()
    for i in range(n):
        method, path, body, headers = request_for(rng, api, token)
        rep.inputs += 1
        try:
            st, ctype, out = await target.request(_raw(method, path, body, headers), method)
            rep.by_status[st] = rep.by_status.get(st, 0) + 1
            if not (200 <= st < 500 or st == 503):
                raise AssertionError(f"status {st}: {out[:300]!r}")
            if ctype.startswith("application/json") and out and method != "HEAD":
                json.loads(out)
        except Exception as e:
            target.reset()
            finding(f"{method} {path[:200]!r} body={body[:200]!r}: {e!r}\n"
                    + traceback.format_exc(limit=target.tb_limit)
                    + target.server_traceback())  # fmt: skip
        if (i + 1) % CHECK_EVERY == 0 or i + 1 == n:
            rep.checks += 1
            for what in await target.check():
                finding(f"after {i + 1} requests: {what}")
        if progress is not None and (i + 1) % 100_000 == 0:
            progress(i + 1, rep.failures)
    rep.seconds = time.monotonic() - t0
    return rep


# --- in process ---------------------------------------------------------------------------


class _Memory(asyncio.Transport):
    """An in-process connection's transport: keeps what the server writes."""

    def __init__(self, port: int) -> None:
        super().__init__({"peername": (HOST, 40000), "sockname": (HOST, port)})
        self.out = bytearray()
        self.closed = False

    def write(self, data: Any) -> None:
        self.out += data

    def writelines(self, list_of_data: Any) -> None:
        for d in list_of_data:
            self.out += d

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        self.close()


class _Tracebacks(logging.Logger):
    """The server's logger on in-process connections: keeps what it logs with a traceback (a
    handler's exception before its 500, an exception outside the handler) for the finding."""

    def __init__(self) -> None:
        super().__init__("octoric.ric.fuzz_rest.server")
        self.logged: list[tuple[object, tuple[object, ...], BaseException | None]] = []

    def exception(self, msg: object, *args: object, exc_info: Any = True, **kw: Any) -> None:
        e = exc_info if isinstance(exc_info, BaseException) else sys.exc_info()[1]
        self.logged.append((msg, args, e))  # formatted only for a finding

    def text(self) -> str:
        out = []
        for msg, args, e in self.logged:
            tb = "".join(traceback.format_exception(e)) if e is not None else ""
            out.append(f"server logged: {str(msg) % args if args else msg}\n{tb}")
        return "\n".join(out)


class _InProcessApp:
    """One service's application set up as its process sets it up (``services.app_runner``),
    answering raw HTTP/1.1 bytes without a socket. Each request gets the protocol object of a
    new connection, made by the app's server as for an accepted TCP connection (aiohttp's
    RequestHandler, over a ``_Memory`` transport), and goes the way its bytes go in that
    object: ``data_received`` (aiohttp's HTTP parser, a 400 for what does not parse), then
    what its reading loop does with the first request parsed: a writer, the server's request
    factory, and ``_handle_request`` (the app's middlewares, router and handler; an
    HTTPException as its answer, any other exception a logged 500; the answer prepared and
    written). What it does not run is that loop itself (keep-alive, lingering over unread
    bodies, further requests on the connection)."""

    def __init__(self, runner: web.AppRunner, port: int) -> None:
        assert runner.server is not None
        self.runner, self.server, self.port = runner, runner.server, port
        self.log = _Tracebacks()

    async def request(self, raw: bytes) -> bytes:
        from aiohttp.http_writer import StreamWriter
        from aiohttp.web_protocol import ERROR, _ErrInfo

        self.log.logged.clear()  # what the server logs about this request only
        loop = asyncio.get_running_loop()
        t = _Memory(self.port)
        proto = self.server()
        proto.logger = self.log
        proto.transport = t  # connection_made's part (not its reading task, keep-alive timer)
        proto.data_received(raw)
        if not proto._messages:
            raise ConnectionError("the server's parser took no request from these bytes")
        message, payload = proto._messages.popleft()  # the first: the one we wait for
        handler = self.server.request_handler
        if isinstance(message, _ErrInfo):  # what start() does with a request that did not parse
            handler, message = proto._make_error_handler(message), ERROR
        writer = StreamWriter(proto, loop)
        request = self.server.request_factory(message, payload, proto, writer, _current(loop))
        try:
            async with asyncio.timeout(TIMEOUT_S):
                await proto._handle_request(request, None, handler)
        except TimeoutError:
            raise TimeoutError(f"no answer within {TIMEOUT_S} s") from None
        finally:
            proto.connection_lost(None)
        return bytes(t.out)


def _current(loop: asyncio.AbstractEventLoop) -> asyncio.Task[Any]:
    task = asyncio.current_task(loop)
    assert task is not None
    return task


def _parse_answer(data: bytes, method: str) -> tuple[int, str, bytes]:
    """(status, content type, body) of the one answer an in-process connection wrote: what
    the socket mode's http.client reads, without its slow header parser. ConnectionError
    when there is no whole answer (the server closed without one)."""
    head, sep, rest = data.partition(b"\r\n\r\n")
    if not sep:
        raise ConnectionError(f"closed without an answer: {data[:200]!r}")
    lines = head.decode("latin-1").split("\r\n")
    version, _, tail = lines[0].partition(" ")
    status = int(tail[:3]) if version.startswith("HTTP/1.") and tail[:3].isdigit() else 0
    if not 100 <= status <= 999:
        raise ConnectionError(f"not an HTTP/1.x status line: {lines[0][:200]!r}")
    headers = {}
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        if not colon:
            raise ConnectionError(f"malformed header line: {line[:200]!r}")
        headers[name.strip().lower()] = value.strip()
    if method == "HEAD" or status in (204, 304) or status < 200:
        body = b""
    elif headers.get("transfer-encoding", "").lower() == "chunked":
        body = _dechunk(rest)
    elif "content-length" in headers:
        n = int(headers["content-length"])
        if len(rest) < n:
            raise ConnectionError(f"answer cut short: {len(rest)} of {n} bytes")
        body = rest[:n]
    else:
        body = rest  # till the connection's end
    return status, headers.get("content-type", ""), body


def _dechunk(data: bytes) -> bytes:
    out, pos = bytearray(), 0
    while True:
        end = data.find(b"\r\n", pos)
        if end < 0:
            raise ConnectionError("chunked answer cut short")
        n = int(data[pos:end].split(b";")[0], 16)
        if n == 0:
            return bytes(out)
        out += data[end + 2 : end + 2 + n]
        pos = end + 2 + n + 2


class _RmrStandIn:
    """The RMR endpoint of a service built in process: sends are accepted (``routed``) or not
    and counted, nothing ever arrives (what the fuzz RIC's RMR gives the REST paths: e2term
    takes subscription requests and drops them, no E2 node being connected; no xApp takes
    A1 policies; every platform endpoint takes route tables)."""

    def __init__(self, routed: bool) -> None:
        from octoric.ric.rmr_endpoint import RmrCounters

        self.routed = routed
        self.counters = RmrCounters()

    def send(self, mtype: int, payload: bytes, sub_id: int = -1, meid: str = "",
             xid: bytes | None = None, retries: int = 3) -> bool:  # fmt: skip
        if self.routed:
            self.counters.sent += 1
        else:
            self.counters.send_failures += 1
        return self.routed

    def wh_send_to(self, target: str, mtype: int, payload: bytes) -> bool:
        return self.send(mtype, payload)

    async def receive(self) -> Any:
        await asyncio.Event().wait()  # nothing arrives

    def release(self, msg: Any) -> None:
        pass


class InProcessRic:
    """a1, submgr, appmgr and rtmgr built in this process by the functions their processes
    use (``services.platform_services``, ``platform_apps``, ``submgr_app``, ``a1_service``,
    ``a1_app``, ``app_runner``): each with its own real ``Sdl`` on ``redis_port`` (owned
    namespaces mirrored, watched), the run's API token, the route key; RMR replaced by
    ``_RmrStandIn``, submgr's route-manager calls answered by ``_route_hook``. Synchronous:
    every call runs the event loop until the answer, so background work (subscription
    timers, route rebuilds, SDL watches) runs too; the loop's exception handler keeps what
    no one awaited (``check_state`` reports it)."""

    def __init__(self, run_dir: Path, redis_port: int) -> None:
        from octoric.config import RicConfig
        from octoric.ric.services import RicRuntime

        self.rt = RicRuntime(RicConfig(), HOST, redis_port, str(run_dir), "tcp",
                             secrets.token_hex(32), auth.new_token())  # fmt: skip
        self.loop = asyncio.new_event_loop()
        self.loop.set_exception_handler(self._background_error)
        self.background: list[str] = []  # the first 20
        self.background_errors = 0
        self.route_calls = 0
        self.apps: dict[str, _InProcessApp] = {}
        self._stops: list[Callable[[], Awaitable[None]]] = []

    @property
    def token(self) -> str:
        return self.rt.api_token

    def __enter__(self) -> InProcessRic:
        try:
            self.loop.run_until_complete(self._start())
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.loop.set_exception_handler(None)  # tearing down: cancellations are no findings
        try:
            for stop in reversed(self._stops):
                self.loop.run_until_complete(stop())
            rest = asyncio.all_tasks(self.loop)
            for task in rest:
                task.cancel()
            if rest:
                self.loop.run_until_complete(asyncio.wait(rest))
            self.loop.run_until_complete(self.loop.shutdown_default_executor())
        finally:
            self.loop.close()

    async def _start(self) -> None:
        from octoric.ric import a1, appmgr, rtmgr, services, submgr

        rt, ports = self.rt, self.rt.ric

        async def sdl(name: str, owned: list[str]) -> Sdl:
            s, watch = await services._open_sdl(rt, name, owned)
            self._stops.append(lambda: services._close_sdl(s, watch))
            return s

        psdl = await sdl("platform", [appmgr.NS, rtmgr.NS])
        pep = _RmrStandIn(routed=True)
        am, rm = services.platform_services(rt, psdl, pep.wh_send_to)
        self.appmgr, self.rtmgr = am, rm  # for tests: their counters
        await rm.start()
        self._stops.append(rm.stop)
        am_app, rm_app = services.platform_apps(rt, psdl, am, rm, pep)

        ssdl = await sdl("submgr", [submgr.NS])
        sep = _RmrStandIn(routed=True)
        sm = submgr.Submgr(ssdl, sep, self._route_hook)  # type: ignore[arg-type]
        await sm.start()
        self._stops.append(sm.stop)
        sm_app = services.submgr_app(rt, ssdl, sm, sep)

        asdl = await sdl("a1", [a1.NS])
        aep = _RmrStandIn(routed=False)
        a1_app = services.a1_app(rt, asdl, services.a1_service(asdl, aep), aep)

        for name, app, port in (("a1", a1_app, ports.a1_rest_port),
                                ("submgr", sm_app, ports.submgr_rest_port),
                                ("appmgr", am_app, ports.appmgr_port),
                                ("rtmgr", rm_app, ports.rtmgr_rest_port)):  # fmt: skip
            runner = await services.app_runner(app)
            self._stops.append(runner.cleanup)
            self.apps[name] = _InProcessApp(runner, port)

    async def _route_hook(self, sub_id: int, endpoint: str, add: bool) -> bool:
        """submgr's route-manager call, answered as rtmgr answers the valid bodies submgr
        sends (host and port checked before) without reaching it: rtmgr's handle API is
        fuzzed on its own, and its route rebuilds would be most of submgr's run."""
        self.route_calls += 1
        return True

    def _background_error(self, loop: asyncio.AbstractEventLoop, ctx: dict[str, Any]) -> None:
        """The loop's exception handler: an exception nobody awaited (a background task's, a
        callback's) is a finding at the next state check."""
        e = ctx.get("exception")
        tb = "".join(traceback.format_exception(e)) if isinstance(e, BaseException) else ""
        if len(self.background) < 20:
            self.background.append(f"{ctx.get('message', 'exception')}: {ctx!r:.500}\n{tb}")
        self.background_errors += 1

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the services' loop (from outside it)."""
        return self.loop.run_until_complete(coro)

    async def request(self, name: str, raw: bytes, method: str) -> tuple[int, str, bytes]:
        """One raw request to one service's app; (status, content type, body)."""
        data = await self.apps[name].request(raw)
        await asyncio.sleep(0)  # back to the loop between requests, as a server goes
        return _parse_answer(data, method)

    async def call(self, name: str, method: str, path: str, body: Any) -> tuple[int, bytes]:
        data = b"" if body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json", **auth.bearer(self.token)}
        st, _, out = await self.request(name, _raw(method, path, data, headers), method)
        return st, out

    async def make_sentinels(self) -> None:
        await _make_sentinels(self.call)

    async def check_state(self) -> list[str]:
        """``check_state``'s checks through the in-process apps, and the exceptions raised
        in background tasks since the last check."""
        bad = await _check_state(self.call, list(self.apps))
        bad += [f"background: {b}" for b in self.background]
        self.background.clear()
        return bad


class _InProcessTarget(_Target):
    tb_limit = None  # an exception from the server's code: down to where it was raised

    def __init__(self, api: Api, ric: InProcessRic) -> None:
        self.name, self.ric = api.name, ric

    async def request(self, raw: bytes, method: str) -> tuple[int, str, bytes]:
        return await self.ric.request(self.name, raw, method)

    async def check(self) -> list[str]:
        return await self.ric.check_state()

    def server_traceback(self) -> str:
        return self.ric.apps[self.name].log.text()


def run(n: int, seed: int, only: str | None = None,
        progress: Callable[[str, int, int], None] | None = None,
        in_process: bool = False) -> list[Report]:  # fmt: skip
    """A private Redis and RIC, the sentinels, then ``n`` requests per API (``in_process``:
    the services built in this process, see the module docstring)."""
    logging.disable(logging.CRITICAL)
    if in_process:
        return _run_in_process(n, seed, only, progress)
    from octoric.ric.stack import running_ric

    reports = []
    with tempfile.TemporaryDirectory(prefix="octoric-ric-fuzz-") as d, running_ric(Path(d)) as st:
        ric = st.rt.ric
        ports = {"a1": ric.a1_rest_port, "submgr": ric.submgr_rest_port,
                 "appmgr": ric.appmgr_port, "rtmgr": ric.rtmgr_rest_port}  # fmt: skip
        token = st.rt.api_token
        make_sentinels(ports, token)
        for api in _selected(only):
            reports.append(fuzz(api, ports, token, n, seed, _say(progress, api.name)))
    return reports


def _selected(only: str | None) -> list[Api]:
    return [a for a in apis() if not only or a.name == only]


def _say(progress: Callable[[str, int, int], None] | None, name: str) -> Callable[[int, int], None]:
    def say(i: int, f: int) -> None:
        if progress is not None:
            progress(name, i, f)

    return say


def _run_in_process(n: int, seed: int, only: str | None,
                    progress: Callable[[str, int, int], None] | None) -> list[Report]:  # fmt: skip
    from octoric.redis_server import RedisServer

    reports = []
    # the run folder (rtmgr writes its seed table there on every change) in memory if we can
    shm = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
    with (
        tempfile.TemporaryDirectory(prefix="octoric-ric-fuzz-", dir=shm) as d,
        RedisServer() as redis,
        InProcessRic(Path(d), redis.port) as ric,
    ):
        ric.run(ric.make_sentinels())
        for api in _selected(only):
            target = _InProcessTarget(api, ric)
            say = _say(progress, api.name)
            reports.append(ric.run(_fuzz(api, target, ric.token, n, seed, say)))
    return reports


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m octoric.ric.fuzz_rest")
    ap.add_argument("--inputs", type=int, default=100_000, help="requests per API")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--only", choices=[a.name for a in apis()])
    ap.add_argument(
        "--in-process", action="store_true", help="the services in this process (see the docstring)"
    )
    args = ap.parse_args(argv)
    t0 = time.monotonic()

    def progress(name: str, i: int, failures: int) -> None:
        print(f"[fuzz] {name}: {i:,} requests, {failures} findings, "
              f"{time.monotonic() - t0:.0f} s", file=sys.stderr, flush=True)  # fmt: skip

    bad = 0
    for rep in run(args.inputs, args.seed, args.only, progress, args.in_process):
        rate = rep.inputs / rep.seconds if rep.seconds else 0.0
        print(f"{rep.name}: {rep.inputs:,} requests in {rep.seconds:.0f} s ({rate:,.0f}/s), "
              f"statuses {dict(sorted(rep.by_status.items()))}, state checks {rep.checks}, "
              f"findings {rep.failures}")  # fmt: skip
        for f in rep.findings:
            print("  FINDING:", f)
        bad += bool(rep.failures)
    print(f"in {time.monotonic() - t0:.0f} s")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
