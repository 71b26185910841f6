"""`octoric eval ton22 --quick` (issue #20): BBR-H against BBR and CUBIC on the HSR scenario runs
and reports Table VI's claims with a verdict each; BBR-H's defining direction (a higher median
RTT than BBR's, the price of its corrected bandwidth samples) holds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from octoric.cli import main

pytestmark = pytest.mark.unit


def test_eval_ton22_quick_reports_table_vi_claims(tmp_path: Path) -> None:
    out = tmp_path / "ton22.md"
    assert main(["eval", "ton22", "--quick", "--out", str(out)]) == 0
    assert "| claim | paper | measured | verdict |" in out.read_text()
    assert (tmp_path / "ton22.png").stat().st_size > 5_000
    data = json.loads((tmp_path / "ton22.json").read_text())
    claims = {c["claim"]: c for c in data["claims"]}
    assert len(claims) == 7
    price = claims["BBR-H's median RTT on HSR is higher than BBR's (its price)"]
    assert price["verdict"] != "does not hold" and price["measured_mean"] > 1.0
    hsr = data["runs"]["hsr"]
    assert set(hsr) == {"cubic", "bbr", "bbr-h", "bbr+"} and all(
        r[0]["handovers"] >= 2 for r in hsr.values()
    )
