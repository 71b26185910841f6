"""Small helpers for test xApps written on unmodified ricxappframe (tests/*/programs)."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import octoric.ric.rmr  # noqa: F401  (our librmr_si.so, before ricxappframe binds it)

from ricxappframe.rmr import rmr


def send_with_meid(mrc: Any, mtype: int, payload: bytes, meid: str, tries: int = 20) -> int:
    """Send through the route table with an RMR meid (RMRXapp.rmr_send cannot set one),
    retrying while routes are still arriving; returns the final RMR state (0 = sent)."""
    sbuf = rmr.rmr_alloc_msg(
        mrc, len(payload), payload=payload, mtype=mtype, meid=meid.encode(), gen_transaction_id=True
    )
    for _ in range(tries):
        sbuf = rmr.rmr_send_msg(mrc, sbuf)
        if sbuf.contents.state == 0:
            break
        time.sleep(0.1)
    state = int(sbuf.contents.state)
    rmr.rmr_free_msg(sbuf)
    return state


_LOCK = threading.Lock()


def emit(**kw: object) -> None:
    """One JSON event per line on stdout (the test reads them), whole lines across threads."""
    with _LOCK:
        print(json.dumps(kw), flush=True)


class _ResponseHandler(BaseHTTPRequestHandler):
    """submgr's subscription outcome (POST to the client's HTTP port) -> an event."""

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        emit(event="subscription_response", body=body)
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def serve_subscription_responses(port: int) -> HTTPServer:
    """Listen on 127.0.0.1:``port`` for submgr's outcomes, in a daemon thread."""
    http = HTTPServer(("127.0.0.1", port), _ResponseHandler)
    threading.Thread(target=http.serve_forever, daemon=True).start()
    return http


def subscription_body(
    rmr_port: int, http_port: int, meid: str, ran_function_id: int, trigger: bytes,
    action: bytes, instance_id: int,
) -> dict[str, Any]:  # fmt: skip
    """The CamelCase body O-RAN SC submgr expects: one report action, written out by hand
    (not through octoric's own client) so the probes check the contract independently."""
    return {
        "ClientEndpoint": {"Host": "127.0.0.1", "HTTPPort": http_port, "RMRPort": rmr_port},
        "Meid": meid,
        "RANFunctionID": ran_function_id,
        "E2SubscriptionDirectives": {
            "E2TimeoutTimerValue": 2,
            "E2RetryCount": 2,
            "RMRRoutingNeeded": True,
        },
        "SubscriptionDetails": [
            {
                "XappEventInstanceId": instance_id,
                "EventTriggers": list(trigger),
                "ActionToBeSetupList": [
                    {
                        "ActionID": 1,
                        "ActionType": "report",
                        "ActionDefinition": list(action),
                        "SubsequentAction": {
                            "SubsequentActionType": "continue",
                            "TimeToWait": "zero",
                        },
                    }
                ],
            }
        ],
    }
