"""The run report (``deploy.report``): ``octoric report RUN_DIR`` draws report.html from a run
folder's files, each plot inlined, a missing file leaving its section out."""

from __future__ import annotations

import base64
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit


def _run_folder(tmp: Path) -> Path:
    (tmp / "report.json").write_text(json.dumps(
        {"stopped_because": "duration", "seconds": 30.2,
         "components": {"sim": {"flows": 2}, "xapp-occ": {"ue_samples_per_s": 8000}}}))  # fmt: skip
    rows = [{"sim_seconds": t, "updated_unix": 1e9 + t, "handovers": 0,
             "ue_rates": [{"ue": 1000 + u, "capacity_kbps": 9000.0 + 100 * t,
                           "throughput_kbps": 5000.0, "abw_kbps": None if t < 2 else 7000.0}
                          for u in range(3)]} for t in range(20)]  # fmt: skip
    (tmp / "sim-series.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows) + '{"torn')
    gt = [{"event": "start", "ue": 1000, "unix_ms": 1e12 + 5000, "failed": False},
          {"event": "end", "ue": 1000, "unix_ms": 1e12 + 5090, "failed": False}]  # fmt: skip
    (tmp / "sim-handovers.jsonl").write_text("".join(json.dumps(r) + "\n" for r in gt))
    ev = [{"ue": 1000, "event": "start", "t_ms": 1e12 + 5002},
          {"ue": 1000, "event": "complete", "t_ms": 1e12 + 5092}]  # fmt: skip
    (tmp / "handover-events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in ev))
    (tmp / "sim-summary.json").write_text(json.dumps({"flows": [
        {"ue": 0, "scheme": "occ", "frame_latency_ms": {"p50": 30.0, "p99": 80.0}}]}))  # fmt: skip
    return tmp


def test_report_from_a_run_folder(tmp_path: Path) -> None:
    run = _run_folder(tmp_path)
    out = subprocess.run([sys.executable, "-m", "octoric.cli", "report", str(run)],
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert out.returncode == 0, out.stderr
    page = (run / "report.html").read_text()
    imgs = re.findall(r'src="data:image/png;base64,([^"]+)"', page)
    assert len(imgs) == 3  # rates, handovers, latency
    for b64 in imgs:
        assert base64.b64decode(b64)[:8] == b"\x89PNG\r\n\x1a\n"
    assert "stopped because: duration" in page and "xapp-occ" in page
    # without the simulator's files: only what there is
    for f in ("sim-series.jsonl", "sim-handovers.jsonl", "handover-events.jsonl"):
        (run / f).unlink()
    from octoric.deploy import report

    assert len(re.findall(r"data:image/png", report.build(run))) == 1


def test_report_of_a_folder_that_is_no_run(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "octoric.cli", "report", str(tmp_path)],
                         capture_output=True, text=True, timeout=60)  # fmt: skip
    assert out.returncode != 0 and "not a run folder" in out.stderr
