"""`octoric eval webrtc --quick` (issue #47): real Chromium calls across the emulated cell (a
constant 10 Mbit/s cell, 20 s; libwebrtc's own GCC, and capped at OCC's rate) and the
simulator's GCC model on the same cell and seed; the report puts them side by side. Root
(namespaces), Chromium, ffmpeg and opencv-doc; slow: ``make test-all``."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from octoric.cli import main
from octoric.sim.chromium.call import unavailable_reason as chromium_unavailable
from octoric.sim.realue.netns import unavailable_reason

pytestmark = [
    pytest.mark.integration, pytest.mark.slow, pytest.mark.netns,
    pytest.mark.skipif(unavailable_reason() is not None, reason=str(unavailable_reason())),
    pytest.mark.skipif(chromium_unavailable() is not None, reason=str(chromium_unavailable())),
]  # fmt: skip


def test_eval_webrtc_quick_reports_chromium_beside_the_model(tmp_path: Path) -> None:
    run = tmp_path / "webrtc"
    assert main(["eval", "webrtc", "--quick", "--out", str(run)]) == 0
    report = (run / "report.md").read_text()
    assert "## The GCC model against Chromium's GCC" in report
    assert "| constant-10mbps | `chromium-gcc` |" in report
    assert "| constant-10mbps | `chromium-occ` |" in report
    assert (run / "eval-webrtc.png").stat().st_size > 10_000
    data = json.loads((run / "results.json").read_text())
    by = data["runs"]["constant-10mbps"]
    chromium, occ = by["chromium-gcc"][0], by["chromium-occ"][0]
    for r in (chromium, occ, chromium["model"], occ["model"]):
        # a 640x360 VP8 stream cannot fill a 10 Mbit/s cell, but it uses some of it
        assert 0.02 < r["utilization"] < 0.6, r
        # one way: at least the 10 ms wired delay, sniffed and as the cell saw it
        assert 10.0 <= r["network_p50_ms"] <= r["network_p99_ms"], r
        assert 10.0 <= r["cell_p50_ms"] <= r["cell_p99_ms"], r
        assert r["received_kbps"] > 100, r
    for r in (chromium, occ):
        assert r["completed"], r
        # the live path only adds to what the cell saw
        assert r["network_p50_ms"] >= r["cell_p50_ms"], r
        # the model twin ran over the call's own window of the trace, from its first media
        # packet (the window starts on the series' 100 ms grid at or before it)
        assert r["window_s"][0] <= r["media_start_s"] < r["window_s"][0] + 0.1, r
        assert r["model"]["window_s"][0] == pytest.approx(r["media_start_s"], abs=0.01), r
        assert r["frames_decoded"] >= 0.8 * r["frames_sent"] > 0, r
        assert r["cpu_limited"] < 0.05, r
        # the OCC xApp's feedback reached the server namespace in both Chromium runs
        assert r["feedback"] > 20, r
        # the call's processes are gone
        assert r["processes_left"] == []
    # chromium-occ: the page's cap was OCC's latest target at >= 90 % of its samples
    assert occ["occ_follow"]["follows"] >= 0.9 * occ["occ_follow"]["samples"] > 0, occ
    assert chromium["occ_follow"] is None
    # `eval report` rebuilds the report from the recorded calls (the twins made again)
    assert main(["eval", "report", str(run)]) == 0
    assert (run / "report.md").read_text() == report
    # the run's namespaces are gone
    left = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert f"octoric-{os.getpid()}." not in left
