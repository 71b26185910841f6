"""The GCC model against recorded Chromium calls (issue #47, point 2), without a browser.

``docs/eval-webrtc.json`` holds ``octoric eval webrtc``'s calls: Debian's Chromium 156
(libwebrtc untouched) across the emulated cell on a constant 10 Mbit/s cell, the three
Mahimahi LTE traces, the OCC paper's PHY routes and a constant 1.5 Mbit/s cell its encoder
fills (``chromium-gcc`` only), three seeds each (2026-11-28, this 2-core
machine; docs/eval-webrtc.md). Each call's model twin is made again here from the code at
hand, over the call's own window of the same trace and seed, and held to what the report
claims: on the rows in ``AGREE`` the model's mean over the seeds is within 20 % of
Chromium's for the metric named. A model change that breaks the agreement fails here; one
that improves a row not listed is a reason to list it."""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

import pytest

from octoric.experiments.webrtc_eval import _model

REPO = Path(__file__).resolve().parents[2]
RECORDED = REPO / "docs/eval-webrtc.json"
TRACES = REPO.parent / "shared/traces/mahimahi"
# row -> the metrics (Chromium's key, the model's key) on which the report finds the model
# within 20 % of Chromium (docs/eval-webrtc.md, "The GCC model against Chromium's GCC")
UTIL = ("utilization", "utilization")
P99 = ("cell_p99_ms", "network_p99_ms")
AGREE: dict[str, tuple[tuple[str, str], ...]] = {
    "constant-10mbps": (UTIL, P99),
    "route-good": (UTIL, P99),
    "route-blockage": (UTIL, P99),
    "route-poor": (UTIL, P99),
    # a link the encoder fills (GCC at capacity). Its p99 was not held from 2026-11-28 to
    # 2026-11-29 (1.18-1.28x): the model's packets (full ones and a small remainder) and its
    # pacing factor (2.5, where a libwebrtc video stream paces at 1.1) were not Chromium's;
    # with both as libwebrtc has them it is 1.07x (docs/sim.md, "Against Chromium", item 12;
    # tests/sim/test_webrtc_packetization.py)
    "constant-1.5mbps": (UTIL, P99),
    "Verizon-LTE-short": (UTIL, P99),
    # utilization differs on two LTE traces (0.62x, 1.42x on these calls): docs/sim.md,
    # "Against Chromium", has what was measured about why (the start-up on both)
    "ATT-LTE-driving": (P99,),
    "TMobile-LTE-short": (P99,),
}

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not RECORDED.is_file(), reason="no recorded calls (docs/eval-webrtc.json)"),
]


def _calls() -> dict[str, list[dict[str, Any]]]:
    runs = json.loads(RECORDED.read_text())["runs"]
    return {row: by["chromium-gcc"] for row, by in runs.items() if by.get("chromium-gcc")}


def _twin(row: str, seed: int, call: dict[str, Any]) -> dict[str, Any]:
    t0, t1 = call["window_s"]
    traces = TRACES if not row.startswith("route-") else REPO  # routes need no trace file
    return _model(row, traces.resolve(), seed, t1 - t0, start_s=t0)


def test_the_recorded_calls_are_real_and_complete() -> None:
    """What the agreement is judged on: 60 s calls that completed, encoded without CPU
    limitation, on every row and seed, with the cell's view of their packets."""
    calls = _calls()
    assert {"constant-10mbps", "ATT-LTE-driving", "TMobile-LTE-short",
            "Verizon-LTE-short"} <= set(calls)  # fmt: skip
    for row, cs in calls.items():
        assert len(cs) == 3, row
        for c in cs:
            assert c["completed"] and c["processes_left"] == [], (row, c)
            assert c["cpu_limited"] < 0.05, (row, c)
            t0, t1 = c["window_s"]
            assert t1 - t0 > 55, (row, c)
            assert c["cell_p50_ms"] is not None and c["cell_p99_ms"] is not None, (row, c)


@pytest.mark.parametrize("row", sorted(AGREE))
def test_the_gcc_model_stays_within_20_percent_of_chromium(row: str) -> None:
    if not row.startswith(("route-", "constant-")) and not TRACES.is_dir():
        pytest.skip(f"no Mahimahi traces at {TRACES}")
    calls = _calls()[row]
    twins = [_twin(row, k + 1, c) for k, c in enumerate(calls)]
    for ours, theirs in AGREE[row]:
        chromium = statistics.fmean(float(c[ours]) for c in calls)
        model = statistics.fmean(float(t[theirs]) for t in twins)
        assert abs(model - chromium) <= 0.2 * chromium, (row, ours, chromium, model)
