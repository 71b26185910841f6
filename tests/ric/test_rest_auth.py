"""The RIC's REST APIs want the run's API token where state changes, and for A1 (issue #17).

Before: any local process deleted OCC's subscription at submgr (OCC starved while it still
reported the subscription active), registered fake xApps, and read or replaced A1 policies."""

from __future__ import annotations

import base64
import json
import stat
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from octoric.contracts import auth

from .conftest import RicStack

pytestmark = [pytest.mark.integration]
OPEN = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def call(method: str, url: str, body: Any = None, headers: dict[str, str] | None = None) -> int:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    try:
        with OPEN.open(req, timeout=5) as r:
            return int(r.status)
    except urllib.error.HTTPError as e:
        if e.code == 401:
            assert "api-token" in e.read().decode()  # says where the token is
            assert e.headers["WWW-Authenticate"].startswith("Bearer")
        return int(e.code)


def test_state_changes_and_a1_need_the_token(ric_stack: RicStack) -> None:
    rt = ric_stack.rt
    token_file = Path(rt.run_dir) / auth.TOKEN_FILE
    assert token_file.read_text().strip() == rt.api_token
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    u = ric_stack.url
    action = {"ActionID": 1, "ActionType": "report"}
    sub = {"ClientEndpoint": {"Host": "127.0.0.1", "HTTPPort": 8999, "RMRPort": 4999},
           "Meid": "gnb_001_001_00000001", "RANFunctionID": 2,
           "SubscriptionDetails": [{"XappEventInstanceId": 1, "EventTriggers": [1],
                                    "ActionToBeSetupList": [action]}]}  # fmt: skip
    attacks = [
        ("DELETE", u("submgr_rest_port", "/ric/v1/subscriptions/1"), None),
        ("POST", u("submgr_rest_port", "/ric/v1/subscriptions"), sub),
        ("POST", u("appmgr_port", "/ric/v1/register"), {"appName": "evil"}),
        ("POST", u("rtmgr_rest_port", "/ric/v1/handles/xapp-subscription-handle"),
         {"address": "127.0.0.1", "port": 9, "subscription_id": 1}),
        ("GET", u("a1_rest_port", "/A1-P/v2/policytypes"), None),
        ("PUT", u("a1_rest_port", "/A1-P/v2/policytypes/5/policies/x"), {"x": 1}),
    ]  # fmt: skip
    for method, url, body in attacks:
        assert call(method, url, body) == 401, (method, url)
        assert call(method, url, body, {"Authorization": "Bearer wrong"}) == 401, (method, url)
    # with the token: through (whatever the call's own answer is)
    good = auth.bearer(rt.api_token)
    assert call("GET", u("a1_rest_port", "/A1-P/v2/policytypes"), headers=good) == 200
    assert call("POST", u("submgr_rest_port", "/ric/v1/subscriptions"), sub, good) != 401
    # as ricxappframe sends it through HTTP_PROXY with the token in the proxy URL
    basic = base64.b64encode(f"{auth.PROXY_USER}:{rt.api_token}".encode()).decode()
    proxy = {"Proxy-Authorization": f"Basic {basic}"}
    assert call("GET", u("a1_rest_port", "/A1-P/v2/policytypes"), headers=proxy) == 200
    # reads, health and metrics stay open; the refusals are counted
    assert call("GET", u("submgr_rest_port", "/ric/v1/subscriptions")) == 200
    assert call("GET", u("a1_rest_port", "/ric/v1/health/ready")) == 200
    with OPEN.open(u("a1_rest_port", "/metrics"), timeout=5) as r:
        text = r.read().decode()
    line = next(ln for ln in text.splitlines() if ln.startswith("octoric_a1_rest_unauthorized"))
    assert float(line.split()[-1]) >= 4  # this process refused the two A1 calls, twice each
