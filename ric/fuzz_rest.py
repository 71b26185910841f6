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
xApp, its route in rtmgr's table) is still there. Prints a line per API; exit 1 on any
finding.
"""

from __future__ import annotations

import argparse
import http.client
import json
import random
import socket
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from octoric.contracts import auth
from octoric.fuzz_inputs import deep_json, junk, junk_bytes, mutate_json, odd_path

METHODS = ["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"]
CHECK_EVERY = 5_000
TIMEOUT_S = 10.0
FUZZ_TID = 31001  # the policy type the fuzzer's valid requests create and delete
SENTINEL_TID = 31999  # made once at the start, must survive the run
SENTINEL_XAPP = "fuzz-sentinel"
SENTINEL_RMR = "127.0.0.1:4997"


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
    a1 = f"/A1-P/v2/policytypes/{FUZZ_TID}"
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
            ("PUT", a1, _type_body(FUZZ_TID)), ("GET", "/A1-P/v2/policytypes", None),
            ("GET", a1, None), ("DELETE", a1, None),
            ("PUT", f"{a1}/policies/p1", {"x": 5, "s": "abc"}), ("GET", f"{a1}/policies", None),
            ("GET", f"{a1}/policies/p1", None), ("GET", f"{a1}/policies/p1/status", None),
            ("DELETE", f"{a1}/policies/p1", None), ("GET", "/A1-P/v2/healthcheck", None),
        ], ["/A1-P/v2/policytypes/{x}", "/A1-P/v2/policytypes/{x}/policies/{x}",
            "/A1-P/v2/policytypes/{x}/policies/{x}/status", "/A1-P/v2/{x}", "/metrics",
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


def _call(port: int, method: str, path: str, token: str, body: Any = None) -> tuple[int, bytes]:
    c = _Conn(port)
    try:
        data = b"" if body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json", **auth.bearer(token)}
        st, _, out = c.request(_raw(method, path, data, headers), method)
        return st, out
    finally:
        c.close()


def make_sentinels(ports: dict[str, int], token: str) -> None:
    """State the fuzzing must not lose: an A1 type and policy, a registered xApp (its route)."""
    tid = f"/A1-P/v2/policytypes/{SENTINEL_TID}"
    for method, port, path, body in (
        ("PUT", ports["a1"], tid, _type_body(SENTINEL_TID)),
        ("PUT", ports["a1"], f"{tid}/policies/sentinel", {"x": 1}),
        ("POST", ports["appmgr"], "/ric/v1/register", _register_body(SENTINEL_XAPP, SENTINEL_RMR)),
    ):  # fmt: skip
        st, out = _call(port, method, path, token, body)
        if st >= 300:
            raise RuntimeError(f"fuzz set-up: {method} {path} answered {st}: {out[:300]!r}")


def check_state(ports: dict[str, int], token: str) -> list[str]:
    """What is wrong with the RIC after fuzzing (empty: nothing)."""
    bad = []
    for name, port in ports.items():
        try:
            st, _ = _call(port, "GET", "/ric/v1/health/alive", token)
        except OSError as e:
            bad.append(f"{name}: health check failed: {e!r}")
            continue
        if st != 200:
            bad.append(f"{name}: health check answered {st}")
    tid = f"/A1-P/v2/policytypes/{SENTINEL_TID}"
    for path in (tid, f"{tid}/policies/sentinel"):
        st, out = _call(ports["a1"], "GET", path, token)
        if st != 200:
            bad.append(f"a1: sentinel {path} answered {st}: {out[:200]!r}")
    st, out = _call(ports["appmgr"], "GET", "/ric/v1/xapps", token)
    if st != 200 or SENTINEL_XAPP.encode() not in out:
        bad.append(f"appmgr: the sentinel xApp is no longer registered ({st})")
    st, out = _call(ports["rtmgr"], "GET", "/ric/v1/routes", token)
    if st != 200 or SENTINEL_RMR.encode() not in out:
        bad.append(f"rtmgr: the sentinel xApp's route is gone ({st})")
    return bad


def fuzz(api: Api, ports: dict[str, int], token: str, n: int, seed: int,
         progress: Callable[[int, int], None] | None = None) -> Report:  # fmt: skip
    rng = random.Random(seed)
    rep = Report(api.name)
    conn = _Conn(ports[api.name])

    def finding(what: str) -> None:
        rep.failures += 1
        if len(rep.findings) < 20:
            rep.findings.append(what)
            print(f"[fuzz] {api.name} FINDING: {what}", file=sys.stderr, flush=True)
        if progress is not None:
            progress(rep.inputs, rep.failures)

    try:
        for i in range(n):
            method, path, body, headers = request_for(rng, api, token)
            rep.inputs += 1
            try:
                st, ctype, out = conn.request(_raw(method, path, body, headers), method)
                rep.by_status[st] = rep.by_status.get(st, 0) + 1
                if not (200 <= st < 500 or st == 503):
                    raise AssertionError(f"status {st}: {out[:300]!r}")
                if ctype.startswith("application/json") and out and method != "HEAD":
                    json.loads(out)
            except Exception as e:
                conn.close()
                finding(f"{method} {path[:200]!r} body={body[:200]!r}: {e!r}\n"
                        + traceback.format_exc(limit=2))  # fmt: skip
            if (i + 1) % CHECK_EVERY == 0 or i + 1 == n:
                rep.checks += 1
                for what in check_state(ports, token):
                    finding(f"after {i + 1} requests: {what}")
            if progress is not None and (i + 1) % 100_000 == 0:
                progress(i + 1, rep.failures)
    finally:
        conn.close()
    return rep


def run(n: int, seed: int, only: str | None = None,
        progress: Callable[[str, int, int], None] | None = None) -> list[Report]:  # fmt: skip
    """A private Redis and RIC, the sentinels, then ``n`` requests per API."""
    import logging

    from octoric.ric.stack import running_ric

    logging.disable(logging.CRITICAL)
    reports = []
    with tempfile.TemporaryDirectory(prefix="octoric-ric-fuzz-") as d, running_ric(Path(d)) as st:
        ric = st.rt.ric
        ports = {"a1": ric.a1_rest_port, "submgr": ric.submgr_rest_port,
                 "appmgr": ric.appmgr_port, "rtmgr": ric.rtmgr_rest_port}  # fmt: skip
        token = st.rt.api_token
        make_sentinels(ports, token)
        for api in apis():
            if only and api.name != only:
                continue

            def say(i: int, f: int, name: str = api.name) -> None:
                if progress is not None:
                    progress(name, i, f)

            reports.append(fuzz(api, ports, token, n, seed, say))
    return reports


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m octoric.ric.fuzz_rest")
    ap.add_argument("--inputs", type=int, default=100_000, help="requests per API")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--only", choices=[a.name for a in apis()])
    args = ap.parse_args(argv)
    t0 = time.monotonic()

    def progress(name: str, i: int, failures: int) -> None:
        print(f"[fuzz] {name}: {i:,} requests, {failures} findings, "
              f"{time.monotonic() - t0:.0f} s", file=sys.stderr, flush=True)  # fmt: skip

    bad = 0
    for rep in run(args.inputs, args.seed, args.only, progress):
        print(f"{rep.name}: {rep.inputs:,} requests, statuses {dict(sorted(rep.by_status.items()))}"
              f", state checks {rep.checks}, findings {rep.failures}")  # fmt: skip
        for f in rep.findings:
            print("  FINDING:", f)
        bad += bool(rep.failures)
    print(f"in {time.monotonic() - t0:.0f} s")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
