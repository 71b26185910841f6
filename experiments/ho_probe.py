"""A receiver of OCTORIC_HO_EVENT (30501) on unmodified ricxappframe, for ``octoric bench
handover``: it joins the RIC like any xApp (its descriptor lists the message in
``rxMessages``) and prints one JSON line per message with the wall-clock time it arrived.

    python -m octoric.experiments.ho_probe <rmr_port> <timeout_s>
    python -m octoric.experiments.ho_probe webhook <secret> <timeout_s>

The second form is an application server's webhook receiver instead (the handover client
library's ``WebhookReceiver``, verifying every delivery): it prints ``{"url": ...}``, then one
line per delivery. Both run in a process of their own, so the bench's clock-stamping gNBs
never share a GIL with them.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from typing import Any

import octoric.rmr  # noqa: F401  (octoric's librmr_si.so, before ricxappframe binds one)

from ricxappframe.xapp_frame import RMRXapp, rmr

from octoric.contracts.message_types import OCTORIC_HO_EVENT

_OUT = threading.Lock()


def webhook(secret: str, timeout_s: float) -> int:
    from octoric.xapps.handover.client import WebhookReceiver

    def on_event(ev: dict[str, Any]) -> None:
        line = json.dumps({"at": time.time(), "hook": ev})
        with _OUT:
            print(line, flush=True)

    recv = WebhookReceiver(secret, on_event)
    print(json.dumps({"url": recv.url}), flush=True)
    time.sleep(timeout_s)
    os._exit(0)


def main() -> int:
    if sys.argv[1] == "webhook":
        return webhook(sys.argv[2], float(sys.argv[3]))
    rmr_port, timeout_s = int(sys.argv[1]), float(sys.argv[2])

    def on_event(xapp: RMRXapp, summary: dict[str, Any], sbuf: Any) -> None:
        at = time.time()
        try:
            line = json.dumps({"at": at, "body": json.loads(summary[rmr.RMR_MS_PAYLOAD])})
        except ValueError as e:
            line = json.dumps({"at": at, "error": str(e)})
        finally:
            xapp.rmr_free(sbuf)
        with _OUT:
            print(line, flush=True)

    def other(xapp: RMRXapp, summary: dict[str, Any], sbuf: Any) -> None:
        xapp.rmr_free(sbuf)

    xapp = RMRXapp(other, rmr_port=rmr_port, use_fake_sdl=False)
    xapp.register_callback(on_event, OCTORIC_HO_EVENT)
    xapp.run(thread=True, rmr_timeout=1)
    print(json.dumps({"ready": True}), flush=True)
    time.sleep(timeout_s)
    os._exit(0)  # RMRXapp.stop() takes ~15 s; nothing to clean up


if __name__ == "__main__":
    raise SystemExit(main())
