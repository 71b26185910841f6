"""The REST attacks a hostile local process made on ``octoric run`` (issue #43), replayed.

Before: a process of another user (``nobody``) POSTed forged subscription failures to the
xApps' ``/ric/v1/subscriptions/response`` (no token needed: they subscribed again and again);
every listener answered any Host header, so a DNS-rebinding page read ``/api/state`` and the
RIC's lists from a browser; and with the token, a handover webhook POSTed to Redis on
127.0.0.1. Now each is refused and counted, and the legitimate path still works: octoric's
submgr's callback (it carries the token), loopback Host names, an allow-listed webhook.

The attacker runs as ``nobody`` (privileges dropped in its subprocess), so these tests need
root, as here and in CI; they skip saying so otherwise.
"""

from __future__ import annotations

import asyncio
import grp
import json
import os
import pwd
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from ricsdl.syncstorage import SyncStorage
from testkit.rest import wait_until

from octoric.config import RunConfig
from octoric.contracts import auth
from octoric.contracts.ho_event import HoEvent
from octoric.deploy.dashboard import DashboardComponent
from octoric.redis_server import RedisServer, free_port
from octoric.ric.stack import LoopThread, RicStack, free_pair
from octoric.ric.submgr import Submgr
from octoric.supervisor import RunContext
from octoric.xapps.base.http import HttpServer, Response
from octoric.xapps.base.sdl import SdlStore
from octoric.xapps.base.shell import CALLBACK_AUTH_ENV, XappShell
from octoric.xapps.base.subscription import SubscriptionResponse
from octoric.xapps.handover import client
from octoric.xapps.handover.notify import Notifier
from octoric.xapps.handover.notify.subscriptions import parse
from octoric.xapps.handover.notify.webhooks import DeliveryConfig

pytestmark = [pytest.mark.integration]
OPEN = urllib.request.build_opener(urllib.request.ProxyHandler({}))
EVIL = "evil.example"

# the attacker: one HTTP request, its status and body printed as JSON (standard library only)
ATTACK = """
import json, sys, urllib.error, urllib.request
method, url, headers, body = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4]
req = urllib.request.Request(url, body.encode() or None, headers, method=method)
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
try:
    with opener.open(req, timeout=5) as r:
        print(json.dumps([r.status, r.read().decode()]))
except urllib.error.HTTPError as e:
    print(json.dumps([e.code, e.read().decode()]))
"""


