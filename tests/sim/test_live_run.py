"""`octoric run` end to end: Redis, the RIC and the live simulated gNB; the node shows in the
status line and the run report carries the simulator's summary."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from testkit.listeners import Listener, tcp_listeners

from octoric.redis_server import free_port
from octoric.ric.stack import RIC_PORTS, distinct_pairs

pytestmark = [pytest.mark.integration, pytest.mark.e2e]


def _listeners_once_up(pid: int, run_root: Path) -> list[Listener]:
    """The run's TCP listeners, read once the xApps have started (or after 40 s)."""
    deadline = time.monotonic() + 40
    while time.monotonic() < deadline:
        if list(run_root.glob("*/xapps.json")):
            time.sleep(2.0)  # the xApp's RMR and HTTP ports open just after it is recorded
            break
        time.sleep(0.2)
    return tcp_listeners(pid)


def test_octoric_run_with_live_sim(tmp_path: Path) -> None:
    sets = [f"report_dir={tmp_path}", f"redis.port={free_port()}"]
    sets += [f"ric.{name}={port}" for name, port in distinct_pairs(RIC_PORTS).items()]
    argv = [sys.executable, "-m", "octoric.cli", "run", "--duration", "15", "--no-live"]
    for s in sets:
        argv += ["--set", s]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # issue #17: while it runs, every TCP listener of the run (RIC, Redis, xApps: E2, RMR data
    # and route ports, REST) is on loopback
    listeners = _listeners_once_up(proc.pid, tmp_path)
    out, err = proc.communicate(timeout=120)
    p = subprocess.CompletedProcess(argv, proc.returncode, out, err)
    assert p.returncode == 0, p.stderr[-3000:]
    assert len(listeners) >= 10, listeners  # RIC, Redis, OCC: the run was really up
    assert [x for x in listeners if not x.loopback] == [], listeners
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("[octoric")]
    assert any("ric 1 nodes" in ln and "E2 1/1 up" in ln and "8 UEs" in ln for ln in lines), lines
    report = json.loads((tmp_path / "latest.json").read_text())
    sim = report["components"]["sim"]
    summary = sim["summary"]
    assert summary is not None, sim
    assert summary["live"]["stopped_because"] == "signal SIGTERM"
    assert len(summary["ues"]) == 8 and len(summary["cells"]) == 2
    assert summary["sim_seconds"] > 5
    assert all(f["frames_decoded"] > 0 for f in summary["flows"])
    assert all(f["frame_latency_ms"]["p50"] is not None for f in summary["flows"])
    assert summary["live"]["nodes"][0]["stats"]["setups"] == 1
    assert "sim_seconds=" in p.stdout  # the end-of-run summary line
    # issue #7: the video flows are OCC-fed; the status sets each UE's ABW beside its true
    # capacity, and the summary prints the OCC-fed flows' p99 frame latency
    assert all(f["scheme"] == "occ" for f in summary["flows"])
    assert any("ABW/cap Mbit/s 1000 " in ln for ln in lines), lines
    assert sim["occ_flows"] == 8 and len(sim["occ_p99_frame_latency_ms"]) == 8
    assert "OCC-fed flows, p99 frame latency (ms): ue1000 " in p.stdout, p.stdout[-2000:]
