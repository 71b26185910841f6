"""Mutation fuzzer for the xApps' REST APIs (issue #17: bad input gets a 4xx, never a 5xx, a
crash or lost state).

    .venv/bin/python -m octoric.xapps.fuzz_rest --inputs 10000000 --seed 1

Each xApp (OCC, handover) is built in this process (an in-memory SDL, no RMR) and its HTTP
dispatcher is called directly, as its server does for every request: valid requests of every
route (with and without the API token), then mutated ones: JSON bodies with fields dropped,
retyped, deepened, oversized or replaced by random bytes; paths with random segments, odd
characters and absolute-form targets; random methods and headers. A request passes when the
answer is a 2xx-4xx, or 503 (a refusal by design: the stream's client limit, a starting
xApp), with a JSON body where it says JSON; anything else (a 500, an exception, a body that
does not parse) is a finding. Prints a line per xApp; exit 1 on any finding.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from octoric.contracts import auth
from octoric.fuzz_inputs import deep_json, junk_bytes, mutate_json, odd_path
from octoric.xapps.base.http import HttpServer

TOKEN = "fuzz-" + "t" * 27
METHODS = ["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD"]


@dataclass
class Report:
    name: str
    inputs: int = 0
    by_status: dict[int, int] = field(default_factory=dict)
    findings: list[str] = field(default_factory=list)  # the first 20, with tracebacks
    failures: int = 0  # every finding


@dataclass
class Target:
    name: str
    http: HttpServer
    valid: list[tuple[str, str, dict[str, Any] | None]]  # method, path, JSON body
    paths: list[str]
    close: Callable[[], None] = lambda: None


def _targets() -> list[Target]:
    from ricsdl.syncstorage import SyncStorage

    from octoric.redis_server import free_port
    from octoric.xapps.base.sdl import SdlStore
    from octoric.xapps.handover.xapp import HandoverXapp
    from octoric.xapps.occ.xapp import OccXapp

    out = []
    occ = OccXapp(
        free_port(), free_port(), sdl=SdlStore("occ", SyncStorage(fake_db_backend="dict"))
    )
    occ.shell.http.token = TOKEN
    occ.shell._ready.set()
    flow = {"id": "f1", "ue": 1000, "address": "127.0.0.1:9", "format": "json"}
    out.append(Target("occ", occ.shell.http, [
        ("POST", "/occ/v1/flows", flow), ("GET", "/occ/v1/flows", None),
        ("GET", "/occ/v1/flows?limit=20&after=f1", None),
        ("GET", "/occ/v1/flows/f1", None), ("DELETE", "/occ/v1/flows/f1", None),
        ("GET", "/occ/v1/ues/1000", None), ("GET", "/occ/v1/status", None),
        ("POST", "/ric/v1/subscriptions/response",
         {"SubscriptionId": "1", "SubscriptionInstances": []}),
    ], ["/occ/v1/flows", "/occ/v1/flows/{x}", "/occ/v1/ues/{x}", "/occ/v1/status", "/metrics",
        "/ric/v1/health/ready", "/ric/v1/subscriptions/response"]))  # fmt: skip
    ho = HandoverXapp(free_port(), free_port(),
                      sdl=SdlStore("handover", SyncStorage(fake_db_backend="dict")))  # fmt: skip
    ho.shell.http.token = TOKEN
    ho.shell._ready.set()
    sub = {"url": "http://127.0.0.1:9/h", "secret": "s" * 32, "filters": {"ues": [1]}}
    out.append(Target("handover", ho.shell.http, [
        ("POST", "/handover/v1/subscriptions", sub), ("GET", "/handover/v1/subscriptions", None),
        ("GET", "/handover/v1/status", None), ("GET", "/handover/v1/ues", None),
        ("GET", "/handover/v1/events?ue=1", None),
    ], ["/handover/v1/subscriptions", "/handover/v1/subscriptions/{x}", "/handover/v1/events",
        "/handover/v1/status", "/handover/v1/ues", "/metrics"], ho.notify.stop))  # fmt: skip
    return out


def _request(rng: random.Random, t: Target) -> tuple[str, str, bytes, dict[str, str]]:
    method, path, body = rng.choice(t.valid)
    headers = auth.bearer(TOKEN) if rng.random() < 0.8 else (
        {"Authorization": rng.choice(["Bearer", "Bearer x", "Basic ?", "bearer " + TOKEN])}
    )  # fmt: skip
    r = rng.random()
    data = b"" if body is None else json.dumps(body).encode()
    if r < 0.15:
        return method, path, data, headers  # valid
    if r < 0.6 and body is not None:
        data = mutate_json(rng, body)
    elif r < 0.65:
        data = junk_bytes(rng)
    elif r < 0.7:  # nesting far past any parser's recursion limit
        data = deep_json(rng)
    if rng.random() < 0.3:
        method = rng.choice(METHODS)
    if rng.random() < 0.3:
        path = odd_path(rng, t.paths)
    if rng.random() < 0.1:
        headers["Last-Event-ID"] = rng.choice(["1", "-5", "x", "9" * 40])
    return method, path, data, headers


def fuzz(
    t: Target, n: int, seed: int, progress: Callable[[int, int], None] | None = None
) -> Report:
    """``n`` requests; ``progress(done, findings)`` every 100,000 and at each finding, so a
    long run that is stopped still says what it found."""
    rng = random.Random(seed)
    rep = Report(t.name)
    for i in range(n):
        method, path, body, headers = _request(rng, t)
        rep.inputs += 1
        try:
            resp = t.http.dispatch(method, path, body, headers)
            st = resp.status
            rep.by_status[st] = rep.by_status.get(st, 0) + 1
            ok = 200 <= st < 500 or st == 503
            if ok and resp.stream is None and resp.content_type == "application/json" and resp.body:
                # orjson: strict RFC 8259 (json.loads would let NaN through) and ~5x faster on
                # a 4096-flow listing, which was most of the fuzzer's own time
                orjson.loads(resp.body)
            if not ok:
                raise AssertionError(f"status {st}: {resp.body[:300]!r}")
        except Exception as e:
            rep.failures += 1
            if len(rep.findings) < 20:
                rep.findings.append(f"{method} {path[:200]!r} body={body[:200]!r}: {e!r}\n"
                                    + traceback.format_exc(limit=3))  # fmt: skip
                print(rep.findings[-1], file=sys.stderr, flush=True)
            if progress is not None:
                progress(i + 1, rep.failures)
        if progress is not None and i % 100_000 == 0:
            progress(i, rep.failures)
    return rep


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m octoric.xapps.fuzz_rest")
    ap.add_argument("--inputs", type=int, default=100_000, help="requests per xApp")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--only", choices=("occ", "handover"))
    args = ap.parse_args(argv)
    import logging

    logging.disable(logging.CRITICAL)  # bad requests are logged by design; quiet here
    bad = 0
    for t in _targets():
        if args.only and t.name != args.only:
            continue
        t0 = time.monotonic()

        def progress(i: int, failures: int, name: str = t.name) -> None:
            print(f"[fuzz] {name}: {i:,} requests, {failures} findings", file=sys.stderr,
                  flush=True)  # fmt: skip

        try:
            rep = fuzz(t, args.inputs, args.seed, progress)
        finally:
            t.close()
        dt = time.monotonic() - t0
        print(f"{rep.name}: {rep.inputs:,} requests in {dt:.0f} s, statuses "
              f"{dict(sorted(rep.by_status.items()))}, findings {rep.failures}")  # fmt: skip
        for f in rep.findings:
            print("  FINDING:", f)
        bad += bool(rep.findings)
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
