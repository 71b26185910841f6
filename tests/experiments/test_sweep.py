"""Issue #20's sweep: 100 simulator runs on the local process pool and on a local Ray cluster
give identical results run by run (same seeds), and the comparison notices a difference."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from octoric.cli import main
from octoric.experiments import sweep as sw

pytestmark = pytest.mark.integration


@pytest.mark.slow  # ~40 s: 200 runs and a local Ray cluster (test_runner.py's Ray tests: slow too)
def test_a_100_run_sweep_is_identical_on_the_pool_and_on_ray(tmp_path: Path) -> None:
    pool, ray = tmp_path / "pool.json", tmp_path / "ray.json"
    assert main(["eval", "sweep", "--runs", "100", "--backend", "pool", "--out", str(pool)]) == 0
    assert main(["eval", "sweep", "--runs", "100", "--backend", "ray", "--out", str(ray),
                 "--compare", str(pool)]) == 0  # fmt: skip
    a, b = json.loads(pool.read_text()), json.loads(ray.read_text())
    assert len(a["runs"]) == len(b["runs"]) == 100 and sw.compare(a, b) == []
    # the runs are real and differ with their inputs: 100 distinct results
    assert len({r["sha256"] for r in a["runs"]}) == 100
    assert {r["seed"] for r in a["runs"]} == {1, 2, 3, 4}
    # a changed result is caught
    c = copy.deepcopy(b)
    c["runs"][7]["sha256"] = "0" * 64
    assert sw.compare(a, c) == [f"run 7 ({c['runs'][7]['scenario']} {c['runs'][7]['scheme']} "
                                f"seed {c['runs'][7]['seed']}): results differ"]  # fmt: skip


def test_the_same_spec_gives_the_same_result_in_one_process() -> None:
    spec = sw.grid(3, 2.0)[2]
    assert sw.run_spec(spec)["sha256"] == sw.run_spec(spec)["sha256"]
