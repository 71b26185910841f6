"""A test xApp on unmodified ricxappframe: subscribes through submgr's REST API to KPM report
style 4 (all OCC measurements, 10 ms) and, optionally, RC report style 4 (UE information),
prints every RIC indication's E2AP payload (hex) as one JSON line, sends an RC control
(action 100) for one UE and prints the answer, then deletes its subscriptions.

Usage: e2_probe.py RMR_PORT HTTP_PORT MEID [--kpm N] [--rc N] [--control-ue AMF_ID]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

import octoric.rmr  # noqa: F401  (our librmr_si.so, before ricxappframe binds it)

import requests
from ricxappframe.xapp_frame import RMRXapp, rmr

from octoric.e2sm import e2ap, kpm, rc

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tests/: the testkit package
from testkit.xapp_tools import (
    emit,
    post_subscription,
    send_octopus_control,
    serve_subscription_responses,
    start_rmr_xapp,
    subscription_body,
    token_header,
    wait_until,
)


def subscription(
    args: argparse.Namespace, rf: int, trigger: bytes, action: bytes, xid: int
) -> dict[str, Any]:
    return subscription_body(args.rmr_port, args.http_port, args.meid, rf, trigger, action, xid)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("rmr_port", type=int)
    ap.add_argument("http_port", type=int)
    ap.add_argument("meid")
    ap.add_argument("--kpm", type=int, default=20)
    ap.add_argument("--rc", type=int, default=0)
    ap.add_argument("--control-ue", type=int)
    ap.add_argument("--timeout", type=float, default=40)
    ap.add_argument("--hold", type=float, default=0.0, help="keep subscribed this long (s)")
    args = ap.parse_args()

    serve_subscription_responses(args.http_port)
    counts = {"kpm": 0, "rc": 0, "answer": 0}

    def on_indication(xapp: RMRXapp, summary: dict, sbuf: object) -> None:
        payload = summary[rmr.RMR_MS_PAYLOAD]
        try:
            rf = e2ap.decode_e2ap(payload).ran_function_id  # type: ignore[attr-defined]
        except Exception as e:
            rf = -1
            emit(event="bad_indication", error=str(e))
        kind = "kpm" if rf == 2 else "rc"
        counts[kind] += 1
        if counts[kind] <= max(args.kpm, args.rc):
            emit(
                event="indication",
                kind=kind,
                sub_id=summary[rmr.RMR_MS_SUB_ID],
                meid=summary[rmr.RMR_MS_MEID].decode(),
                payload=payload.hex(),
            )
        xapp.rmr_free(sbuf)

    def on_answer(xapp: RMRXapp, summary: dict, sbuf: object) -> None:
        counts["answer"] += 1
        emit(
            event="control_answer",
            mtype=summary[rmr.RMR_MS_MSG_TYPE],
            payload=summary[rmr.RMR_MS_PAYLOAD].hex(),
        )
        xapp.rmr_free(sbuf)

    xapp = start_rmr_xapp(args.rmr_port, {12050: on_indication, 12041: on_answer, 12042: on_answer})
    url = os.environ["SUBMGR_URL"]

    sids = []
    trigger = kpm.encode_kpm(kpm.KpmEventTrigger(10))
    action = kpm.encode_kpm(kpm.action_definition_style4(kpm.OCC_MEASUREMENTS, granularity_ms=1))
    sids.append(post_subscription(url, subscription(args, 2, trigger, action, 1)))
    if args.rc:
        trig = rc.encode_rc(rc.event_trigger_ue_info())
        act = rc.encode_rc(rc.RcActionDefinition(4, (202, 17011)))
        sids.append(post_subscription(url, subscription(args, 3, trig, act, 2)))

    t_sub = time.time()
    wait_until(lambda: counts["kpm"] >= args.kpm and counts["rc"] >= args.rc, args.timeout)
    while time.time() < t_sub + args.hold:
        time.sleep(0.05)
    emit(event="received", **counts)

    if args.control_ue is not None:
        adapt = rc.OctopusAdaptation(drb_id=1, bitrate_window_ms=80, drop_by_bitrate=False)
        send_octopus_control(xapp, args.meid, args.control_ue, adapt)
        wait_until(lambda: counts["answer"] > 0, 10)

    for sid in sids:
        r = requests.delete(f"{url}/{sid}", timeout=5, headers=token_header())
        emit(event="deleted", status=r.status_code)
    sys.stdout.flush()
    os._exit(0)  # RMRXapp.stop() takes ~15 s; the probe's work is done


if __name__ == "__main__":
    sys.exit(main())
