"""Acceptance 8: bad scenario and trace files name the file and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from octoric.cli import main
from octoric.sim.channels.traces import read_cqi_csv, read_mahimahi
from octoric.sim.cli import ric_endpoint
from octoric.sim.errors import ScenarioError, TraceError
from octoric.sim.scenario import load

pytestmark = pytest.mark.unit


def test_mahimahi_bad_line(tmp_path: Path) -> None:
    p = tmp_path / "bad.down"
    p.write_text("1\n2\nthree\n4\n")
    with pytest.raises(TraceError, match=rf"{p}:3: .*integer"):
        read_mahimahi(p)


def test_mahimahi_decreasing_and_empty(tmp_path: Path) -> None:
    p = tmp_path / "dec.down"
    p.write_text("5\n7\n6\n")
    with pytest.raises(TraceError, match=rf"{p}:3: "):
        read_mahimahi(p)
    e = tmp_path / "empty.down"
    e.write_text("\n")
    with pytest.raises(TraceError, match="empty"):
        read_mahimahi(e)
    with pytest.raises(TraceError, match="cannot read"):
        read_mahimahi(tmp_path / "missing.down")


def test_cqi_csv_errors(tmp_path: Path) -> None:
    p = tmp_path / "c.csv"
    p.write_text("Timestamp,CQI\n1,12\n2,-\n3,19\n")
    with pytest.raises(TraceError, match=rf"{p}:4: CQI must be in 0..15"):
        read_cqi_csv(p)
    p.write_text("Timestamp,RSRP\n1,-90\n")
    with pytest.raises(TraceError, match=rf"{p}:1: no 'CQI' column"):
        read_cqi_csv(p)
    p.write_text("Timestamp,CQI\n1,-\n2,9\n3,-\n")
    assert read_cqi_csv(p).cqi.tolist() == [9, 9, 9]


def test_scenario_unknown_key_names_line(tmp_path: Path) -> None:
    p = tmp_path / "s.yaml"
    p.write_text("duration_s: 5\nran:\n  n_prb: 51\n  schedular: rr\n")
    with pytest.raises(ScenarioError, match=rf"{p}:4 \(ran.schedular\): unknown key"):
        load(str(p))


def test_scenario_bad_type_in_list_names_line(tmp_path: Path) -> None:
    p = tmp_path / "s.yaml"
    p.write_text("ues:\n  - count: 2\n    channel:\n      kind: fading\n      mean_snr_db: high\n")
    with pytest.raises(ScenarioError, match=rf"{p}:5 .*expected a number"):
        load(str(p))


def test_scenario_yaml_syntax_error(tmp_path: Path) -> None:
    p = tmp_path / "s.yaml"
    p.write_text("duration_s: 5\nran: [1, 2\n")
    with pytest.raises(ScenarioError, match=rf"{p}:\d+: invalid YAML"):
        load(str(p))


def test_scenario_semantic_error_names_line(tmp_path: Path) -> None:
    p = tmp_path / "s.yaml"
    p.write_text("ran:\n  slot_ms: 0.25\n")
    with pytest.raises(ScenarioError, match=rf"{p}:2 \(ran.slot_ms\)"):
        load(str(p))


def test_cli_reports_bad_trace_without_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    p = tmp_path / "bad.down"
    p.write_text("1\nx\n")
    rc = main(["sim", "run", "--scenario", f"trace:{p}", "--duration", "1", "--quiet"])
    assert rc == 1
    err = capsys.readouterr().err
    assert f"{p}:2:" in err and "Traceback" not in err


def test_live_mode_defaults_to_the_embedded_ric(capsys: pytest.CaptureFixture[str]) -> None:
    """`sim run --live` without --ric-e2 uses the embedded RIC's E2 endpoint (issue #11)."""
    assert ric_endpoint(None) == ("127.0.0.1", 36421)
    assert ric_endpoint("10.0.0.5:36422") == ("10.0.0.5", 36422)
    with pytest.raises(SystemExit):
        main(["sim", "run", "--help"])
    assert "127.0.0.1:36421" in capsys.readouterr().out
    assert main(["sim", "run", "--live", "--ric-e2", "nonsense"]) == 1
    assert "--ric-e2 must be HOST:PORT, got 'nonsense'" in capsys.readouterr().err


def test_full_yaml_scenario_runs(tmp_path: Path) -> None:
    p = tmp_path / "two.yaml"
    p.write_text(
        "name: two\nduration_s: 3\nran: {cells: 2, n_prb: 51, scheduler: rr, tdd: DDDSU}\n"
        "ues:\n  - count: 2\n    cell: 1\n"
        "    channel: {kind: pulse, high_mbps: 8, low_mbps: 2, switch_s: 1}\n"
        "    flows: [{traffic: video, scheme: fixed, rate_mbps: 1.0}]\n"
        "  - channel: {kind: constant, rate_mbps: 20}\n    flows: [{traffic: backlogged}]\n"
    )
    out = tmp_path / "o.json"
    assert main(["sim", "run", "--scenario", str(p), "--json", str(out), "--quiet"]) == 0


def test_live_outputs_in_missing_folders_are_created(tmp_path: Path) -> None:
    """issue #16: docs/sim.md's live command writes build/sim/status.json; on a fresh clone
    build/sim/ does not exist, and every status write failed (a warning each second)."""
    from octoric.sim.live import LiveOptions, LiveSim

    out = tmp_path / "build" / "sim"
    opts = LiveOptions(ric_host="127.0.0.1", ric_port=9, status_path=out / "status.json",
                       series_path=out / "series.jsonl",
                       handover_log=out / "handovers.jsonl")  # fmt: skip
    sim = LiveSim(load("multi-ue"), 1, opts)
    sim.write_status()
    assert (out / "status.json").is_file() and (out / "series.jsonl").is_file()
