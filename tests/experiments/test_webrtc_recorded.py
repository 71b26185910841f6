"""`octoric eval webrtc --recorded JSON` (issue #47): the calls of an earlier report, the
twins and the report made again with the code at hand, without a browser or root."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from octoric.cli import main

REPO = Path(__file__).resolve().parents[2]
RECORDED = REPO / "docs/eval-webrtc.json"

pytestmark = pytest.mark.skipif(not RECORDED.is_file(), reason="no recorded calls")


def test_recorded_calls_get_new_twins_and_a_report(tmp_path: Path) -> None:
    run = tmp_path / "webrtc"
    assert main(["eval", "webrtc", "--quick", "--recorded", str(RECORDED),
                 "--out", str(run)]) == 0  # fmt: skip
    data = json.loads((run / "results.json").read_text())
    old = json.loads(RECORDED.read_text())["runs"]["constant-10mbps"]
    assert list(data["runs"]) == ["constant-10mbps"]
    assert data["calls_from"]
    for arm in ("chromium-gcc", "chromium-occ"):
        new, rec = data["runs"]["constant-10mbps"][arm], old[arm][:1]
        assert len(new) == 1
        # the call is the recorded one; its twin was made here, over the call's window
        assert {k: v for k, v in new[0].items() if k != "model"} == \
            {k: v for k, v in rec[0].items() if k != "model"}  # fmt: skip
        assert new[0]["model"]["window_s"][0] == pytest.approx(rec[0]["window_s"][0], abs=0.01)
        assert 0.02 < new[0]["model"]["utilization"] < 0.6
    report = (run / "report.md").read_text()
    assert "(`--recorded`); the twins were made again" in report
    assert "| constant-10mbps | `chromium-gcc` |" in report


def test_a_file_that_is_not_a_webrtc_report_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "x.json"
    bad.write_text(json.dumps({"experiment": "occ", "runs": {}}))
    assert main(["eval", "webrtc", "--recorded", str(bad), "--out", str(tmp_path / "o")]) == 2
    assert "not an `octoric eval webrtc` result" in capsys.readouterr().err
    bad.write_text("[1, 2]")
    assert main(["eval", "webrtc", "--recorded", str(bad), "--out", str(tmp_path / "o")]) == 2
    assert "not a results JSON" in capsys.readouterr().err
    assert main(["eval", "webrtc", "--recorded", str(tmp_path / "none.json"),
                 "--out", str(tmp_path / "o")]) == 2  # fmt: skip
