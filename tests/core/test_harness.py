"""The harness itself: bench report rendering and `make test`'s treatment of 'no tests'."""

from __future__ import annotations

import subprocess
import sys

import pytest

from octoric import bench

pytestmark = pytest.mark.unit


def test_ratio_reads_as_better_whatever_the_unit() -> None:
    thr = bench.BenchResult("t", 200.0, "msg/s", baseline_name="b", baseline_value=100.0)
    lat = bench.BenchResult("l", 50.0, "us", higher_is_better=False, baseline_value=100.0)
    assert thr.ratio == 2.0 and lat.ratio == 2.0
    assert bench.BenchResult("n", 1.0, "x").ratio is None


def test_report_has_method_baseline_and_missed_targets() -> None:
    rows = [
        bench.BenchResult(
            "decode",
            1e6,
            "UE-samples/s",
            baseline_name="asn1tools",
            baseline_value=2.5e5,
            target=">= 1000000",
            target_met=False,
            samples=5,
            note="median of 5",
        )
    ]
    md = bench.render_markdown({"e2sm decode": rows}, {"rmr vs real": "REAL_LIBRMR not set"})
    assert "## Method" in md and "same run" in md
    assert "| decode | 1,000,000 | UE-samples/s | asn1tools | 250,000 | 4 |" in md
    assert "**no**" in md and "REAL_LIBRMR not set" in md


def test_unknown_bench_name_fails() -> None:
    assert bench.main(["no-such-bench"]) == 2


def test_pytest_no_tests_is_a_failure() -> None:
    # pytest exits 5 when nothing was collected; `make test` must not call that green.
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "octoric.testrun",
            "--no-native",
            "-k",
            "zzz_matches_nothing",
            "tests/core/test_harness.py",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 1
    assert "summary: 0 passed, 1 failed" in r.stdout


def test_writing_one_benchmark_keeps_the_others(tmp_path: object) -> None:
    from pathlib import Path

    out = Path(str(tmp_path)) / "b.md"
    a = {"alpha": [bench.BenchResult("x", 1.0, "u")]}
    out.write_text(bench.render_markdown(a | {"beta": [bench.BenchResult("y", 2.0, "u")]}, {}))
    kept = {
        t: s for t, s in bench._sections(out.read_text()).items() if t not in ("Method", "alpha")
    }
    md = bench.render_markdown({"alpha": [bench.BenchResult("x", 3.0, "u")]}, {}, kept)
    assert "## beta" in md and "| y | 2 |" in md  # the other section survives as it was
    assert "| x | 3 |" in md and "| x | 1 |" not in md and md.count("## alpha") == 1
