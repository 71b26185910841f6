"""``python -m octoric.xapps.occ [--rmr-port 4560] [--http-port 8090]``: the OCC xApp.

The environment and the signal handling are every xApp's: ``octoric.xapps.base.main``.
"""

from __future__ import annotations

import logging
import os
import sys
import threading

from octoric import log as octolog
from octoric.contracts import ports
from octoric.xapps.base.main import parse_args, run_forever


def _preload() -> None:
    from octoric.xapps.occ.xapp import warm_up_kernel

    warm_up_kernel()


def main(argv: list[str] | None = None) -> int:
    args = parse_args("occ", ports.OCC_RMR, ports.OCC_HTTP, argv)
    octolog.configure("xapp-occ")
    # an indication waits for the GIL behind any running thread (the SDL writer, HTTP,
    # discovery) for up to the switch interval, 5 ms by default: bound that wait (as the
    # handover xApp does). Loop bench 1x100@1ms, 2026-11-27: p99 1.31-1.67 ms vs 1.59-1.80 ms.
    sys.setswitchinterval(0.0005)
    # A warm spare (octoric.spare) imports everything and loads the kernel, then waits; a
    # cold start resumes feedback first (light imports only), then loads the engine and RMR.
    from octoric.spare import wait_if_spare

    waited = wait_if_spare(_preload)
    if waited:
        logging.getLogger("xapps.occ").info("warm spare started after %.1f s of waiting", waited)
    from octoric.xapps.base.sdl import SdlStore
    from octoric.xapps.occ.feedback import FeedbackSender
    from octoric.xapps.occ.resume import resume_feedback

    stop = threading.Event()
    sdl = SdlStore("occ")
    feedback = FeedbackSender()
    try:
        # a replica (shards.py) leaves each UE's targets to the owner of its node
        from octoric.xapps.occ.shards import ENV as REPLICA_ENV

        resumed = resume_feedback(sdl, feedback, expire_s=5.0,
                                  targets=not os.environ.get(REPLICA_ENV))  # fmt: skip
    except Exception as e:  # SDL not reachable yet: the xApp's own restore retries
        logging.getLogger("xapps.occ").warning("early resume failed: %s", e)
        resumed = None
    feedback.start_timer(stop)

    from octoric.xapps.occ.xapp import OccXapp

    # the native path (when built) takes the resumed flows over from this early sender
    xapp = OccXapp(args.rmr_port, args.http_port, args.host, sdl=sdl, feedback=feedback,
                   resumed=resumed, native_path=True)  # fmt: skip
    return run_forever("occ", xapp)


if __name__ == "__main__":
    raise SystemExit(main())
