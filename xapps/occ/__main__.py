"""``python -m octoric.xapps.occ [--rmr-port 4560] [--http-port 8090]``: the OCC xApp.

The environment is the O-RAN SC one (CONFIG_FILE, DBAAS_SERVICE_HOST/PORT, RMR_SEED_RT or
RMR_RTG_SVC, SUBMGR_URL); ``octoric.deploy.xapp_env.xapp_environment`` builds it for the
embedded RIC.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from types import FrameType

from octoric import log as octolog
from octoric.contracts import ports
from octoric.errors import OctoricError


def _port_from_env(kind: str) -> int | None:
    host = os.environ.get("HOSTNAME", "").upper().replace("-", "_")
    v = os.environ.get(f"SERVICE_RICXAPP_{host}_{kind}_PORT", "")
    tail = v.rpartition(":")[2]
    return int(tail) if tail.isdigit() else None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m octoric.xapps.occ")
    ap.add_argument("--rmr-port", type=int, default=_port_from_env("RMR") or ports.OCC_RMR)
    ap.add_argument("--http-port", type=int, default=_port_from_env("HTTP") or ports.OCC_HTTP)
    ap.add_argument("--host", default="127.0.0.1", help="address submgr and RMR peers reach us at")
    args = ap.parse_args(argv)
    octolog.configure("xapp-occ")
    # Resume feedback first (light imports only), then load the engine and RMR.
    from octoric.xapps.base.sdl import SdlStore
    from octoric.xapps.occ.feedback import FeedbackSender
    from octoric.xapps.occ.resume import resume_feedback

    stop = threading.Event()
    sdl = SdlStore("occ")
    feedback = FeedbackSender()
    try:
        resumed = resume_feedback(sdl, feedback, expire_s=5.0)
    except Exception as e:  # SDL not reachable yet: the xApp's own restore retries
        logging.getLogger("xapps.occ").warning("early resume failed: %s", e)
        resumed = None
    feedback.start_timer(stop)

    from octoric.xapps.occ.xapp import OccXapp

    xapp = OccXapp(args.rmr_port, args.http_port, args.host, sdl=sdl, feedback=feedback,
                   resumed=resumed)  # fmt: skip

    def on_signal(signum: int, frame: FrameType | None) -> None:
        xapp.stop()
        logging.getLogger("xapps.occ").info("stopped by signal %d", signum)
        os._exit(0)  # RMRXapp.stop() takes ~15 s and its threads are not daemons

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        xapp.start()
    except OctoricError as e:
        print(f"occ xApp: {e}", file=sys.stderr)
        os._exit(2)
    threading.Event().wait()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
