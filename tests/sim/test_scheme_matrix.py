"""Every scheme `octoric sim schemes` lists runs through `octoric sim run --scheme NAME` on each of
the OCC paper's over-the-air routes and on a Mahimahi trace, and its summary holds the metrics
its kind of flow reports (issue #14, done-when 2)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from octoric.cli import main
from octoric.sim.channels.route import ROUTES
from octoric.sim.cli import scheme_table
from octoric.sim.engine import Engine
from octoric.sim.scenario import load

pytestmark = pytest.mark.unit
TRACE = Path(__file__).resolve().parents[3] / "shared/traces/mahimahi/Verizon-LTE-short.down"
VIDEO_KEYS = ("frame_latency_ms", "network_latency_ms", "valid_bitrate_kbps",
              "frame_bitrate_kbps", "stall_rate", "aoi_ms", "quality")  # fmt: skip
BULK_KEYS = ("goodput_kbps", "network_latency_ms", "queue_delay_ms", "rtt_ms")


def _scenarios() -> list[str]:
    out = [f"route:{r}" for r in ROUTES]
    if TRACE.is_file():
        out.append(f"trace:{TRACE}")
    return out


def test_every_scheme_runs_on_every_route_and_a_trace(tmp_path: Path) -> None:
    names = [str(r["name"]) for r in scheme_table()]
    assert len(names) >= 14
    out = tmp_path / "s.json"
    for scenario in _scenarios():
        for name in names:
            rc = main(["sim", "run", "--scenario", scenario, "--duration", "2", "--scheme", name,
                       "--json", str(out)])  # fmt: skip
            assert rc == 0, (scenario, name)
            s = json.loads(out.read_text())
            f, u = s["flows"][0], s["ues"][0]
            keys = BULK_KEYS if f["traffic"] == "bulk" else VIDEO_KEYS
            missing = [k for k in keys if k not in f]
            assert not missing, (scenario, name, missing)
            if "quality" in keys:  # SSIM/PSNR and SQI-SSIM from the measured curve
                assert f["quality"]["frames_scored"] > 0, (scenario, name)
                assert 0 <= f["quality"]["sqi_ssim"] <= 1, (scenario, name)
            assert u["utilization"] is not None and u["utilization"] > 0, (scenario, name)
            assert f["scheme"] == name or f.get("window_scheme") == name, (scenario, name)


def test_routes_differ_as_the_paper_describes_them() -> None:
    """Route 1 (good coverage) is near the cell's ~50 Mbit/s; route 2's blockages cut it for
    seconds; route 3 (poor coverage) is a fraction of it; the walks swing through both."""

    def capacity_mbps(route: str) -> np.ndarray:
        sc = load(f"route:{route}")
        sc.duration_s = 60.0
        eng = Engine(sc, 1)
        eng.run()
        cap = [x[0] for x in eng.ts_ue_capacity]
        return np.diff(cap) * 8 / np.diff(eng._ts_bins) / 1e6

    good, block, poor = capacity_mbps("good"), capacity_mbps("blockage"), capacity_mbps("poor")
    walk = capacity_mbps("walk-fast")
    assert np.percentile(good, 10) >= 40 and np.median(good) <= 65
    assert np.percentile(block, 10) < 0.6 * np.median(good)
    assert np.median(poor) < 0.4 * np.median(good)
    assert np.percentile(walk, 90) > 2.5 * np.percentile(walk, 10)
