"""The run's subscriber to OCC's per-UE available bandwidth (OCTORIC_ABW_REPORT, RMR 30500).

``octoric run`` starts it beside the OCC xApp, so the reports OCC publishes have a route and a
reader (without one RMR says "no route" for every report). It is an xApp on unmodified
ricxappframe, as ``examples/abw_listener.py`` is: its descriptor lists the message in
``rxMessages``; once it has registered with appmgr the route manager adds it to the 30500
route. Each second it appends one line to ``<run folder>/abw-reports.jsonl``: the reports
received, the UEs they named, and two delays per report: ``delivery_ms``, OCC's send to this
subscriber (RMR through the platform), and ``age_ms``, the end of the report's last KPM granule
(the gNB's clock) to this subscriber. The report (``deploy.report``) reads that file.

    python -m octoric.deploy.abw_listener --rmr-port P --out FILE   (in an xApp environment)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

from octoric.contracts.message_types import OCTORIC_ABW_REPORT
from octoric.supervisor import ChildProcess, RunContext

log = logging.getLogger("octoric.abw-listener")
NAME = "abw-listener"
OUT_FILE = "abw-reports.jsonl"
ROUTE_WAIT_S = 15.0


def _spread(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"p50": None, "p99": None, "max": None}
    v = sorted(values)
    p99 = v[min(len(v) - 1, int(len(v) * 0.99))]
    return {"p50": round(v[len(v) // 2], 3), "p99": round(p99, 3), "max": round(v[-1], 3)}


class Window:
    """What arrived in the current second (filled by RMR's thread, taken by the writer)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.reports = 0
        self.bad = 0
        self.ues: set[int] = set()
        self.delivery: list[float] = []
        self.age: list[float] = []

    def add(self, report: dict[str, Any], at: float) -> None:
        with self.lock:
            self.reports += 1
            for u in report.get("ues") or []:
                if isinstance(u.get("ue"), int):
                    self.ues.add(u["ue"])
            sent = report.get("sent_at")
            if isinstance(sent, (int, float)):
                self.delivery.append((at - sent) * 1e3)
            t_ms = report.get("t_ms")
            if isinstance(t_ms, (int, float)) and t_ms > 1e12:  # a wall-clock RAN time stamp
                self.age.append(at * 1e3 - (t_ms + 1))  # the granule's end

    def take(self, now: float) -> dict[str, Any]:
        with self.lock:
            row = {"unix": round(now, 3), "reports": self.reports, "bad": self.bad,
                   "ues": sorted(self.ues), "delivery_ms": _spread(self.delivery),
                   "age_ms": _spread(self.age)}  # fmt: skip
            self.__init__()  # type: ignore[misc]
        return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rmr-port", type=int, required=True)
    ap.add_argument("--out", required=True, help="append one JSON line per second here")
    args = ap.parse_args(argv)

    import octoric.rmr  # noqa: F401  (octoric's librmr_si.so, before ricxappframe binds one)

    from ricxappframe.xapp_frame import RMRXapp, rmr

    window = Window()

    def on_report(xapp: RMRXapp, summary: dict[str, Any], sbuf: Any) -> None:
        at = time.time()
        try:
            report = json.loads(summary[rmr.RMR_MS_PAYLOAD])
            window.add(report if isinstance(report, dict) else {}, at)
        except ValueError:
            with window.lock:
                window.bad += 1
        finally:
            xapp.rmr_free(sbuf)

    def other(xapp: RMRXapp, summary: dict[str, Any], sbuf: Any) -> None:
        xapp.rmr_free(sbuf)

    xapp = RMRXapp(other, rmr_port=args.rmr_port, use_fake_sdl=False)
    xapp.register_callback(on_report, OCTORIC_ABW_REPORT)
    xapp.run(thread=True, rmr_timeout=1)
    print(f"{NAME}: listening on RMR {args.rmr_port} for OCTORIC_ABW_REPORT", file=sys.stderr,
          flush=True)  # fmt: skip
    out = Path(args.out)
    next_at = time.time() + 1.0
    try:
        while True:
            time.sleep(max(0.0, next_at - time.time()))
            next_at += 1.0
            row = window.take(time.time())
            with out.open("a", encoding="utf-8") as f:
                f.write(json.dumps(row, separators=(",", ":")) + "\n")
    except KeyboardInterrupt:
        pass
    finally:
        os._exit(0)  # RMRXapp.stop() waits ~10 s; the run's RIC ends with the run


class AbwListenerComponent:
    """The listener as a supervisor component (a child process, restarted if it dies)."""

    name = NAME

    def __init__(self) -> None:
        self.child: ChildProcess | None = None
        self.out = Path(OUT_FILE)
        self.rmr_port = 0

    async def start(self, ctx: RunContext) -> None:
        from octoric.deploy.xapp_env import descriptor, xapp_environment
        from octoric.redis_server import free_port
        from octoric.ric.services import RicRuntime
        from octoric.ric.stack import free_pair

        rt = RicRuntime.read(ctx.run_dir / "ric.json")
        self.rmr_port = free_pair()
        cfg = ctx.run_dir / f"{NAME}-config-file.json"
        desc = descriptor(NAME, self.rmr_port, rx=["OCTORIC_ABW_REPORT"], tx=[])
        cfg.write_text(json.dumps(desc, indent=2))
        env = xapp_environment(rt, NAME, self.rmr_port, free_port(), cfg)
        self.out = ctx.run_dir / OUT_FILE
        argv = [sys.executable, "-m", "octoric.deploy.abw_listener",
                "--rmr-port", str(self.rmr_port), "--out", str(self.out)]  # fmt: skip
        self.child = ChildProcess(NAME, argv, env=env, max_restarts=5)
        await self.child.start(ctx)
        # the xApps start after it: wait (a few seconds) until the route manager routes 30500 here,
        # so OCC's first report already has a reader
        routes, entry = rt.seed_file, f"mse|{OCTORIC_ABW_REPORT}|-1|127.0.0.1:{self.rmr_port}"
        deadline = time.monotonic() + ROUTE_WAIT_S
        while time.monotonic() < deadline and self.child.failed() is None:
            with contextlib.suppress(OSError):
                if entry in routes.read_text():
                    return
            await asyncio.sleep(0.1)
        log.warning("%s: no 30500 route to it after %.0f s; starting the xApps anyway",
                    NAME, ROUTE_WAIT_S)  # fmt: skip

    async def stop(self) -> None:
        if self.child is not None:
            await self.child.stop()

    def _last(self) -> dict[str, Any] | None:
        try:
            with self.out.open("rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - 4096))
                lines = f.read().splitlines()
            row: dict[str, Any] = json.loads(lines[-1])
            return row
        except (OSError, ValueError, IndexError):
            return None

    def status(self) -> str:
        if self.child is None:
            return f"{NAME} -"
        last = self._last()
        if last is None:
            return f"{NAME} waiting for 30500"
        return f"{NAME} {last['reports']} ABW reports/s for {len(last['ues'])} UEs"

    def report(self) -> dict[str, Any]:
        return {
            "process": self.child.report() if self.child else None,
            "rmr_port": self.rmr_port,
            "file": str(self.out),
            "last_second": self._last(),
        }

    def failed(self) -> str | None:
        return self.child.failed() if self.child else None


if __name__ == "__main__":
    raise SystemExit(main())
