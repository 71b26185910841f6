"""The OCC engine's benchmark entry points run and report sane figures."""

from __future__ import annotations

import pytest

from octoric.xapps.occ import bench, kernel

pytestmark = pytest.mark.unit


def test_bench_engine_reports_ue_samples_per_s() -> None:
    out = bench.bench_engine(quick=True)
    assert set(out) == {"ue_samples_per_s"}
    assert out["ue_samples_per_s"] > 0


def test_benchmarks_quick_row() -> None:
    (b,) = bench.BENCHMARKS
    path, row = b.run(True)
    # RIC indication bytes -> ABW update: native decode against the Python decoder, same run
    assert path.unit == "UE-samples/s" and path.value > 0
    assert path.baseline_value is not None and path.baseline_value > 0
    assert path.ratio is not None and path.ratio > 1.0
    assert row.unit == "UE-samples/s" and row.value > 0
    assert row.baseline_value is not None and row.baseline_value > 0
    if kernel.compiled():  # without numba the kernel is plain Python, as slow as the reference
        assert row.ratio is not None and row.ratio > 1.0
