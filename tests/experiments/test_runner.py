"""Issue #45's runner: every `octoric eval NAME` runs its cases on a process pool, on a local
Ray cluster or in one process with the same results run by run; runs stream to runs.jsonl, a
re-run skips the finished ones (after SIGKILL or Ctrl-C, which stop every worker), a changed
option reuses none, runs marked `alone` run by themselves, failures are named with their case.

The grids are a toy Experiment of short real simulator runs (tests/testkit/toy_experiment.py)
and MORC's quick grid."""

from __future__ import annotations

import itertools
import json
import os
import pickle
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from testkit.listeners import process_tree
from testkit.toy_experiment import TOY, register_toy

from octoric.cli import main
from octoric.experiments import runner
from octoric.experiments.experiment import EXPERIMENTS, Case, RunOptions
from octoric.experiments.registry import EXPERIMENTS as PAPERS
from octoric.experiments.runner import RUNS, Progress, RunLog, run_key

pytestmark = pytest.mark.integration

TESTS = Path(__file__).resolve().parents[1]
# the toy runs' simulated seconds: long enough that a run in flight can be interrupted
SLOW = "8"


@pytest.fixture
def toy() -> Iterator[None]:
    """`octoric eval toy` for this test only (the registry lists the papers otherwise)."""
    register_toy()
    yield
    EXPERIMENTS.pop("toy", None)


def _eval(*args: str) -> int:
    return main(["eval", *args])


