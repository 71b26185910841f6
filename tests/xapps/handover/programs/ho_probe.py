"""A researcher's xApp on unmodified ricxappframe that listens to OCTORIC_HO_EVENT (30501),
or to the message type named as the third argument (e.g. OCTORIC_OCTOPUS_STATUS): its
descriptor (CONFIG_FILE) lists the message in ``rxMessages``, so once ricxappframe has
registered it with appmgr the route manager adds it to that route. One JSON line per message
on stdout (``event``: ``ho`` for 30501, else ``message``); exits after ``timeout_s``.

    ho_probe.py <rmr_port> <timeout_s> [MESSAGE_TYPE_NAME]
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

import octoric.rmr  # noqa: F401  (octoric's librmr_si.so, before ricxappframe binds one)

from ricxappframe.xapp_frame import RMRXapp, rmr

from octoric.contracts.message_types import BY_NAME, OCTORIC_HO_EVENT


def main() -> int:
    rmr_port, timeout_s = int(sys.argv[1]), float(sys.argv[2])
    mtype = BY_NAME[sys.argv[3]] if len(sys.argv) > 3 else OCTORIC_HO_EVENT
    label = "ho" if mtype == OCTORIC_HO_EVENT else "message"

    def on_event(xapp: RMRXapp, summary: dict[str, Any], sbuf: Any) -> None:
        try:
            body = json.loads(summary[rmr.RMR_MS_PAYLOAD])
            print(json.dumps({"event": label, "at": time.time(), "body": body}), flush=True)
        except ValueError as e:
            print(json.dumps({"event": "bad", "error": str(e)}), flush=True)
        finally:
            xapp.rmr_free(sbuf)

    def other(xapp: RMRXapp, summary: dict[str, Any], sbuf: Any) -> None:
        xapp.rmr_free(sbuf)

    xapp = RMRXapp(other, rmr_port=rmr_port, use_fake_sdl=False)
    xapp.register_callback(on_event, mtype)
    xapp.run(thread=True, rmr_timeout=1)
    print(json.dumps({"event": "ready"}), flush=True)
    time.sleep(timeout_s)
    os._exit(0)  # RMRXapp.stop() takes ~15 s; nothing to clean up


if __name__ == "__main__":
    raise SystemExit(main())
