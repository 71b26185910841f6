"""`octoric run` end to end: Redis, the RIC and the live simulated gNB; the node shows in the
status line and the run report carries the simulator's summary."""

from __future__ import annotations

import json
import re
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from testkit.listeners import Listener, tcp_listeners
from testkit.octoric_run import run_argv

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


def _dashboard_state(port: int, deadline_s: float) -> dict[str, Any]:
    """The dashboard's /api/state once the simulator's series shows decoded frames and every
    xApp's status page answered it."""
    deadline = time.monotonic() + deadline_s
    state: dict[str, Any] = {}
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    while time.monotonic() < deadline:
        try:
            with opener.open(f"http://127.0.0.1:{port}/api/state", timeout=5) as r:
                state = json.loads(r.read())
        except OSError:
            time.sleep(0.5)
            continue
        rows = state["series"]["rows"]
        frames = any(f["frames"] > 0 for row in rows for f in row.get("flow_rates") or [])
        xapps = state["xapps"]
        if frames and xapps and all(x["ok"] for x in xapps.values()):
            break
        time.sleep(0.5)
    return state


def test_octoric_run_with_live_sim(tmp_path: Path) -> None:
    argv, dash = run_argv(tmp_path, 15)
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # issue #17: while it runs, every TCP listener of the run (RIC, Redis, xApps: E2, RMR data
    # and route ports, REST) is on loopback
    listeners = _listeners_once_up(proc.pid, tmp_path)
    # issue #16: the live dashboard serves the real simulator's series and the run's health
    state = _dashboard_state(dash, 20)
    out, err = proc.communicate(timeout=120)
    p = subprocess.CompletedProcess(argv, proc.returncode, out, err)
    assert p.returncode == 0, p.stderr[-3000:]
    assert len(listeners) >= 10, listeners  # RIC, Redis, OCC: the run was really up
    assert [x for x in listeners if not x.loopback] == [], listeners
    assert any(x.port == dash for x in listeners), listeners
    rows = state["series"]["rows"]
    assert rows and len(rows[-1]["ue_rates"]) == 7 and len(rows[-1]["flow_rates"]) == 7, state
    names = {c["name"] for c in state["components"]}
    assert names >= {"ric", "sim", "xapp-occ", "xapp-handover"}, names
    assert state["ric"]["nodes"] and state["xapps"]["occ"]["ok"], state["xapps"]
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("[octoric")]
    # the default scenario (demo): 2 cells on 2 gNBs, 7 UEs
    assert any("ric 2 nodes" in ln and "E2 2/2 up" in ln and "7 UEs" in ln for ln in lines), lines
    report = json.loads((tmp_path / "latest.json").read_text())
    sim = report["components"]["sim"]
    summary = sim["summary"]
    assert summary is not None, sim
    assert summary["live"]["stopped_because"] == "signal SIGTERM"
    assert len(summary["ues"]) == 7 and len(summary["cells"]) == 2
    assert summary["sim_seconds"] > 5
    assert all(f["frames_decoded"] > 0 for f in summary["flows"])
    assert all(f["frame_latency_ms"]["p50"] is not None for f in summary["flows"])
    assert summary["live"]["nodes"][0]["stats"]["setups"] == 1
    assert "sim_seconds=" in p.stdout  # the end-of-run summary line
    # issue #7: OCC-fed video flows; the status sets each UE's ABW beside its capacity, and
    # the summary prints the OCC-fed flows' p99 frame latency. Issue #42: the demo has a GCC
    # flow beside each OCC-fed one (the Octopus flow, the last, is GCC too)
    schemes = [f["scheme"] for f in summary["flows"]]
    assert schemes == ["occ", "gcc", "occ", "gcc", "occ", "gcc", "gcc"], schemes
    assert any("ABW/cap Mbit/s ue1000 " in ln for ln in lines), lines
    # issue #42: OCC's row names each UE's ABW; the summary prints no Python None/True/False
    assert any(re.search(r"occ \d+ UEs, ABW Mbit/s ue1000 \d", ln) for ln in lines), lines
    summary_text = p.stdout.split("octoric run summary", 1)[1]
    assert not re.search(r"=(None|True|False)\b", summary_text), summary_text
    assert sim["occ_flows"] == 3 and len(sim["occ_p99_frame_latency_ms"]) == 3
    assert "OCC-fed flows, p99 frame latency (ms): ue1000 " in p.stdout, p.stdout[-2000:]
    # issue #16: a clean run logs no traceback and none of the noise it once did
    (run_dir,) = [d for d in tmp_path.iterdir() if d.is_dir()]
    logs = {f.name: f.read_text(errors="replace") for f in run_dir.glob("*.log")}
    want = {"ric-e2term.log", "xapp-occ.log", "xapp-handover.log", "abw-listener.log"}
    assert want <= set(logs), sorted(logs)
    noise = ("Traceback", "early resume failed", "E2 node lost", "SetuptoolsDeprecationWarning")
    found = {n: [k for k, text in logs.items() if n in text] for n in noise}
    assert not any(found.values()), found
    assert "Traceback" not in p.stderr and "WARNING" not in p.stdout, p.stdout[-3000:]