def _results(folder: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((folder / "results.json").read_text())
    return doc


def _same_runs(a: Path, b: Path) -> dict[str, Any]:
    """The two folders' results, which must be equal but for where they ran; b's runner."""
    x, y = _results(a), _results(b)
    runner = y.pop("runner")
    x.pop("runner")
    assert x == y
    return dict(runner)


def _records(folder: Path, kind: str = "run") -> list[dict[str, Any]]:
    return [r for r in RunLog(folder).records() if r["kind"] == kind]


@pytest.mark.slow  # a local Ray cluster starts in ~8 s
def test_a_toy_grid_is_the_same_on_the_pool_in_one_process_and_on_ray(
    tmp_path: Path, toy: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    serial, pool, ray = tmp_path / "serial", tmp_path / "pool", tmp_path / "ray"
    assert _eval("toy", "--serial", "--out", str(serial)) == 0
    assert _eval("toy", "--workers", "2", "--out", str(pool)) == 0
    # Ray's workers import the toy as the pool's do: from the tests folder
    monkeypatch.setenv("PYTHONPATH", f"{TESTS}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    assert _eval("toy", "--ray", "local", "--workers", "2", "--out", str(ray)) == 0
    assert _same_runs(serial, pool) == {"backend": "pool", "workers": 2, "address": None,
                                        "runs": 12, "resumed": 0}  # fmt: skip
    assert _same_runs(serial, ray)["backend"] == "ray"
    # run by run: every run's record holds the same output, and the runs ran in other processes
    by = {f.name: {r["key"]: r for r in _records(f)} for f in (serial, pool, ray)}
    assert set(by["serial"]) == set(by["pool"]) == set(by["ray"]) and len(by["serial"]) == 12
    for k, r in by["serial"].items():
        assert r["output"] == by["pool"][k]["output"] == by["ray"][k]["output"], r["case"]
    assert {r["pid"] for r in by["pool"].values()}.isdisjoint({os.getpid()})
    # the runs are real and differ with their inputs
    assert len({r["output"]["sha256"] for r in by["serial"].values()}) == 12
    assert "on a local process pool of 2 workers: 12 runs" in (pool / "report.md").read_text()
    assert "on a local Ray cluster with 2 CPUs" in (ray / "report.md").read_text()


@pytest.mark.slow  # ~12 s on 2 idle cores (make test's budget); the toy's resume test is fast
def test_morc_quick_gives_the_same_results_on_the_pool_as_in_one_process(tmp_path: Path) -> None:
    serial, pool = tmp_path / "serial", tmp_path / "pool"
    assert _eval("morc", "--quick", "--no-plots", "--serial", "--out", str(serial)) == 0
    assert _eval("morc", "--quick", "--no-plots", "--workers", "2", "--out", str(pool)) == 0
    assert _same_runs(serial, pool)["workers"] == 2
    # the report again from runs.jsonl alone: the same document and report
    doc, report = _results(pool), (pool / "report.md").read_text()
    (pool / "results.json").unlink()
    (pool / "report.md").unlink()
    assert _eval("report", str(pool)) == 0
    assert _results(pool) == doc and (pool / "report.md").read_text() == report


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")  # a zombie has ended; its reaper is init


def _interrupt(args: list[str], out: Path, sig: signal.Signals,
               after: int = 2) -> tuple[int, str, set[int]]:  # fmt: skip
    """`octoric eval toy ARGS` in its own process, sent ``sig`` once ``after`` runs finished;
    its exit status, its stderr and the processes it had started."""
    code = ("import sys; from testkit.toy_experiment import register_toy; register_toy(); "
            "from octoric.cli import main; sys.exit(main(sys.argv[1:]))")  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(TESTS)}
    cmd = [sys.executable, "-c", code, "eval", "toy", "--duration", SLOW, "--out", str(out)]

    # Ctrl-C's default action in the child, as at a terminal: a test run started as a
    # background job (`make test &` in a script) has SIGINT ignored, which a child inherits,
    # and Python then never raises KeyboardInterrupt
    def ctrl_c_default() -> None:
        signal.signal(signal.SIGINT, signal.SIG_DFL)

    p = subprocess.Popen([*cmd, *args], env=env, stderr=subprocess.PIPE, text=True,
                         preexec_fn=ctrl_c_default)  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while len(_records(out)) < after:
            assert p.poll() is None and time.monotonic() < deadline, "no runs finished"
            time.sleep(0.05)
        started = process_tree(p.pid) - {p.pid}
        p.send_signal(sig)
        _, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    return p.returncode, err, started


def _gone(pids: set[int], within_s: float = 20.0) -> set[int]:
    deadline = time.monotonic() + within_s
    while {p for p in pids if _alive(p)} and time.monotonic() < deadline:
        time.sleep(0.1)
    return {p for p in pids if _alive(p)}


@pytest.fixture(scope="module")
def whole(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The toy grid of slow runs, uninterrupted, in one process."""
    out = tmp_path_factory.mktemp("whole")
    register_toy()
    try:
        assert _eval("toy", "--duration", SLOW, "--serial", "--out", str(out)) == 0
    finally:
        EXPERIMENTS.pop("toy", None)
    yield out


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT], ids=["SIGKILL", "SIGINT"])
def test_a_killed_run_resumes_where_it_stopped(
    tmp_path: Path, toy: None, whole: Path, sig: signal.Signals
) -> None:
    cut = tmp_path / "cut"
    status, err, workers = _interrupt(["--workers", "2"], cut, sig)
    assert len(workers) >= 2  # the pool's processes
    assert _gone(workers) == set(), "a pool worker outlived the run"
    if sig == signal.SIGINT:
        assert status == 130 and "interrupted" in err and "same command resumes" in err
    else:
        assert status == -signal.SIGKILL
    before = {r["key"] for r in _records(cut)}
    assert 2 <= len(before) < 12, "the run was not stopped midway"
    assert not (cut / "results.json").exists()
    # the same command again: the finished runs are skipped, the rest run, nothing twice
    assert _eval("toy", "--duration", SLOW, "--workers", "2", "--out", str(cut)) == 0
    keys = [r["key"] for r in _records(cut)]
    assert len(keys) == len(set(keys)) == 12 and before < set(keys)
    assert _same_runs(whole, cut) == {"backend": "pool", "workers": 2, "address": None,
                                      "runs": 12, "resumed": len(before)}  # fmt: skip


@pytest.mark.slow
def test_ctrl_c_stops_a_local_ray_cluster(tmp_path: Path) -> None:
    status, err, started = _interrupt(["--ray", "local", "--workers", "2"], tmp_path, signal.SIGINT)
    assert status == 130 and "interrupted" in err, err[-3000:]
    assert len(started) >= 3  # Ray's GCS, raylet, workers, ...
    assert _gone(started) == set(), "a Ray process outlived the run"


def test_a_changed_option_or_code_reuses_no_run_and_more_seeds_reuse_the_first(
    tmp_path: Path, toy: None, capsys: pytest.CaptureFixture[str]
) -> None:
    out = str(tmp_path)
    assert _eval("toy", "--seeds", "1", "--serial", "--out", out) == 0
    assert _eval("toy", "--seeds", "2", "--serial", "--out", out) == 0
    assert "6 of 12 runs already in" in capsys.readouterr().err
    assert _results(tmp_path)["runner"]["resumed"] == 6
    assert _eval("toy", "--seeds", "2", "--duration", "2", "--serial", "--out", out) == 0
    assert "already in" not in capsys.readouterr().err
    assert len(_records(tmp_path)) == 6 + 6 + 12
    opts = RunOptions(tmp_path, extra={"duration": 1.0})
    code = runner.code_version()
    c = Case("runs", "static", "gcc", 1)
    key = run_key(TOY, c, opts, code)
    assert key == run_key(TOY, Case("runs", "static", "gcc", 1, "x"), opts, code)
    assert key != run_key(TOY, Case("runs", "static", "gcc", 2), opts, code)
    quick = RunOptions(tmp_path, quick=True, extra={"duration": 1.0})
    assert key != run_key(TOY, c, quick, code)
    assert key != run_key(TOY, c, opts, "other sources")


def test_failed_runs_are_named_and_retried_and_alone_runs_run_by_themselves(
    tmp_path: Path, toy: None, capsys: pytest.CaptureFixture[str]
) -> None:
    out = str(tmp_path)
    args = ["toy", "--workers", "2", "--alone", "fixed", "--out", out]
    assert _eval(*args, "--fail", "pbe") == 1
    err = capsys.readouterr().err
    failed = [line for line in err.splitlines() if line.startswith("[eval] FAILED")]
    assert len(failed) == 4 and all(len(line) <= 80 for line in err.splitlines())
    assert "[eval] FAILED static pbe seed 1: ToyError: pbe asked to fail" in failed
    assert "4 of 12 runs failed" in err and not (tmp_path / "results.json").exists()
    failures = _records(tmp_path, "failed")
    assert len(failures) == 4  # with where each failed, from the worker
    assert all("in run_case" in f["traceback"] and "ToyError" in f["traceback"] for f in failures)
    # --fail is an option of the runs (in their key): a run without it redoes all, alone
    # runs after the others, in this process, one at a time
    assert _eval(*args) == 0
    runs = _records(tmp_path)[8:]
    alone = [r for r in runs if r["case"]["scheme"] == "fixed"]
    rest = [r for r in runs if r["case"]["scheme"] != "fixed"]
    assert len(alone) == 4 and {r["pid"] for r in alone} == {os.getpid()}
    spans = sorted((r["started"], r["ended"]) for r in alone)
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(spans))
    assert min(s for s, _ in spans) >= max(r["ended"] for r in rest)


def test_progress_lines_fit_80_columns() -> None:
    class Lines(list[str]):
        def write(self, s: str) -> None:
            self.extend(x for x in s.splitlines() if x)

        def flush(self) -> None:
            pass

    lines = Lines()
    p = Progress(100, 40, lines)  # type: ignore[arg-type]
    p.finished("download 120 Mbit/s, 12 ms, 0.036 % cubic seed 1 " * 3)
    p.failed("x", "Traceback\nboom")
    assert lines[0].startswith("[eval] 41/100 ETA ") and len(lines[0]) == 80
    assert lines[1] == "[eval] FAILED x: Traceback"


def test_a_half_written_line_is_skipped_and_ended(tmp_path: Path) -> None:
    log = RunLog(tmp_path)
    log.append({"kind": "run", "key": "a", "output": 1})
    with log.path.open("a") as f:
        f.write('{"kind": "run", "key": "b", "out')  # the line a SIGKILL cut
    log.append({"kind": "run", "key": "c", "output": 3})
    assert set(log.finished()) == {"a", "c"}


def test_every_paper_pickles_for_the_workers() -> None:
    """The pool and Ray ship the experiment to their workers by reference to its class."""
    opts = RunOptions(Path("out"), quick=True)
    for name, exp in PAPERS.items():
        assert type(pickle.loads(pickle.dumps(exp))) is type(exp), name
        json.dumps(exp.run_options(opts))
        assert pickle.loads(pickle.dumps(opts)) == opts


def test_a_folder_without_finished_runs_is_refused(
    tmp_path: Path, toy: None, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _eval("toy", "--serial", "--fail", "gcc", "--out", str(tmp_path)) == 1
    capsys.readouterr()
    assert _eval("report", str(tmp_path)) != 0
    assert "4 of 12 runs not finished" in capsys.readouterr().err
    (tmp_path / RUNS).write_text("")
    assert _eval("report", str(tmp_path)) != 0


def test_a_ray_head_that_does_not_answer_is_refused_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as s:  # a port nothing listens on once closed
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = tmp_path / "out"
    assert _eval("morc", "--quick", "--ray", f"127.0.0.1:{port}", "--out", str(out)) == 1
    assert f"--ray 127.0.0.1:{port}: no Ray head answers there" in capsys.readouterr().err
    assert not out.exists()
