"""A peer process for the ricxappframe interop tests (run as a subprocess, never imported).

Roles:
  responder OUT PORT  -- an RMRXapp: records every message; answers mtype 1000 with an rts
                         of mtype 1001 and payload b"ack:" + payload.
  sender OUT PORT     -- an Xapp: sends 5 x mtype 1000 (sub_id 77, meid, fixed xid), collects
                         the replies, then sends 10 x mtype 2000 (fan-out) and exits.
Each record is one JSON line in OUT.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

import octoric.rmr  # noqa: F401  (preloads our librmr_si.so; must precede ricxappframe)

from ricxappframe.rmr import rmr
from ricxappframe.xapp_frame import RMRXapp, Xapp

OUT = sys.argv[2]
PORT = int(sys.argv[3])


def record(kind: str, summary: dict[str, Any]) -> None:
    rec = {
        "kind": kind,
        "mtype": summary[rmr.RMR_MS_MSG_TYPE],
        "sub_id": summary[rmr.RMR_MS_SUB_ID],
        "meid": (summary[rmr.RMR_MS_MEID] or b"").decode(),
        "xid": summary[rmr.RMR_MS_TRN_ID].decode(errors="replace"),
        "payload": (summary[rmr.RMR_MS_PAYLOAD] or b"").decode(errors="replace"),
        "src": summary[rmr.RMR_MS_MSG_SOURCE],
        "state": summary[rmr.RMR_MS_MSG_STATE],
    }
    with open(OUT, "a") as f:
        f.write(json.dumps(rec) + "\n")


def responder() -> None:
    def on_req(xapp: RMRXapp, summary: dict[str, Any], sbuf: Any) -> None:
        record("req", summary)
        ok = xapp.rmr_rts(sbuf, new_payload=b"ack:" + summary[rmr.RMR_MS_PAYLOAD], new_mtype=1001)
        with open(OUT, "a") as f:
            f.write(json.dumps({"kind": "rts", "ok": ok}) + "\n")
        xapp.rmr_free(sbuf)

    def default(xapp: RMRXapp, summary: dict[str, Any], sbuf: Any) -> None:
        record("msg", summary)
        xapp.rmr_free(sbuf)

    app = RMRXapp(default, rmr_port=PORT, use_fake_sdl=True)
    app.register_callback(on_req, 1000)
    app.run()


def sender() -> None:
    def entry(xapp: Xapp) -> None:
        mrc = xapp._mrc
        for i in range(5):
            sbuf = rmr.rmr_alloc_msg(
                mrc,
                256,
                payload=f"req-{i}".encode(),
                mtype=1000,
                meid=b"gnb_001_001_00019b",
                sub_id=77,
                fixed_transaction_id=f"xid-{i:028d}".encode(),
            )
            for _ in range(100):
                sbuf = rmr.rmr_send_msg(mrc, sbuf)
                if sbuf.contents.state == 0:
                    break
                time.sleep(0.05)
            with open(OUT, "a") as f:
                f.write(json.dumps({"kind": "sent", "state": sbuf.contents.state}) + "\n")
            rmr.rmr_free_msg(sbuf)
        got = 0
        deadline = time.time() + 15
        while got < 5 and time.time() < deadline:
            for summary, sbuf in xapp.rmr_get_messages():
                record("reply", summary)
                rmr.rmr_free_msg(sbuf)
                got += 1
            time.sleep(0.05)
        for i in range(10):
            ok = xapp.rmr_send(f"fan-{i}".encode(), 2000)
            with open(OUT, "a") as f:
                f.write(json.dumps({"kind": "fan", "ok": ok}) + "\n")
        with open(OUT, "a") as f:
            f.write(json.dumps({"kind": "done"}) + "\n")
        time.sleep(0.5)  # let the kernel flush before exiting without ricxappframe's slow stop
        os._exit(0)

    Xapp(entry, rmr_port=PORT, use_fake_sdl=True).run()


if __name__ == "__main__":
    {"responder": responder, "sender": sender}[sys.argv[1]]()
