"""The one Experiment shape (issue #40): every paper in one registry, `octoric eval NAME` with
the same options for each, `octoric eval report` refusing what it cannot rebuild, and the
harness's one percentile helper."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from octoric.cli import build_parser, main
from octoric.experiments.experiment import RunOptions, percentile
from octoric.experiments.registry import EXPERIMENTS

pytestmark = pytest.mark.unit


def test_every_paper_is_registered_with_the_same_options(tmp_path: Path) -> None:
    assert set(EXPERIMENTS) == {"occ", "dumbo", "morc", "ton22", "sec23", "webrtc"}
    parser = build_parser()
    for name in EXPERIMENTS:
        args = parser.parse_args(["eval", name, "--quick", "--seeds", "2", "--traces", "T",
                                  "--out", str(tmp_path), "--no-plots"])  # fmt: skip
        assert (args.quick, args.seeds, args.traces, args.out, args.no_plots) == (
            True, 2, "T", tmp_path, True), name  # fmt: skip
        default = parser.parse_args(["eval", name])
        assert default.out == Path(f"build/{name}-eval") and default.seeds is None, name


def test_seeds_default_to_the_experiments_and_one_when_quick() -> None:
    assert RunOptions(Path()).seeds_or(5) == 5
    assert RunOptions(Path(), quick=True).seeds_or(5) == 1
    assert RunOptions(Path(), quick=True, seeds=3).seeds_or(5) == 3


def test_bad_seeds_and_unknown_results_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["eval", "morc", "--seeds", "0", "--out", str(tmp_path / "m")]) == 2
    assert "--seeds must be >= 1" in capsys.readouterr().err
    assert not (tmp_path / "m").exists()
    (tmp_path / "results.json").write_text(json.dumps({"experiment": "nope"}))
    assert main(["eval", "report", str(tmp_path)]) != 0
    assert "no known experiment" in capsys.readouterr().err
    assert main(["eval", "report", str(tmp_path / "missing")]) != 0


def test_percentile() -> None:
    assert percentile([], 50) is None and percentile(np.zeros(0), 99) is None
    assert percentile([1, 2, 3, 4], 50) == 2.5
    assert percentile([0.0, 1.0], 33.3333) == 0.333 and percentile([0.0, 1.0], 33.3, 1) == 0.3
    assert percentile([0.0, 1.0], 100 / 3, None) == pytest.approx(1 / 3, abs=1e-12)


def test_one_percentile_helper() -> None:
    """The harness computes percentiles in one place (issue #40 found five copies)."""
    root = Path(__file__).resolve().parents[2] / "experiments"
    users = sorted(p.name for p in root.glob("*.py") if "np.percentile(" in p.read_text())
    assert users == ["experiment.py"]
