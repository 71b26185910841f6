"""The supervisor: start order, stop in reverse, a dying child ends the run as a failure."""

from __future__ import annotations

import asyncio
import io
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from octoric.config import load
from octoric.supervisor import ChildProcess, RunContext, Supervisor

pytestmark = pytest.mark.integration


class Recorder:
    def __init__(self, name: str, events: list[str]) -> None:
        self.name, self.events = name, events

    async def start(self, ctx: RunContext) -> None:
        self.events.append(f"start {self.name}")

    async def stop(self) -> None:
        self.events.append(f"stop {self.name}")

    def status(self) -> str:
        return f"{self.name} ok"

    def report(self) -> dict[str, Any]:
        return {"ok": True}

    def failed(self) -> str | None:
        return None


def _ctx(tmp_path: Path, duration: float | None) -> RunContext:
    return RunContext(config=load(overrides=[f"duration={duration}"]), run_dir=tmp_path)


def test_order_and_duration(tmp_path: Path) -> None:
    events: list[str] = []
    comps = [Recorder("a", events), Recorder("b", events)]
    buf = io.StringIO()
    outcome = asyncio.run(Supervisor(_ctx(tmp_path, 0.3), comps, stream=buf).run())
    assert outcome.ok and outcome.reason == "duration"
    assert events == ["start a", "start b", "stop b", "stop a"]
    assert "a ok | b ok" in buf.getvalue()


def test_dying_child_fails_the_run_and_others_stop(tmp_path: Path) -> None:
    events: list[str] = []
    sleeper = ChildProcess("sleeper", [sys.executable, "-c", "import time; time.sleep(60)"])
    dier = ChildProcess("dier", [sys.executable, "-c", "import sys; sys.exit(3)"])
    comps = [Recorder("a", events), sleeper, dier]
    outcome = asyncio.run(Supervisor(_ctx(tmp_path, 30), comps, stream=io.StringIO()).run())
    assert not outcome.ok
    assert "dier exited with code 3" in outcome.reason
    assert events == ["start a", "stop a"]
    assert sleeper.proc is not None
    with pytest.raises(ProcessLookupError):
        os.kill(sleeper.proc.pid, 0)


def test_failed_start_stops_what_started(tmp_path: Path) -> None:
    events: list[str] = []

    class Broken(Recorder):
        async def start(self, ctx: RunContext) -> None:
            raise RuntimeError("no port")

    comps = [Recorder("a", events), Broken("b", events), Recorder("c", events)]
    outcome = asyncio.run(Supervisor(_ctx(tmp_path, 30), comps, stream=io.StringIO()).run())
    assert outcome.reason == "failure: b failed to start: no port"
    # b is asked to clean up whatever it had started; c never starts
    assert events == ["start a", "stop b", "stop a"]


def _counting(counter: Path, then: str) -> str:
    """A child script that counts its starts in ``counter`` (``n``), then runs ``then``."""
    return (
        "import pathlib, sys, time\n"
        f"p = pathlib.Path({str(counter)!r})\n"
        "n = int(p.read_text()) + 1 if p.exists() else 1\n"
        "p.write_text(str(n))\n"
        f"{then}\n"
    )


def test_child_is_restarted_until_restarts_are_spent(tmp_path: Path) -> None:
    counter = tmp_path / "starts"
    script = _counting(counter, "sys.exit(1) if n <= 2 else time.sleep(60)")
    flaky = ChildProcess("flaky", [sys.executable, "-c", script], max_restarts=2, backoff_s=0.05)
    outcome = asyncio.run(Supervisor(_ctx(tmp_path, 2.0), [flaky], stream=io.StringIO()).run())
    assert outcome.ok, outcome.reason  # two crashes, two restarts, then it stayed up
    assert counter.read_text() == "3" and flaky.restarts == 2

    counter.unlink()
    script_always_fails = "import sys; sys.exit(4)"
    dead = ChildProcess(
        "dead", [sys.executable, "-c", script_always_fails], max_restarts=1, backoff_s=0.05
    )
    outcome = asyncio.run(Supervisor(_ctx(tmp_path, 30), [dead], stream=io.StringIO()).run())
    assert "dead exited with code 4" in outcome.reason and dead.restarts == 1


