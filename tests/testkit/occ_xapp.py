"""The OCC xApp as a subprocess on a test's embedded RIC (``python -m octoric.xapps.occ``)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from octoric.deploy.xapp_env import xapp_environment
from octoric.ric.stack import RicStack
from testkit.rest import http

REPO = Path(__file__).resolve().parents[2]


@dataclass
class OccProc:
    stack: RicStack
    tmp: Path
    rmr_port: int
    http_port: int
    proc: subprocess.Popen[bytes] | None = None
    starts: int = 0
    env: dict[str, str] | None = None  # over the xApp's environment (e.g. its replica ID)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.http_port}{path}"

    def start(self) -> float:
        d = json.loads((REPO / "xapps/occ/config-file.json").read_text())
        for p in d["messaging"]["ports"]:
            p["port"] = {
                "http": self.http_port,
                "rmr-data": self.rmr_port,
                "rmr-route": self.rmr_port + 1,
            }[p["name"]]
        cfg = self.tmp / "occ-config.json"
        cfg.write_text(json.dumps(d))
        env = xapp_environment(self.stack.rt, "occ", self.rmr_port, self.http_port, cfg)
        env.update(self.env or {})
        self.starts += 1
        log = (self.tmp / f"occ-{self.starts}.log").open("wb")
        t = time.time()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "octoric.xapps.occ", "--rmr-port", str(self.rmr_port),
             "--http-port", str(self.http_port)],
            env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        return t

    def wait_ready(self, timeout: float = 60.0) -> None:
        """Wait for the xApp's readiness probe (RMR up: its whole start done). Its HTTP answers
        earlier, so a start that fails after HTTP (exit 2) looked up for a moment: an exit
        fails here at once, with the xApp's log."""
        assert self.proc is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(
                    f"the OCC xApp exited ({self.proc.returncode}) while starting:\n{self.log()}"
                )
            try:
                if http("GET", self.url("/ric/v1/health/ready"))[0] == 200:
                    return
            except (OSError, ValueError):  # not listening yet; 503 "starting" (not JSON)
                pass
            time.sleep(0.2)
        raise AssertionError(f"the OCC xApp not ready after {timeout:.0f} s:\n{self.log()}")

    def alive(self) -> str:
        """'' while the xApp runs; else its exit and log (for a test's message)."""
        if self.proc is None or self.proc.poll() is None:
            return ""
        return f"the OCC xApp exited ({self.proc.returncode}):\n{self.log()}"

    def status(self) -> dict[str, Any]:
        code, body = http("GET", self.url("/occ/v1/status"))
        assert code == 200
        return dict(body)

    def kill9(self) -> None:
        assert self.proc is not None
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill9()

    def log(self) -> str:
        return "\n".join(p.read_text()[-3000:] for p in sorted(self.tmp.glob("occ-*.log")))
