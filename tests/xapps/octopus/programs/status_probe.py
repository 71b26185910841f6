"""A researcher's xApp on unmodified ricxappframe that listens to OCTORIC_OCTOPUS_STATUS (30502):
its descriptor (CONFIG_FILE) lists the message in ``rxMessages``, so once ricxappframe has
registered it with appmgr the route manager adds it to the 30502 route. One JSON line per
message on stdout; exits after ``timeout_s``.

    status_probe.py <rmr_port> <timeout_s>
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

import octoric.rmr  # noqa: F401  (octoric's librmr_si.so, before ricxappframe binds one)

from ricxappframe.xapp_frame import RMRXapp, rmr

from octoric.contracts.message_types import OCTORIC_OCTOPUS_STATUS


def main() -> int:
    rmr_port, timeout_s = int(sys.argv[1]), float(sys.argv[2])

    def on_event(xapp: RMRXapp, summary: dict[str, Any], sbuf: Any) -> None:
        try:
            body = json.loads(summary[rmr.RMR_MS_PAYLOAD])
            print(json.dumps({"event": "status", "at": time.time(), "body": body}), flush=True)
        except ValueError as e:
            print(json.dumps({"event": "bad", "error": str(e)}), flush=True)
        finally:
            xapp.rmr_free(sbuf)

    def other(xapp: RMRXapp, summary: dict[str, Any], sbuf: Any) -> None:
        xapp.rmr_free(sbuf)

    xapp = RMRXapp(other, rmr_port=rmr_port, use_fake_sdl=False)
    xapp.register_callback(on_event, OCTORIC_OCTOPUS_STATUS)
    xapp.run(thread=True, rmr_timeout=1)
    print(json.dumps({"event": "ready"}), flush=True)
    time.sleep(timeout_s)
    os._exit(0)  # RMRXapp.stop() takes ~15 s; nothing to clean up


if __name__ == "__main__":
    raise SystemExit(main())
