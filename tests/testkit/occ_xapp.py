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
        self.starts += 1
        log = (self.tmp / f"occ-{self.starts}.log").open("wb")
        t = time.time()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "octoric.xapps.occ", "--rmr-port", str(self.rmr_port),
             "--http-port", str(self.http_port)],
            env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        return t

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
