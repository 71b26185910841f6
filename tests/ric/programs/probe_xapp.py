"""A test xApp on unmodified ricxappframe 3.2.2: subscribes through submgr's REST API, counts
and decodes RIC_INDICATIONs, sends a RIC control request and waits for its ACK, deletes the
subscription and checks that indications stop. Prints one JSON object per event on stdout.

Usage: probe_xapp.py RMR_PORT HTTP_PORT MEID [--indications N] [--control]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import octoric.rmr  # noqa: F401  (our librmr_si.so, before ricxappframe binds it)

import requests
from ricxappframe.xapp_frame import RMRXapp, rmr

from octoric.e2sm import e2ap, kpm

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


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("rmr_port", type=int)
    ap.add_argument("http_port", type=int)
    ap.add_argument("meid")
    ap.add_argument("--indications", type=int, default=20)
    ap.add_argument("--control", action="store_true")
    ap.add_argument("--keep", action="store_true", help="do not delete; run until killed")
    args = ap.parse_args()

    serve_subscription_responses(args.http_port)
    counts = {"ind": 0, "ack": 0}

    def on_indication(xapp: RMRXapp, summary: dict, sbuf: object) -> None:
        payload = summary[rmr.RMR_MS_PAYLOAD]
        try:
            ind = e2ap.decode_e2ap(payload)
            assert isinstance(ind, e2ap.RicIndication)
            hdr = kpm.decode_kpm(kpm.KpmIndicationHeader, ind.header)
            msg = kpm.decode_kpm(kpm.KpmIndicationMessage, ind.message)
            ok = hdr.unix_time > 0 and msg.format is not None
            emit(
                event="indication",
                sub_id=summary[rmr.RMR_MS_SUB_ID],
                sn=ind.sn,
                meid=summary[rmr.RMR_MS_MEID].decode(),
                decoded=ok,
                instance=ind.request_id.instance_id,
            )
        except Exception as e:  # report, never crash the probe
            emit(event="indication", decoded=False, error=str(e))
        counts["ind"] += 1
        xapp.rmr_free(sbuf)

    def on_ack(xapp: RMRXapp, summary: dict, sbuf: object) -> None:
        counts["ack"] += 1
        msg = e2ap.decode_e2ap(summary[rmr.RMR_MS_PAYLOAD])
        emit(
            event="control_ack",
            type=type(msg).__name__,
            meid=summary[rmr.RMR_MS_MEID].decode(),
            instance=msg.request_id.instance_id,
        )  # type: ignore[attr-defined]
        xapp.rmr_free(sbuf)

    xapp = start_rmr_xapp(args.rmr_port, {12050: on_indication, 12041: on_ack})
    emit(event="started")

    # the subscription (KPM style 4 action, report period 10 ms), CamelCase as submgr expects
    trigger = kpm.encode_kpm(kpm.KpmEventTrigger(10))
    action = kpm.encode_kpm(kpm.action_definition_style4(["DRB.UEThpDl"], granularity_ms=1))
    body = subscription_body(args.rmr_port, args.http_port, args.meid, 2, trigger, action, 12345)
    url = __import__("os").environ["SUBMGR_URL"]
    sid = post_subscription(url, body)

    wait_until(lambda: counts["ind"] >= args.indications, 30)
    emit(event="received", count=counts["ind"])

    if args.control:
        from octoric.e2sm import rc

        send_octopus_control(xapp, args.meid, 7, rc.OctopusAdaptation(drb_id=1))
        wait_until(lambda: counts["ack"] > 0, 10)

    if args.keep:
        while True:
            time.sleep(1)
    r = requests.delete(f"{url}/{sid}", timeout=5, headers=token_header())
    emit(event="deleted", status=r.status_code)
    time.sleep(0.5)  # indications already in flight may still arrive
    before = counts["ind"]
    time.sleep(1.5)
    emit(event="after_delete", new=counts["ind"] - before)
    sys.stdout.flush()
    import os

    os._exit(0)  # RMRXapp.stop() takes ~15 s; the probe's work is done


if __name__ == "__main__":
    sys.exit(main())
