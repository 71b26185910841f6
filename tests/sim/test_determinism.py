"""Acceptance 6: the same seed gives the same summary (wall_seconds excluded)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from octoric.cli import main
from octoric.sim.runner import run_offline
from octoric.sim.scenario import load

pytestmark = pytest.mark.unit


def _strip(d: dict) -> dict:
    d = dict(d)
    d.pop("wall_seconds")
    return d


@pytest.mark.parametrize("name", ["static", "multi-ue", "hsr", "pulse"])
def test_same_seed_same_summary(name: str) -> None:
    sc1, sc2 = load(name), load(name)
    sc1.duration_s = sc2.duration_s = 15.0
    a = run_offline(sc1, seed=11).summary
    b = run_offline(sc2, seed=11).summary
    assert json.dumps(_strip(a), sort_keys=True) == json.dumps(_strip(b), sort_keys=True)


def test_other_seed_other_summary() -> None:
    sc1, sc2 = load("multi-ue"), load("multi-ue")
    sc1.duration_s = sc2.duration_s = 5.0
    a = run_offline(sc1, seed=1).summary
    b = run_offline(sc2, seed=2).summary
    assert _strip(a) != _strip(b)


def test_cli_json_identical_for_same_seed(tmp_path: Path) -> None:
    outs = []
    for k in range(2):
        out = tmp_path / f"run{k}" / "s.json"
        rc = main(["sim", "run", "--scenario", "multi-ue", "--duration", "5", "--seed", "4",
                   "--json", str(out), "--quiet"])  # fmt: skip
        assert rc == 0
        outs.append(json.loads(out.read_text()))
        assert (out.parent / "s.timeseries.csv").is_file()
        assert (out.parent / "s.frames.csv").is_file()
    assert _strip(outs[0]) == _strip(outs[1])
    s = outs[0]
    for key in ("sim_seconds", "wall_seconds", "ues", "flows", "cells"):
        assert key in s
    for u in s["ues"]:
        assert {"capacity_bytes", "delivered_bytes"} <= set(u)
    for f in s["flows"]:
        assert set(f["frame_latency_ms"]) >= {"p50", "p95", "p99"}
        for k in ("stall_rate", "valid_bitrate_kbps", "frame_bitrate_kbps"):
            assert k in f
    for c in s["cells"]:
        assert "handovers" in c
