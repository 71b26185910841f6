"""`octoric eval morc --quick` (issue #20): MORC's Table 1 in the simulator runs, its report has
the claims table and the per-profile utilizations beside the paper's, and MORC's headline (higher
utilization than CUBIC and BBR under varying bandwidth, RTT and loss) holds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from octoric.cli import main

pytestmark = pytest.mark.unit


def test_eval_morc_quick_reports_the_table_and_the_headline_holds(tmp_path: Path) -> None:
    out = tmp_path / "morc.md"
    assert main(["eval", "morc", "--quick", "--out", str(out)]) == 0
    assert "| claim | paper | measured | verdict |" in out.read_text()
    assert (tmp_path / "morc.png").stat().st_size > 10_000
    data = json.loads((tmp_path / "morc.json").read_text())
    assert len(data["profiles"]) == 3
    for row in data["profiles"]:
        assert all(0 < row[s] <= 100.5 for s in ("cubic", "morc", "bbr")), row
    assert [c["verdict"] for c in data["claims"]] == ["holds", "holds"]