def test_restart_budget_is_a_rate_not_a_lifetime_cap(tmp_path: Path) -> None:
    """A child that dies now and then is restarted every time; one that dies faster than the
    budget allows fails the run (issue #17: the budget was a lifetime cap)."""
    # dies after 0.4 s, 5 times: 4 restarts, never 2 within any 0.3 s window
    counter = tmp_path / "starts"
    script = _counting(counter, "time.sleep(0.4)\nsys.exit(1) if n <= 5 else time.sleep(60)")
    slow = ChildProcess(
        "slow", [sys.executable, "-c", script], max_restarts=1, backoff_s=0.05,
        restart_window_s=0.3,
    )  # fmt: skip
    outcome = asyncio.run(Supervisor(_ctx(tmp_path, 6.0), [slow], stream=io.StringIO()).run())
    assert outcome.ok, outcome.reason
    assert slow.restarts == 5 and counter.read_text() == "6"

    fast = ChildProcess(
        "fast", [sys.executable, "-c", "import sys; sys.exit(5)"], max_restarts=2,
        backoff_s=0.05, restart_window_s=30.0,
    )  # fmt: skip
    outcome = asyncio.run(Supervisor(_ctx(tmp_path, 30), [fast], stream=io.StringIO()).run())
    assert not outcome.ok and "fast exited with code 5" in outcome.reason
    assert "2 restart(s) in 30 s spent" in outcome.reason and fast.restarts == 2


def test_first_restart_is_immediate_repeats_back_off(tmp_path: Path) -> None:
    """A one-off crash is restarted at once (the soak's recovery time, issue #17); a child that
    dies again within the window waits ``backoff_s`` before each further start."""
    starts = tmp_path / "starts"
    script = (
        "import pathlib, sys, time\n"
        f"p = pathlib.Path({str(starts)!r})\n"
        "old = p.read_text() if p.exists() else ''\n"
        "p.write_text(old + repr(time.monotonic()) + '\\n')\n"
        "sys.exit(1) if old.count('\\n') < 2 else time.sleep(60)\n"
    )
    child = ChildProcess("crashy", [sys.executable, "-c", script], max_restarts=3, backoff_s=1.5)
    outcome = asyncio.run(Supervisor(_ctx(tmp_path, 5.0), [child], stream=io.StringIO()).run())
    assert outcome.ok, outcome.reason
    t = [float(x) for x in starts.read_text().split()]
    assert len(t) == 3 and child.restarts == 2
    assert t[1] - t[0] < 1.0, f"first restart after {t[1] - t[0]:.2f} s"
    assert t[2] - t[1] >= 1.5, f"second restart after {t[2] - t[1]:.2f} s"


