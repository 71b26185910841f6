"""`octoric eval sec23 --quick` (issue #20): Octopus, OctoBBR, WebRTC (GCC) and video over BBR on
one LTE trace (and Octopus and OctoBBR at fixed quality, §6.1); SEC'23's claims with a verdict
each. Octopus's defining effect, a lower tail
latency than the same transport without the gNB's help, holds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from octoric.cli import main

pytestmark = pytest.mark.unit
TRACES = Path(__file__).resolve().parents[3] / "shared" / "traces" / "mahimahi"


@pytest.mark.skipif(not (TRACES / "Verizon-LTE-short.down").is_file(),
                    reason="../shared/traces/mahimahi is not beside the checkout")  # fmt: skip
def test_eval_sec23_quick_reports_the_papers_claims(tmp_path: Path) -> None:
    assert main(["eval", "sec23", "--quick", "--traces", str(TRACES), "--out", str(tmp_path)]) == 0
    out = tmp_path / "report.md"
    assert "| claim | paper | accepted (±30 % of the effect) |" in out.read_text()
    assert (tmp_path / "eval-sec23.png").stat().st_size > 5_000
    data = json.loads((tmp_path / "results.json").read_text())
    claims = {c["claim"]: c for c in data["claims"]}
    assert len(claims) == 8 and sum(c["counted"] for c in claims.values()) == 7  # BBR: extra
    tail = claims["Octopus's tail (p99) frame latency is lower than OctoBBR's (§6.2)"]
    assert tail["runs_in_direction"] == tail["runs"] == 1 and tail["measured_mean"] < 1.0
    runs = data["runs"]["Verizon-LTE-short"]
    assert set(runs) == {"octopus", "octobbr", "webrtc", "bbr-video"}
    assert all(r[0]["frames_decoded"] > 0 for r in runs.values())
    # §6.2's metric from the measured rate -> SSIM curve, on every scheme
    assert all(0.5 < r[0]["sqi_ssim"] < 1.0 for r in runs.values())
    assert all(0 < r[0]["sqi_ssim_db"] < 40 for r in runs.values())
    assert "Octopus's SQI-SSIM (dB) is higher than WebRTC's (§6.2)" in claims
    case1 = data["case1"]["Verizon-LTE-short"]  # §6.1: fixed quality, AoI
    assert set(case1) == {"octopus", "octobbr", "awstream", "salsify"}
    assert all(0 < r[0]["aoi_p50_ms"] <= r[0]["aoi_p99_ms"] for r in case1.values())


def test_eval_sec23_says_which_traces_are_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["eval", "sec23", "--quick", "--traces", str(tmp_path)]) == 2
    assert "Verizon-LTE-short.down" in capsys.readouterr().err
