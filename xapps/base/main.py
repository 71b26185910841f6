"""What every xApp's ``python -m octoric.xapps.<name>`` does: ports, signals, run forever.

The environment is the O-RAN SC one (CONFIG_FILE, DBAAS_SERVICE_HOST/PORT, RMR_SEED_RT or
RMR_RTG_SVC, SUBMGR_URL, SERVICE_RICXAPP_<HOSTNAME>_<RMR|HTTP>_PORT); on the embedded RIC
``octoric.deploy.xapp_env.xapp_environment`` builds it.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from types import FrameType
from typing import Protocol


class Runnable(Protocol):
    def start(self) -> None: ...
    def stop(self) -> None: ...


def port_from_env(kind: str) -> int | None:
    """The port Kubernetes (or the embedded RIC) gives this pod for ``kind`` (RMR, HTTP)."""
    host = os.environ.get("HOSTNAME", "").upper().replace("-", "_")
    v = os.environ.get(f"SERVICE_RICXAPP_{host}_{kind}_PORT", "")
    tail = v.rpartition(":")[2]
    return int(tail) if tail.isdigit() else None


def parse_args(
    name: str, rmr_port: int, http_port: int, argv: list[str] | None
) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog=f"python -m octoric.xapps.{name}")
    ap.add_argument("--rmr-port", type=int, default=port_from_env("RMR") or rmr_port)
    ap.add_argument("--http-port", type=int, default=port_from_env("HTTP") or http_port)
    ap.add_argument("--host", default="127.0.0.1", help="address submgr and RMR peers reach us at")
    return ap.parse_args(argv)


def run_forever(name: str, xapp: Runnable) -> int:
    """Start the xApp and serve until SIGTERM/SIGINT; a start failure exits 2 with one line."""
    from octoric import realtime
    from octoric.errors import OctoricError

    def on_signal(signum: int, frame: FrameType | None) -> None:
        xapp.stop()
        logging.getLogger(f"xapps.{name}").info("stopped by signal %d", signum)
        os._exit(0)  # RMRXapp.stop() takes ~15 s and its threads are not daemons

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        realtime.apply_from_env(f"{name} xApp")  # before its threads start: they inherit it
        xapp.start()
        realtime.freeze_startup_heap()
    except OctoricError as e:
        print(f"{name} xApp: {e}", file=sys.stderr)
        os._exit(2)
    threading.Event().wait()
    return 0
