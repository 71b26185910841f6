"""Small helpers for test xApps written on unmodified ricxappframe (tests/*/programs)."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import octoric.rmr  # noqa: F401  (our librmr_si.so, before ricxappframe binds it)

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


def start_rmr_xapp(rmr_port: int, callbacks: dict[int, Any]) -> Any:
    """An unmodified ricxappframe ``RMRXapp`` on ``rmr_port`` running in a thread:
    ``callbacks`` maps message types to handlers; any other type becomes an "other" event."""
    from ricxappframe.xapp_frame import RMRXapp

    def default(xapp: Any, summary: dict[str, Any], sbuf: object) -> None:
        emit(event="other", mtype=summary[rmr.RMR_MS_MSG_TYPE])
        xapp.rmr_free(sbuf)

    xapp = RMRXapp(default, rmr_port=rmr_port, use_fake_sdl=False)
    for mtype, cb in callbacks.items():
        xapp.register_callback(cb, mtype)
    xapp.run(thread=True)
    return xapp


def token_header() -> dict[str, str]:
    """The run's API token from the environment the RIC gives xApps (contracts.auth)."""
    import os

    from octoric.contracts import auth

    return auth.bearer(os.environ.get(auth.TOKEN_ENV, ""))


def post_subscription(url: str, body: dict[str, Any]) -> str:
    """POST a subscription to submgr; emits "posted" and returns the SubscriptionId."""
    import requests

    r = requests.post(url, json=body, timeout=5, headers=token_header())
    emit(event="posted", status=r.status_code, body=r.json())
    return str(r.json()["SubscriptionId"])


def send_octopus_control(xapp: Any, meid: str, amf_ue_id: int, adaptation: Any) -> int:
    """An E2SM-RC control (Octopus action 100) for one UE, ACK requested, sent by meid;
    emits "control_sent" and returns the RMR state."""
    from octoric.e2sm import e2ap, rc
    from octoric.e2sm.common import Guami, UeId
    from octoric.e2sm.e2ap_ies import RicRequestId

    ue = UeId.gnb(amf_ue_id, Guami(bytes.fromhex("00f110"), 1, 1, 0))
    header, message = rc.octopus_control(ue, adaptation)
    req = e2ap.RicControlRequest(RicRequestId(777, 42), 3, header, message, ack_request="ack")
    state = send_with_meid(xapp._mrc, 12040, e2ap.encode_e2ap(req), meid)
    emit(event="control_sent", state=state)
    return state


def wait_until(cond: Any, timeout_s: float) -> bool:
    """Poll ``cond()`` every 50 ms until it is true or ``timeout_s`` passes."""
    deadline = time.time() + timeout_s
    while not cond() and time.time() < deadline:
        time.sleep(0.05)
    return bool(cond())
