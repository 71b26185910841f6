"""Notifications to application servers (issue #12): webhook subscriptions over REST (token,
strict validation, SDL), signed deliveries verified by the stdlib client, retries, expiry of
dead receivers, a slow receiver that never slows detection, and the SSE stream with resume.
Real HTTP on loopback: the xApp's own HttpServer and the client library's receiver."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
from ricsdl.syncstorage import SyncStorage
from testkit.rest import wait_until

from octoric.contracts import auth
from octoric.contracts.ho_event import HoEvent
from octoric.redis_server import free_port
from octoric.xapps.base.http import HttpServer
from octoric.xapps.base.sdl import SdlStore
from octoric.xapps.handover import client
from octoric.xapps.handover.notify import Notifier
from octoric.xapps.handover.notify.webhooks import DeliveryConfig

pytestmark = pytest.mark.integration
TOKEN = "t" * 32


def ev(ue: int, kind: str, n: int) -> dict[str, Any]:
    return HoEvent(ue, kind, 1_800_000_000_000 + n, "00f110:1:1:0", "gnb_a", "gnb_b",
                   "00f110:a", "00f110:b", id=f"{ue}:{n}:{kind}", path="rc").to_json()  # fmt: skip


LOOPBACK = ("127.0.0.0/8",)


class Env:
    def __init__(self, sdl: SdlStore, cfg: DeliveryConfig) -> None:
        self.http = HttpServer("127.0.0.1", free_port(), token=TOKEN)
        self.notify = Notifier(sdl, cfg)
        self.notify.routes(self.http)
        self.http.start()
        self.base = f"http://127.0.0.1:{self.http.port}/handover/v1"

    def call(self, method: str, path: str, body: Any = None, token: str = TOKEN) -> tuple[int, Any]:
        import urllib.error
        import urllib.request

        data = (
            None if body is None else body if isinstance(body, bytes) else json.dumps(body).encode()
        )
        req = urllib.request.Request(self.base + path, data, auth.bearer(token), method=method)
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        try:
            with opener.open(req, timeout=5) as r:
                raw = r.read()
                return r.status, json.loads(raw) if raw else None
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"null")

    def close(self) -> None:
        self.notify.stop()
        self.http.stop()


@pytest.fixture
def sdl() -> SdlStore:
    return SdlStore("handover", storage=SyncStorage(fake_db_backend="dict"))


@pytest.fixture
def env(sdl: SdlStore) -> Iterator[Env]:
    # the receivers here listen on loopback: allow-listed, as an operator would (#43)
    e = Env(sdl, DeliveryConfig(timeout_s=1.0, max_retries=3, backoff_s=0.02, expire_after_s=0.5,
                                allow=LOOPBACK))  # fmt: skip
    yield e
    e.close()


def test_subscriptions_need_the_token_and_valid_json(env: Env) -> None:
    recv = client.WebhookReceiver("s" * 32, lambda e: None)
    try:
        body = {"url": recv.url, "secret": "s" * 32}
        assert env.call("POST", "/subscriptions", body, token="")[0] == 401
        assert env.call("POST", "/subscriptions", body, token="wrong")[0] == 401
        assert env.call("GET", "/events", token="")[0] == 401
        bad = [
            (b"{", "bad_json"), ([], "not_object"), ({"url": "ftp://x/"}, "bad_url"),
            ({"url": "http:///nohost"}, "bad_url"),
            ({"url": recv.url, "colour": 1}, "unknown_field"),
            ({"url": recv.url, "secret": "short"}, "bad_secret"),
            ({"url": recv.url, "filters": {"events": ["end"]}}, "bad_filters"),
            ({"url": recv.url, "filters": {"ues": ["1"]}}, "bad_filters"),
            ({"url": recv.url, "filters": {"ues": list(range(2000))}}, "too_large"),
            ({"url": recv.url, "ttl_s": -1}, "bad_ttl"),
        ]  # fmt: skip
        for b, reason in bad:
            code, answer = env.call("POST", "/subscriptions", b)
            assert (code, answer["reason"]) == (400, reason), (b, answer)
        assert env.notify.rejected["bad_url"] == 2 and env.notify.rejected["bad_filters"] == 2
        code, made = env.call("POST", "/subscriptions", body)
        assert code == 201 and made["secret"] == "s" * 32
        code, listed = env.call("GET", "/subscriptions")
        assert code == 200 and [s["id"] for s in listed] == [made["id"]]
        assert "secret" not in json.dumps(listed) and "secret" not in json.dumps(
            env.call("GET", f"/subscriptions/{made['id']}")[1]
        )
        generated = env.call("POST", "/subscriptions", {"url": recv.url})[1]["secret"]
        assert len(generated) == 64  # none given: one is made (and shown once)
        assert env.call("DELETE", f"/subscriptions/{made['id']}")[0] == 204
        assert env.call("DELETE", f"/subscriptions/{made['id']}")[0] == 404
    finally:
        recv.close()


def test_signed_deliveries_in_order_filtered_and_kept_across_restart(
    env: Env, sdl: SdlStore
) -> None:
    got: list[dict[str, Any]] = []
    recv = client.WebhookReceiver("k" * 32, got.append)
    try:
        body = {"url": recv.url, "secret": "k" * 32, "filters": {"ues": [7]}}
        assert env.call("POST", "/subscriptions", body)[0] == 201
        for i in range(20):
            env.notify.offer(ev(7 if i % 2 else 8, "start" if i % 4 < 2 else "complete", i))
        wait_until(lambda: len(got) == 10, 5, "UE 7's ten events")
        assert [e["id"] for e in got] == [f"7:{i}:{'start' if i % 4 < 2 else 'complete'}"
                                          for i in range(1, 20, 2)]  # fmt: skip
        assert recv.rejected == 0
        # the worker process reports its figures every half second
        wait_until(lambda: env.notify.deliverer.latency.count == 10, 3, "the worker's report")
        # a restart: the subscription comes back from SDL and delivers again
        env.notify.stop()
        again = Notifier(sdl, DeliveryConfig(timeout_s=1.0, allow=LOOPBACK))
        try:
            assert again.restore() == 1
            again.offer(ev(7, "failure", 99))
            wait_until(lambda: len(got) == 11, 5, "a delivery after the restart")
            assert got[-1]["event"] == "failure"
        finally:
            again.stop()
    finally:
        recv.close()


class _Flaky(BaseHTTPRequestHandler):
    """Answers 500 to the first ``fail`` deliveries, sleeps ``delay`` s, records the rest."""

    fail = 0
    delay = 0.0
    got: ClassVar[list[bytes]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        time.sleep(type(self).delay)
        cls = type(self)
        if cls.fail > 0:
            cls.fail -= 1
            self.send_response(500)
        else:
            cls.got.append(body)
            self.send_response(204)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *a: Any) -> None:
        pass


def _flaky_server(fail: int, delay: float) -> ThreadingHTTPServer:
    handler = type("H", (_Flaky,), {"fail": fail, "delay": delay, "got": []})
    srv = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def test_retries_expiry_and_a_slow_receiver_never_blocks(env: Env, sdl: SdlStore) -> None:
    flaky = _flaky_server(fail=2, delay=0.0)
    slow = _flaky_server(fail=0, delay=1.5)
    try:
        for srv in (flaky, slow):
            url = f"http://127.0.0.1:{srv.server_address[1]}/hook"
            assert env.call("POST", "/subscriptions", {"url": url})[0] == 201
        dead_port = free_port()  # nothing listens: every delivery fails
        code, dead = env.call("POST", "/subscriptions", {"url": f"http://127.0.0.1:{dead_port}/"})
        assert code == 201
        t0 = time.perf_counter()
        for i in range(50):
            env.notify.offer(ev(1, "start", i))
        per_offer_ms = (time.perf_counter() - t0) * 1000 / 50
        assert per_offer_ms < 1.0, per_offer_ms  # the slow and dead receivers cost nothing here
        handler: Any = flaky.RequestHandlerClass
        wait_until(lambda: len(handler.got) == 50, 10, "the flaky receiver's 50 events")
        wait_until(lambda: env.notify.deliverer.counters["attempts_failed"] >= 2, 3,
                   "the two 500s, retried")  # fmt: skip
        # the dead one expires (failing for longer than expire_after_s), from SDL too
        wait_until(lambda: dead["id"] not in env.notify.subs, 15, "the dead subscription expired")
        assert env.notify.counters["expired_dead_receiver"] == 1
        assert sdl.get(f"hook.{dead['id']}") is None
        assert len(env.notify.subs) == 2
    finally:
        flaky.shutdown()
        slow.shutdown()


def test_event_stream_with_filters_and_resume(env: Env) -> None:
    env.notify.stream.heartbeat_s = 0.2  # a stopped client notices within that
    c = client.SseClient(f"{env.base}/events?ue=5", token=TOKEN, timeout_s=5)
    got: list[dict[str, Any]] = []

    def follow() -> None:
        for e in c.events(reconnect_s=0.2):
            got.append(e)

    t = threading.Thread(target=follow, daemon=True)
    t.start()
    wait_until(lambda: env.notify.stream.clients == 1, 5, "the stream client")
    for i in range(6):
        env.notify.offer(ev(5 if i < 4 else 6, "start", i))
    wait_until(lambda: len(got) == 4, 5, "UE 5's events")
    assert c.last_id is not None
    # a reconnect with Last-Event-ID gets what it missed while away
    c.stop()
    t.join(10)
    missed = [ev(5, "complete", 10 + i) for i in range(3)]
    for e in missed:
        env.notify.offer(e)
    c2 = client.SseClient(f"{env.base}/events?ue=5", token=TOKEN, timeout_s=5)
    c2.last_id = c.last_id
    got2: list[dict[str, Any]] = []

    def follow2() -> None:
        for e in c2.events(reconnect_s=0.2):
            got2.append(e)
            if len(got2) == 3:
                c2.stop()

    t2 = threading.Thread(target=follow2, daemon=True)
    t2.start()
    t2.join(10)
    assert [e["id"] for e in got2] == [e["id"] for e in missed]


def test_the_client_library_stands_alone(tmp_path: Path) -> None:
    """A server vendors client.py: it imports with nothing of octoric on the path."""
    src = Path(client.__file__).read_text()
    (tmp_path / "ho_client.py").write_text(src)
    out = subprocess.run(
        [sys.executable, "-I", "-c", "import sys; sys.path.insert(0, '.'); import ho_client; "
         "print(ho_client.dash_h_bitrate(4000, 1000, True, 6.0))"],
        cwd=tmp_path, capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert out.returncode == 0 and out.stdout.strip() == "4000", out.stderr


def test_client_verify_state_and_adaptations() -> None:
    body = json.dumps(ev(3, "start", 1)).encode()
    ts = f"{time.time():.3f}"
    headers = {client.SIG_HEADER: client.sign("sec", ts, body), client.TS_HEADER: ts}
    assert client.verify("sec", headers, body)["ue"] == 3
    for bad_headers, bad_body in [
        ({**headers, client.SIG_HEADER: "sha256=00"}, body),  # forged
        (headers, body + b" "),  # tampered
        ({client.SIG_HEADER: client.sign("sec", "1000", body), client.TS_HEADER: "1000"}, body),
        ({}, body),  # unsigned
    ]:
        with pytest.raises(client.EventError):
            client.verify("sec", bad_headers, bad_body)
    st = client.HandoverState()
    st.bind(("10.0.0.1", 5000, "10.45.0.3", 6000, "udp"), 3)
    flow = ("10.0.0.1", 5000, "10.45.0.3", 6000, "udp")
    assert st.on_event(ev(3, "start", 1)) and not st.on_event(ev(3, "start", 1))  # same id
    assert st.of_flow(flow) is not None and st.of_flow(flow).in_handover  # type: ignore[union-attr]
    done = {**ev(3, "complete", 2), "started_ms": 1_800_000_000_001}
    st.on_event(done)
    assert not st.ues[3].in_handover and st.ues[3].count == 1
    assert st.handover_since(flow, 1_800_000_000_000) and not st.handover_since(flow, 2**62)
    # BBR-H Eq. 2: a pre-handover ACK's sample uses RT_prop, not the frozen interval
    assert client.bbr_h_interval_us(120_000, 100, 150, 20_000) == 20_000
    assert client.bbr_h_interval_us(120_000, 200, 150, 20_000) == 120_000
    assert client.bbr_h_delivery_rate(25_000, 120_000, 100, 150, 20_000) == 10e6
    # DASH-H: type A keeps, types B/C/D let the ABR decision through
    assert client.dash_h_bitrate(4000, 1000, True, 6.0) == 4000
    assert client.dash_h_bitrate(4000, 1000, True, 1.0) == 1000
    assert client.dash_h_bitrate(4000, 1000, False, 6.0) == 1000
    assert client.dash_h_bitrate(1000, 4000, True, 6.0) == 4000


def test_a_dead_delivery_worker_is_replaced(env: Env) -> None:
    """Deliveries run in a child process; killed, it is started again with every
    subscription, and deliveries go on (counted ``worker_restarts``)."""
    import os
    import signal

    from octoric.xapps.handover.notify.worker import RemoteDeliverer

    got: list[dict[str, Any]] = []
    recv = client.WebhookReceiver("r" * 32, got.append)
    try:
        assert env.call("POST", "/subscriptions", {"url": recv.url, "secret": "r" * 32})[0] == 201
        d = env.notify.deliverer
        assert isinstance(d, RemoteDeliverer)
        env.notify.offer(ev(2, "start", 1))
        wait_until(lambda: len(got) == 1, 5, "a delivery")
        old = d._proc.pid
        os.kill(old, signal.SIGKILL)
        wait_until(lambda: d._proc.pid != old and d._proc.is_alive(), 10, "a new worker")
        wait_until(lambda: d.counters["worker_restarts"] == 1, 5, "the restart counted")
        env.notify.offer(ev(2, "complete", 2))
        wait_until(lambda: len(got) == 2, 5, "a delivery from the new worker")
    finally:
        recv.close()
