"""submgr's subscription semantics: identical requests merge into one E2 subscription (as on
O-RAN SC), and a node that never answers ends in an E2 timeout told to the client."""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from octoric.redis_server import free_port

from .conftest import LoopThread, RicStack
from .test_a1 import http
from .test_ric_e2e import run_probe, start_node
from .test_ric_faults import ProbeStream

pytestmark = [pytest.mark.integration, pytest.mark.e2e]


def test_identical_subscriptions_share_one_e2_subscription(
    shared_ric: RicStack, loop_thread: LoopThread, tmp_path: Path
) -> None:
    node = start_node(shared_ric, loop_thread)
    (tmp_path / "a").mkdir()
    keeper = ProbeStream(shared_ric, tmp_path / "a", node.meid)
    try:
        keeper.wait_indications(0, 10, timeout=60)
        # a second xApp asks for exactly the same: it joins, the node sees no new subscription
        events = run_probe(shared_ric, tmp_path, node.meid, "--indications", "20")
        inds = [e for e in events if e["event"] == "indication"]
        assert len(inds) >= 20 and all(e["decoded"] for e in inds)
        first = {e["sub_id"] for e in keeper.indications_since(0)}
        assert {e["sub_id"] for e in inds} == first  # the same E2 subscription, fanned out
        assert node.stats.subscriptions == 1
        # the second one left: its copy stops, the first keeps streaming, no E2 delete yet
        assert next(e for e in events if e["event"] == "after_delete")["new"] == 0
        t = time.monotonic()
        keeper.wait_indications(t, 20, timeout=10)
        assert node.stats.deletions == 0
    finally:
        keeper.stop()
        loop_thread.call(node.stop())


class _Catcher(BaseHTTPRequestHandler):
    got: ClassVar[list[dict[str, Any]]] = []

    def do_POST(self) -> None:
        _Catcher.got.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def test_unanswered_subscription_times_out_and_tells_the_client(shared_ric: RicStack) -> None:
    port = free_port()
    server = HTTPServer(("127.0.0.1", port), _Catcher)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        body = {
            "ClientEndpoint": {"Host": "127.0.0.1", "HTTPPort": port, "RMRPort": 4999},
            "Meid": "gnb_999_999_000001",  # no such node: nobody will ever answer
            "RANFunctionID": 2,
            "E2SubscriptionDirectives": {"E2TimeoutTimerValue": 1, "E2RetryCount": 1},
            "SubscriptionDetails": [
                {
                    "XappEventInstanceId": 7,
                    "EventTriggers": [1],
                    "ActionToBeSetupList": [{"ActionID": 1, "ActionType": "report"}],
                }
            ],
        }
        url = shared_ric.url("submgr_rest_port", "/ric/v1/subscriptions")
        code, resp = http("POST", url, body)
        assert code == 201
        deadline = time.monotonic() + 15
        while not _Catcher.got:
            assert time.monotonic() < deadline, "the client was never told"
            time.sleep(0.1)
        inst = _Catcher.got[0]["SubscriptionInstances"][0]
        assert _Catcher.got[0]["SubscriptionId"] == resp["SubscriptionId"]
        assert inst["XappEventInstanceId"] == 7
        assert inst["ErrorCause"] == "timeout" and inst["TimeoutType"] == "E2-Timeout"
        with urllib.request.urlopen(url, timeout=5) as r:
            assert all(s["Meid"] != body["Meid"] for s in json.loads(r.read()))
    finally:
        server.shutdown()
