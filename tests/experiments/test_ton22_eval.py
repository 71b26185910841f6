"""`octoric eval ton22 --quick` (issue #20): BBR-H against BBR and CUBIC on the HSR scenario runs
and reports Table VI's claims with a verdict each; BBR-H's defining direction (a higher median
RTT than BBR's, the price of its corrected bandwidth samples) holds. The DASH rows (Table VII:
DASH against DASH-H for dash.js's three rules on HSR) run and are reported beside them, and so
are Fig. 23's figures (BtlBw and the delayed ACKs around each handover)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from octoric.cli import main

pytestmark = pytest.mark.unit


def test_eval_ton22_quick_reports_table_vi_claims(tmp_path: Path) -> None:
    assert main(["eval", "ton22", "--quick", "--out", str(tmp_path)]) == 0
    out = tmp_path / "report.md"
    assert "| claim | paper | accepted (±30 % of the effect) |" in out.read_text()
    assert (tmp_path / "eval-ton22.png").stat().st_size > 5_000
    data = json.loads((tmp_path / "results.json").read_text())
    claims = {c["claim"]: c for c in data["claims"]}
    assert len(claims) == 7 + 3 * 3
    price = claims["BBR-H's median RTT on HSR is higher than BBR's (its price)"]
    assert price["runs_in_direction"] == price["runs"] == 1 and price["measured_mean"] > 1.0
    hsr = data["runs"]["hsr"]
    assert set(hsr) == {"cubic", "bbr", "bbr-h", "bbr+"} and all(
        r[0]["handovers"] >= 2 for r in hsr.values()
    )
    dash = data["dash"]
    assert set(dash) == {"throughput", "throughput-h", "bola", "bola-h", "dynamic", "dynamic-h"}
    for name, rs in dash.items():
        r = rs[0]
        assert r["handover_reports"] >= 2, name  # the servers heard of the UEs' handovers
        assert 1.2 <= r["avg_bitrate_mbps"] <= 26.8 and 0 <= r["share_4k"] <= 1, name
        assert r["stall_rate"] >= 0 and r["oscillation_mbps"] >= 0, name
        assert r["vetoes"] == 0 or name.endswith("-h"), name  # only DASH-H vetoes
        assert r["vetoes"] <= r["types"]["A"], name  # and only type-A decisions
    for rule in ("Throughput", "Bola", "Dynamic"):
        row = claims[f"DASH-H's average bitrate on HSR is higher than DASH's ({rule})"]
        assert row["seeds"] == 1 and row["measured_mean"] > 0
        assert f"DASH-H's stall rate on HSR is lower than DASH's ({rule})" in claims
    assert "## §V-C: DASH against DASH-H (Table VII)" in out.read_text()
    # Fig. 23: BtlBw and the delayed ACKs around each handover, in the hsr runs and alone
    assert all(r[0]["around_handovers"]["handovers"] >= 1 for r in hsr.values())
    fig23 = data["fig23"]
    assert set(fig23) == {"bbr", "bbr-h"}
    for name, rs in fig23.items():
        assert rs[0]["goodput_mbps"] > 0 and isinstance(rs[0]["series"], list), name
    assert "## Fig. 23: BtlBw and the delayed ACKs around a handover" in out.read_text()