def test_live_status_fits_an_80_column_terminal() -> None:
    """On a terminal the status is a few lines redrawn in place, each cut to the width: a
    320-character component status does not wrap at 80 columns (issue #16)."""
    import logging

    from rich.console import Console

    from octoric.supervisor import StatusLine

    out = io.StringIO()
    console = Console(file=out, width=80, force_terminal=True, color_system=None)
    st = StatusLine(out, live=True, interval=0.0, console=console)
    long = "sim 56.1s 3 cells 8 UEs, E2 1/1 up; ABW/cap Mbit/s " + " ".join(
        f"100{i} 12.3/45.6" for i in range(20)
    )
    assert len(long) > 300
    st.show(["[octoric   12.0s/60s] Ctrl-C stops", "redis :6379 up", long], force=True)
    logging.getLogger("octoric.test").warning("a log line goes above the status")
    st.show(["[octoric   13.0s/60s] Ctrl-C stops", "redis :6379 up", long], force=True)
    st.close()
    screen = out.getvalue()
    lines = [ln for ln in screen.replace("\r", "\n").split("\n") if ln.strip()]
    import re

    visible = [re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", ln) for ln in lines]
    assert max(len(v) for v in visible) <= 80, max(visible, key=len)
    assert any(v.startswith("sim 56.1s") and v.rstrip().endswith("…") for v in visible)
    assert any("13.0s/60s" in v for v in visible)
    # not a terminal: one plain line (for logs and pipes)
    plain = io.StringIO()
    StatusLine(plain, live=True, interval=0.0).show(["head", "a", "b"], force=True)
    assert plain.getvalue() == "head | a | b\n"


SPARE_SCRIPT = """
import os, pathlib, sys, time
from octoric.spare import wait_if_spare
log = pathlib.Path(sys.argv[1])
def say(what):
    with log.open("a") as f:
        f.write(f"{what} {os.getpid()} {time.monotonic()}\\n")
wait_if_spare(lambda: say("preloaded"))
say("active")
time.sleep(60)
"""


def _events(path: Path) -> list[tuple[str, int, float]]:
    if not path.exists():
        return []
    return [
        (w, int(p), float(t))
        for w, p, t in (ln.split() for ln in path.read_text().split("\n") if ln)
    ]


async def _until(cond: Any, timeout: float = 15.0) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not cond():
        assert loop.time() < end, "timed out"
        await asyncio.sleep(0.02)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"


def test_restart_activates_a_warm_spare(tmp_path: Path) -> None:
    """With ``spare=True`` a restart takes a process already past its imports (issue #17's
    recovery time): the spare does its preload before the crash, only its activation after;
    a spare never activated never runs its program; stop leaves no process behind; a spare
    that died while waiting makes the next restart a cold one, not a failure."""
    log = tmp_path / "events"
    argv = [sys.executable, "-c", SPARE_SCRIPT, str(log)]

    async def scenario() -> None:
        child = ChildProcess("sp", argv, max_restarts=5, spare=True, spare_delay_s=0.2)
        await child.start(_ctx(tmp_path, 60))
        await _until(lambda: any(w == "active" for w, _, _ in _events(log)))
        first = next(p for w, p, _ in _events(log) if w == "active")
        assert int((tmp_path / "sp.pid").read_text()) == first
        # the next spare: preloaded, waiting, not active
        await _until(lambda: any(w == "preloaded" and p != first for w, p, _ in _events(log)))
        spare = next(p for w, p, _ in _events(log) if w == "preloaded" and p != first)
        await asyncio.sleep(0.3)
        assert ("active", spare) not in {(w, p) for w, p, _ in _events(log)}
        loop = asyncio.get_running_loop()
        t_kill = loop.time()
        os.kill(first, 9)
        await _until(lambda: ("active", spare) in {(w, p) for w, p, _ in _events(log)})
        t_active = next(t for w, p, t in _events(log) if (w, p) == ("active", spare))
        t_pre = next(t for w, p, t in _events(log) if (w, p) == ("preloaded", spare))
        assert t_pre < t_kill < t_active and t_active - t_kill < 1.0
        assert child.spares_used == 1 and child.restarts == 1
        assert int((tmp_path / "sp.pid").read_text()) == spare
        # the spare after that dies while waiting: the next restart starts cold and works
        await _until(lambda: len({p for w, p, _ in _events(log) if w == "preloaded"}) == 3)
        third = [p for w, p, _ in _events(log) if w == "preloaded"][-1]
        os.kill(third, 9)
        await asyncio.sleep(0.1)
        os.kill(spare, 9)
        await _until(lambda: sum(w == "active" for w, _, _ in _events(log)) == 3)
        assert child.spares_used == 1 and child.restarts == 2
        live = int((tmp_path / "sp.pid").read_text())
        await _until(lambda: child._spare is not None)
        waiting = child._spare[0].pid if child._spare else 0
        await child.stop()
        assert not _alive(live) and not _alive(waiting)
        assert child.report()["warm_spares_used"] == 1

    asyncio.run(scenario())
