"""OCTORIC_RT_PRIORITY: SCHED_FIFO for the latency path, opt-in (octoric/realtime.py)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from octoric import realtime

pytestmark = pytest.mark.unit


def test_priority_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(realtime.ENV, raising=False)
    assert realtime.priority_from_env() is None
    for raw, want in (("0", None), ("1", 1), (" 50 ", 50), ("99", 99)):
        monkeypatch.setenv(realtime.ENV, raw)
        assert realtime.priority_from_env() == want
    for bad in ("100", "-1", "high", "1.5"):
        monkeypatch.setenv(realtime.ENV, bad)
        with pytest.raises(ValueError, match="SCHED_FIFO priority 1-99"):
            realtime.priority_from_env()
        assert realtime.apply_from_env("test") is None  # said in the log, not raised


_CHILD = """
import os, threading
from octoric import realtime
got = realtime.apply_from_env("child")
seen = []
t = threading.Thread(target=lambda: seen.append(os.sched_getscheduler(0)))
t.start(); t.join()
print(got, os.sched_getscheduler(0) == os.SCHED_FIFO, seen[0] == os.SCHED_FIFO)
"""


def _child(code: str, priority: str) -> list[str]:
    """What a Python child running ``code`` under ``OCTORIC_RT_PRIORITY=priority`` prints."""
    if os.geteuid() != 0:
        pytest.skip("SCHED_FIFO needs CAP_SYS_NICE (CI runs as root)")
    env = {**os.environ, realtime.ENV: priority}
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=60, check=True).stdout.split()  # fmt: skip


def test_the_process_and_its_later_threads_run_sched_fifo() -> None:
    assert _child(_CHILD, "1") == ["1", "True", "True"]
    assert _child(_CHILD, "0") == ["None", "False", "False"]


_BACKGROUND = """
import os, threading
from octoric import realtime
realtime.apply_from_env("child")
seen = []
def work():
    changed = realtime.background_thread()
    nice = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    seen.append((changed, os.sched_getscheduler(0) == os.SCHED_OTHER, nice))
t = threading.Thread(target=work)
t.start(); t.join()
print(seen[0][0], seen[0][1], os.sched_getscheduler(0) == os.SCHED_FIFO, seen[0][2])
"""


def test_a_background_thread_leaves_sched_fifo_and_only_itself() -> None:
    # the thread left it (and is niced); the main thread kept it
    assert _child(_BACKGROUND, "1") == ["True", "True", "True", str(realtime.BACKGROUND_NICE)]
    assert _child(_BACKGROUND, "0")[:3] == ["False", "True", "False"]  # nothing to leave


_FREEZE = """
import gc, os
from octoric import realtime
import octoric.e2sm.codec  # a start-up heap: pycrate's generated types
n = realtime.freeze_startup_heap()
print(n > 10000, gc.get_freeze_count() > 10000, len(gc.get_objects()) < 10000)
"""


def test_the_startup_heap_is_frozen_unless_switched_off() -> None:
    env = {**os.environ}
    env.pop("OCTORIC_GC_FREEZE", None)
    out = subprocess.run([sys.executable, "-c", _FREEZE], env=env, capture_output=True,
                         text=True, timeout=60, check=True).stdout.split()  # fmt: skip
    assert out == ["True", "True", "True"]
    env["OCTORIC_GC_FREEZE"] = "0"
    out = subprocess.run([sys.executable, "-c", _FREEZE], env=env, capture_output=True,
                         text=True, timeout=60, check=True).stdout.split()  # fmt: skip
    assert out == ["False", "False", "False"]


def test_another_process_is_granted_the_priority(monkeypatch: pytest.MonkeyPatch) -> None:
    """redis-server cannot apply it itself: the run grants it (octoric/runner.py)."""
    if os.geteuid() != 0:
        pytest.skip("SCHED_FIFO needs CAP_SYS_NICE (CI runs as root)")
    proc = subprocess.Popen(["sleep", "30"])
    try:
        monkeypatch.delenv(realtime.ENV, raising=False)
        assert realtime.grant(proc.pid, "sleep") is None
        assert os.sched_getscheduler(proc.pid) == os.SCHED_OTHER
        monkeypatch.setenv(realtime.ENV, "2")
        assert realtime.grant(proc.pid, "sleep") == 2
        assert os.sched_getscheduler(proc.pid) == os.SCHED_FIFO
        assert os.sched_getparam(proc.pid).sched_priority == 2
    finally:
        proc.kill()
        proc.wait()


_RESET = """
import os, subprocess, sys
from octoric import realtime
realtime.apply_from_env("child", reset_on_fork=True)
kid = subprocess.run([sys.executable, "-c", "import os; print(os.sched_getscheduler(0))"],
                     capture_output=True, text=True, check=True).stdout.strip()
print(os.sched_getscheduler(0) & ~os.SCHED_RESET_ON_FORK == os.SCHED_FIFO,
      int(kid) == os.SCHED_OTHER)
"""


def test_a_supervisors_priority_is_not_passed_to_the_processes_it_starts() -> None:
    assert _child(_RESET, "1") == ["True", "True"]
