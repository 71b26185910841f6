"""The RIC's REST APIs against bodies that used to break routing (issue #17): an endpoint
without a port froze every route rebuild with a 500, and host fields injected route lines.
Each case is a clear 400 now, and routing keeps working for everyone else."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

import pytest

from .conftest import RicStack
from .test_a1 import http

pytestmark = [pytest.mark.integration]
ROUTE_LINE = "mse|12050|-1|evil.example:9"
DESCRIPTOR = {"name": "probe", "messaging": {"ports": [
    {"name": "rmr-data", "container": "probe", "port": 4999,
     "rxMessages": ["OCTORIC_ABW_REPORT"], "txMessages": [], "policies": []}]}}  # fmt: skip


def _register(stack: RicStack, rmr: str, http_ep: str = "127.0.0.1:8999") -> tuple[int, Any]:
    body = {"appName": "probe", "appInstanceName": "probe", "appVersion": "1",
            "httpEndpoint": http_ep, "rmrEndpoint": rmr,
            "config": json.dumps(DESCRIPTOR)}  # fmt: skip
    return http("POST", stack.url("appmgr_port", "/ric/v1/register"), body)


def _table(stack: RicStack) -> str:
    """The route table rtmgr serves (text)."""
    with urllib.request.urlopen(stack.url("rtmgr_rest_port", "/ric/v1/routes"), timeout=5) as r:
        return str(r.read().decode())


BAD_ENDPOINTS = ["127.0.0.1", "127.0.0.1:0", "127.0.0.1:99999", f"127.0.0.1:4999\n{ROUTE_LINE}",
                 "a|b:4999", "a,b:4999", "a;b:4999", " :4999"]  # fmt: skip


def test_register_refuses_bad_endpoints_and_routing_goes_on(ric_stack: RicStack) -> None:
    for rmr in BAD_ENDPOINTS:
        code, body = _register(ric_stack, rmr)
        assert code == 400, (rmr, body)
        assert "rmrEndpoint" in str(body)
        assert "evil" not in _table(ric_stack)
        code, body = _register(ric_stack, "127.0.0.1:4999")  # the next good one still routes
        assert code == 201, body
        assert "127.0.0.1:4999" in _table(ric_stack)
    code, body = _register(ric_stack, "127.0.0.1:4999", http_ep="h|x:80")
    assert code == 400 and "httpEndpoint" in str(body)


def test_submgr_refuses_a_host_that_would_inject_routes(ric_stack: RicStack) -> None:
    body = {
        "ClientEndpoint": {"Host": f"x|{ROUTE_LINE}", "HTTPPort": 8999, "RMRPort": 4999},
        "Meid": "gnb_001_001_00000001", "RANFunctionID": 2,
        "SubscriptionDetails": [{"XappEventInstanceId": 1, "EventTriggers": [1],
                                 "ActionToBeSetupList": [{"ActionID": 1, "ActionType": "report"}]}],
    }  # fmt: skip
    code, reply = http("POST", ric_stack.url("submgr_rest_port", "/ric/v1/subscriptions"), body)
    assert code == 400, reply
    assert "ClientEndpoint.Host" in str(reply)


def test_rtmgr_refuses_an_address_that_would_inject_routes(ric_stack: RicStack) -> None:
    url = ric_stack.url("rtmgr_rest_port", "/ric/v1/handles/xapp-subscription-handle")
    for address in ("1.2.3.4,evil.example", "x\nmse|1|-1|y:1", ""):
        body = {"address": address, "port": 4999, "subscription_id": 7}
        code, reply = http("POST", url, body)
        assert code == 400, (address, reply)
    assert "evil" not in _table(ric_stack)


def test_deep_json_is_a_400(ric_stack: RicStack) -> None:
    deep = b"[" * 200_000 + b"]" * 200_000
    assert http("POST", ric_stack.url("appmgr_port", "/ric/v1/register"), raw=deep)[0] == 400
    url = ric_stack.url("rtmgr_rest_port", "/ric/v1/handles/xapp-subscription-handle")
    assert http("POST", url, raw=deep)[0] == 400