def as_nobody(method: str, url: str, headers: dict[str, str], body: Any = None) -> tuple[int, str]:
    """One request from a process of user ``nobody`` (group ``nogroup``)."""
    if os.geteuid() != 0:
        pytest.skip("the attacker runs as user nobody: dropping to it needs root (CI runs as root)")
    user = pwd.getpwnam("nobody")
    try:
        gid = grp.getgrnam("nogroup").gr_gid
    except KeyError:
        gid = user.pw_gid

    def drop() -> None:
        os.setgroups([])
        os.setgid(gid)
        os.setuid(user.pw_uid)

    # the system's interpreter: nobody may not be able to enter the project's venv
    python = shutil.which("python3", path="/usr/bin:/bin") or sys.executable
    data = "" if body is None else json.dumps(body)
    out = subprocess.run(
        [python, "-c", ATTACK, method, url, json.dumps(headers), data], preexec_fn=drop,
        capture_output=True, text=True, timeout=30, cwd="/", env={"PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    code, text = json.loads(out.stdout)
    return int(code), str(text)


def get(
    url: str, host: str | None = None, headers: dict[str, str] | None = None
) -> tuple[int, str]:
    hdrs = {**(headers or {}), **({"Host": host} if host else {})}
    try:
        with OPEN.open(urllib.request.Request(url, headers=hdrs), timeout=5) as r:
            return int(r.status), r.read().decode()
    except urllib.error.HTTPError as e:
        return int(e.code), e.read().decode()


def metric(text: str, name: str) -> float:
    """One sample's value from Prometheus text (0 when absent)."""
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


# --- 1. the subscription-response callback --------------------------------------------------
FORGED = {"SubscriptionId": "occ-kpm-1", "SubscriptionInstances": [
    {"XappEventInstanceId": 1, "E2EventInstanceId": 0, "ErrorCause": "forged failure",
     "ErrorSource": "SUBMGR"}]}  # fmt: skip
INSTANCES = [{"XappEventInstanceId": 1, "E2EventInstanceId": 7}]


@pytest.fixture
def shell(
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[tuple[XappShell, list[SubscriptionResponse]]]:
    """An xApp's HTTP side as octoric run starts it (the run's token, callbacks want it)."""
    monkeypatch.delenv(CALLBACK_AUTH_ENV, raising=False)
    sdl = SdlStore("occ", storage=SyncStorage(fake_db_backend="dict"))
    sh = XappShell("occ", free_pair(), free_port(), sdl=sdl)
    got: list[SubscriptionResponse] = []
    sh.on_subscription_response = got.append
    sh.start_http()
    yield sh, got
    sh.http.stop()


def _submgr_notifies(port: int) -> None:
    """octoric's submgr POSTs an outcome to the xApp, as it does for every subscription."""

    async def go() -> None:
        sm = Submgr(None, None, None, token=os.environ[auth.TOKEN_ENV])  # type: ignore[arg-type]
        sm._http = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=3))
        try:
            await sm._notify("127.0.0.1", port, "occ-kpm-1", INSTANCES)
        finally:
            await sm._http.close()
        assert not sm.stats.errors, sm.stats.errors

    asyncio.run(go())


def test_a_forged_subscription_callback_is_refused_counted_and_ignored(
    shell: tuple[XappShell, list[SubscriptionResponse]],
) -> None:
    sh, got = shell
    url = f"http://127.0.0.1:{sh.http_port}/ric/v1/subscriptions/response"
    code, body = as_nobody("POST", url, {"Content-Type": "application/json"}, FORGED)
    assert code == 401 and "API token" in body, (code, body)
    code, body = as_nobody("POST", url, auth.bearer("guessed-" * 4), FORGED)
    assert code == 401, (code, body)
    assert got == []  # never acted on
    metrics = get(f"http://127.0.0.1:{sh.http_port}/metrics")[1]
    assert metric(metrics, 'octoric_occ_rest_refused_total{kind="subscription_callback"}') == 2
    # the legitimate path: octoric's submgr sends the run's token with the outcome
    _submgr_notifies(sh.http_port)
    assert [(r.subscription_id, r.instances[0].e2_event_instance_id) for r in got] == [
        ("occ-kpm-1", 7)
    ]


def test_oran_sc_submgr_mode_takes_callbacks_without_a_header(
    monkeypatch: pytest.MonkeyPatch, shell: tuple[XappShell, list[SubscriptionResponse]]
) -> None:
    """O-RAN SC's submgr sends no header (the charts set ``none``); the default wants it."""
    monkeypatch.setenv(CALLBACK_AUTH_ENV, "none")
    sdl = SdlStore("occ", storage=SyncStorage(fake_db_backend="dict"))
    sh = XappShell("occ", free_pair(), free_port(), sdl=sdl)
    got: list[SubscriptionResponse] = []
    sh.on_subscription_response = got.append
    sh.start_http()
    try:
        req = urllib.request.Request(
            f"http://127.0.0.1:{sh.http_port}/ric/v1/subscriptions/response",
            json.dumps({"SubscriptionId": "s", "SubscriptionInstances": INSTANCES}).encode(),
            {"Content-Type": "application/json"}, method="POST",
        )  # fmt: skip
        with OPEN.open(req, timeout=5) as r:
            assert r.status == 200
        assert [r.subscription_id for r in got] == ["s"]
    finally:
        sh.http.stop()
    monkeypatch.setenv(CALLBACK_AUTH_ENV, "sometimes")
    with pytest.raises(Exception, match=CALLBACK_AUTH_ENV):
        XappShell("occ", free_pair(), free_port(), sdl=sdl)


# --- 2. Host headers ---------------------------------------------------------------------------
RIC_LISTENERS = {  # port -> where its Host refusals are counted (/metrics of that process)
    "appmgr_port": ("appmgr_port", "octoric_platform"),
    "rtmgr_rest_port": ("appmgr_port", "octoric_platform"),
    "submgr_rest_port": ("submgr_rest_port", "octoric_submgr"),
    "a1_rest_port": ("a1_rest_port", "octoric_a1"),
    "e2term_http_port": ("e2term_http_port", "octoric_e2term"),
}


def test_a_foreign_host_is_refused_by_every_ric_listener(ric_stack: RicStack) -> None:
    for name, (metrics_port, prefix) in RIC_LISTENERS.items():
        port = getattr(ric_stack.rt.ric, name)
        metrics_url = ric_stack.url(metrics_port, "/metrics")
        before = metric(get(metrics_url)[1], f"{prefix}_rest_bad_host_total")
        # what a DNS-rebinding page reads: the health, the lists, the metrics
        for path in ("/ric/v1/health/alive", "/ric/v1/subscriptions", "/metrics"):
            code, body = as_nobody("GET", f"http://127.0.0.1:{port}{path}", {"Host": EVIL})
            assert code == 421 and EVIL in body and "allowed_hosts" in body, (name, code, body)
        after = metric(get(metrics_url)[1], f"{prefix}_rest_bad_host_total")
        assert after - before == 3, (name, before, after)
        for host in (f"127.0.0.1:{port}", f"localhost:{port}", "localhost", f"[::1]:{port}"):
            code, body = get(f"http://127.0.0.1:{port}/ric/v1/health/alive", host)
            assert code == 200, (name, host, code, body)
        assert (
            get(f"http://127.0.0.1:{port}/ric/v1/health/alive", f"localhost:{port + 1}")[0] == 421
        )


def test_a_foreign_host_is_refused_by_the_xapps(
    shell: tuple[XappShell, list[SubscriptionResponse]],
) -> None:
    sh, _ = shell
    base = f"http://127.0.0.1:{sh.http_port}"
    for path in ("/ric/v1/health/alive", "/metrics"):
        code, body = as_nobody("GET", base + path, {"Host": f"{EVIL}:{sh.http_port}"})
        assert code == 421 and EVIL in body, (code, body)
    assert get(base + "/ric/v1/health/alive", f"localhost:{sh.http_port}")[0] == 200
    text = get(base + "/metrics")[1]
    assert metric(text, 'octoric_occ_rest_refused_total{kind="host"}') == 2


def test_configured_names_are_answered() -> None:
    srv = HttpServer("127.0.0.1", free_port(), token="t" * 32, allowed_hosts=["ric.example"])
    srv.add("GET", "/x", lambda r: Response.text("x"))
    srv.start()
    try:
        base = f"http://127.0.0.1:{srv.port}/x"
        assert get(base, "ric.example:8080")[0] == 200
        assert get(base, EVIL)[0] == 421
    finally:
        srv.stop()


def test_the_dashboard_refuses_a_foreign_host(tmp_path: Path) -> None:
    loop = LoopThread()
    cfg = RunConfig()
    cfg.dashboard.port = 0
    comp = DashboardComponent([], {})
    loop.call(comp.start(RunContext(config=cfg, run_dir=tmp_path)))
    try:
        port = int(comp.url.rstrip("/").rsplit(":", 1)[1])
        state = f"http://127.0.0.1:{port}/api/state"
        code, body = as_nobody("GET", state, {"Host": f"{EVIL}:{port}"})
        assert code == 421 and EVIL in body, (code, body)
        assert comp.report()["host_refused"] == 1
        code, body = get(state, f"127.0.0.1:{port}")
        assert code == 200 and "components" in json.loads(body)
    finally:
        loop.call(comp.stop())
        loop.stop()


# --- 3. webhook targets ------------------------------------------------------------------------
class HandoverRest:
    """The handover xApp's webhook REST, allow-listing the test receiver's port only."""

    def __init__(self, allow: tuple[str, ...]) -> None:
        self.sdl = SdlStore("handover", storage=SyncStorage(fake_db_backend="dict"))
        self.http = HttpServer("127.0.0.1", free_port())
        cfg = DeliveryConfig(timeout_s=1.0, max_retries=0, allow=allow)
        self.notify = Notifier(self.sdl, cfg, process=False)
        self.notify.routes(self.http)
        self.http.start()
        self.url = f"http://127.0.0.1:{self.http.port}/handover/v1/subscriptions"

    def register(self, target: str) -> tuple[int, Any]:
        body = json.dumps({"url": target, "secret": "s" * 32}).encode()
        req = urllib.request.Request(self.url, body, auth.bearer(os.environ[auth.TOKEN_ENV]),
                                     method="POST")  # fmt: skip
        try:
            with OPEN.open(req, timeout=5) as r:
                return int(r.status), json.loads(r.read())
        except urllib.error.HTTPError as e:
            return int(e.code), json.loads(e.read())

    def close(self) -> None:
        self.notify.stop()
        self.http.stop()


def _connections(redis: RedisServer) -> int:
    import redis as redis_py

    c = redis_py.Redis(host=redis.host, port=redis.port)
    try:
        return int(c.info("stats")["total_connections_received"])
    finally:
        c.close()


def test_a_webhook_to_redis_on_loopback_is_refused(redis_server: RedisServer) -> None:
    got: list[dict[str, Any]] = []
    recv = client.WebhookReceiver("s" * 32, got.append)
    rest = HandoverRest((f"127.0.0.1:{recv.server.server_address[1]}",))
    try:
        conns = _connections(redis_server)
        p = redis_server.port
        for target in (f"http://127.0.0.1:{p}/", f"http://localhost:{p}/",
                       f"http://[::ffff:127.0.0.1]:{p}/", f"http://127.0.0.2:{p}/",
                       "http://169.254.169.254/latest/meta-data/", "http://10.0.0.1/"):  # fmt: skip
            code, body = rest.register(target)
            assert code == 403 and body["reason"] == "target_not_allowed", (target, body)
            assert "webhook_allow" in body["error"]
        assert rest.notify.rejected["target_not_allowed"] == 6
        assert rest.notify.snapshot()["subscriptions_rejected"]["target_not_allowed"] == 6
        assert not rest.notify.subs
        # the allow-listed receiver (its port only) still gets signed deliveries
        code, made = rest.register(recv.url)
        assert code == 201, made
        ev = HoEvent(7, "start", 1_800_000_000_000, "00f110:1:1:0", "gnb_a", "gnb_b",
                     "00f110:a", "00f110:b", id="7:1:start", path="rc").to_json()  # fmt: skip
        rest.notify.offer(ev)
        wait_until(lambda: got, 10, "the allow-listed delivery")
        assert got[0]["ue"] == 7 and recv.rejected == 0
        # a subscription already held that points at Redis (a name re-pointed since it was
        # registered, or one restored from SDL) is refused when delivery connects
        rebound = parse({"url": f"http://127.0.0.1:{p}/", "secret": "s" * 32})
        rest.notify.deliverer.add(rebound)
        rest.notify.offer(ev)
        wait_until(lambda: rest.notify.deliverer.counters["target_refused"] >= 1, 10, "refusal")
        assert _connections(redis_server) == conns + 1  # only _connections' own client
    finally:
        rest.close()
        recv.close()
