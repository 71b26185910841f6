"""No process outlives its run: what ends a run's children and grandchildren when its
supervisor dies, and what finds and ends an earlier run's leftovers (Linux only, /proc).

Three layers, each covering what the one before cannot (docs/running.md, "Stopping"):

1. **PR_SET_PDEATHSIG.** Every child the supervisor starts asks the kernel for SIGKILL when its
   parent dies (``die_with_parent``, run between fork and exec), so kill -9, an OOM kill or a
   closed terminal take the children down at once. The setting survives exec but not fork, and
   it fires when the *thread* that forked exits: the supervisor forks from its event loop's
   thread, which lives as long as the run.
2. **A marker, sessions and a watchdog.** Every child's environment carries ``OCTORIC_RUN``
   (the supervisor's pid, its start time and a nonce) and ``OCTORIC_RUN_DIR``; a child's own
   children (the handover xApp's webhook worker, a redis-server a child starts) inherit both.
   Each child also leads a session of its own, which its children stay in unless they leave
   it. A small watchdog process (this module as a program, in its own session so a terminal's
   signals miss it) reads from a pipe only the supervisor holds which children are running;
   when the pipe closes, however the supervisor ended, it SIGKILLs every process that carries
   the run's marker or is in one of those children's sessions. The two overlap on purpose: a
   program that sets its process title (redis-server) overwrites the environment /proc shows,
   one that calls setsid() leaves the session; only one that does both escapes.
3. **A later start or ``octoric stop``** scans /proc for marked processes: those whose
   supervisor is gone (pid and start time no longer match) are provably an earlier run's
   orphans and are ended; a live run's are named. The marker, read from the process itself,
   is the proof: a pid reused by another program does not carry it, so it is never killed.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

RUN_ENV = "OCTORIC_RUN"  # <supervisor pid>.<its start time in clock ticks>.<nonce>
RUN_DIR_ENV = "OCTORIC_RUN_DIR"
SUPERVISOR_FILE = "supervisor.pid"  # in the run folder: "<pid> <start ticks>" of `octoric run`
PR_SET_PDEATHSIG = 1

_PROC = Path("/proc")


def _load_prctl() -> Callable[..., int] | None:
    # resolved once, in the parent: the child between fork and exec should only call it
    if not sys.platform.startswith("linux"):
        return None
    try:
        fn = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    fn.restype = ctypes.c_int
    return fn


_prctl = _load_prctl()


def die_with_parent(sig: int = signal.SIGKILL) -> Callable[[], None] | None:
    """A ``preexec_fn``: the child gets ``sig`` when the process calling this dies. None where
    the kernel has no PR_SET_PDEATHSIG (not Linux)."""
    prctl = _prctl
    if prctl is None:
        return None
    parent, signum = os.getpid(), int(sig)

    def preexec() -> None:
        prctl(PR_SET_PDEATHSIG, signum, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before prctl: no signal will come
            os.kill(os.getpid(), signum)

    return preexec


@dataclass(frozen=True)
class _Stat:
    state: str
    pgrp: int
    session: int
    ticks: int  # start time, clock ticks since boot: with the pid, names one process

    @property
    def exited(self) -> bool:
        # a zombie holds no port or memory, only its exit status for its parent
        return self.state in ("Z", "X")


def _stat(pid: int) -> _Stat | None:
    try:
        data = (_PROC / str(pid) / "stat").read_bytes()
    except OSError:
        return None
    f = data[data.rindex(b")") + 2 :].split()  # comm may hold spaces and parentheses
    return _Stat(f[0].decode(), int(f[2]), int(f[3]), int(f[19]))  # fields 3, 5, 6, 22


def start_ticks(pid: int) -> int | None:
    st = _stat(pid)
    return None if st is None else st.ticks


def is_running(pid: int, ticks: int) -> bool:
    """True while process ``pid`` is the one that started at ``ticks`` and has not exited."""
    st = _stat(pid)
    return st is not None and st.ticks == ticks and not st.exited


def new_marker() -> str:
    """The marker of a run supervised by this process."""
    pid = os.getpid()
    return f"{pid}.{start_ticks(pid) or 0}.{secrets.token_hex(4)}"


def supervisor_of(marker: str) -> tuple[int, int]:
    pid, ticks, _ = marker.split(".", 2)
    return int(pid), int(ticks)


@dataclass(frozen=True)
class Proc:
    pid: int
    marker: str
    run_dir: str
    cmdline: str

    def __str__(self) -> str:
        return f"pid {self.pid} ({self.cmdline})"


def _cmdline(pid: int) -> str:
    try:
        raw = (_PROC / str(pid) / "cmdline").read_bytes()
    except OSError:
        return "?"
    text = raw.rstrip(b"\0").replace(b"\0", b" ").decode(errors="replace")
    return text if len(text) <= 100 else text[:97] + "..."


def _marked(pid: int) -> Proc | None:
    try:  # another user's process: not readable, and not ours
        env = (_PROC / str(pid) / "environ").read_bytes()
    except OSError:
        return None
    marker = run_dir = ""
    for item in env.split(b"\0"):
        if item.startswith(b"OCTORIC_RUN="):
            marker = item[len(b"OCTORIC_RUN=") :].decode(errors="replace")
        elif item.startswith(b"OCTORIC_RUN_DIR="):
            run_dir = item[len(b"OCTORIC_RUN_DIR=") :].decode(errors="replace")
    if marker.count(".") < 2:
        return None
    return Proc(pid, marker, run_dir, _cmdline(pid))


def marked(marker: str | None = None) -> list[Proc]:
    """Every process (but this one) that carries a run's marker, or ``marker`` only. An exited
    process's environment reads empty, so zombies are not listed."""
    if not _PROC.is_dir():
        return []
    own = os.getpid()
    out = []
    for name in os.listdir(_PROC):
        if not name.isdigit() or int(name) == own:
            continue
        p = _marked(int(name))
        if p is not None and (marker is None or p.marker == marker):
            out.append(p)
    return sorted(out, key=lambda p: p.pid)


def kill_run(marker: str, sessions: Collection[int] = (), sig: int = signal.SIGKILL) -> list[Proc]:
    """Signal every process that carries ``marker`` (read from each process just before) or is
    in one of ``sessions`` (the sessions, or process groups, of the run's running children:
    their ids cannot go to another program while a process is in them)."""
    if not _PROC.is_dir():
        return []
    own, found = os.getpid(), []
    for name in os.listdir(_PROC):
        if not name.isdigit() or (pid := int(name)) == own:
            continue
        p = _marked(pid)
        if p is None or p.marker != marker:
            st = _stat(pid) if sessions else None
            if st is None or st.exited or not (st.session in sessions or st.pgrp in sessions):
                continue
            p = Proc(pid, marker, "", _cmdline(pid))
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)
        found.append(p)
    return found


def sweep(marker: str, sessions: Collection[int] = (), timeout: float = 2.0) -> list[Proc]:
    """SIGKILL every process of the run (``kill_run``) until two passes in a row find none (a
    dying process may still be starting one) or ``timeout`` passes; those it killed."""
    killed: dict[int, Proc] = {}
    deadline, quiet = time.monotonic() + timeout, 0
    while quiet < 2 and time.monotonic() < deadline:
        found = kill_run(marker, sessions)
        killed.update((p.pid, p) for p in found)
        quiet = 0 if found else quiet + 1
        time.sleep(0.02)
    return sorted(killed.values(), key=lambda p: p.pid)


@dataclass
class Run:
    """The processes that carry one marker, and whether their supervisor is still running."""

    marker: str
    run_dir: str
    procs: list[Proc] = field(default_factory=list)

    @property
    def supervisor_pid(self) -> int:
        return supervisor_of(self.marker)[0]

    def supervisor_alive(self) -> bool:
        return is_running(*supervisor_of(self.marker))

    def is_octoric_run(self) -> bool:
        """True when the supervisor is an ``octoric run`` (or ``ric up``) that recorded itself
        in its run folder, not a program that embeds the supervisor (a test)."""
        pid, ticks = supervisor_of(self.marker)
        try:
            text = (Path(self.run_dir) / SUPERVISOR_FILE).read_text().split()
        except OSError:
            return False
        return text == [str(pid), str(ticks)]

    def describe(self) -> str:
        pid = self.supervisor_pid
        state = "running" if self.supervisor_alive() else "gone"
        head = f"run {self.run_dir or '?'} (supervisor pid {pid}, {state}):"
        return "\n".join([head, *(f"  {p}" for p in self.procs)])


def find_runs(exclude: str | None = None) -> list[Run]:
    runs: dict[str, Run] = {}
    for p in marked():
        if p.marker != exclude:
            runs.setdefault(p.marker, Run(p.marker, p.run_dir)).procs.append(p)
    return list(runs.values())


def write_record(run_dir: Path) -> None:
    """``<run_dir>/supervisor.pid``: this process is the run's supervisor (``octoric stop`` may
    send it SIGTERM)."""
    pid = os.getpid()
    (run_dir / SUPERVISOR_FILE).write_text(f"{pid} {start_ticks(pid) or 0}\n")


# --- who holds a port -------------------------------------------------------------------------


def _listen_inodes(port: int) -> set[str]:
    inodes = set()
    for table in ("tcp", "tcp6"):
        try:
            lines = (_PROC / "net" / table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            f = line.split()
            if len(f) > 9 and f[3] == "0A" and int(f[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(f[9])  # 0A: LISTEN
    return inodes


def port_holder(port: int) -> int | None:
    """The pid of a process listening on TCP ``port`` (one of them), None when none is visible."""
    wanted = {f"socket:[{i}]" for i in _listen_inodes(port)}
    if not wanted or not _PROC.is_dir():
        return None
    for name in os.listdir(_PROC):
        if not name.isdigit():
            continue
        try:
            fds = os.listdir(_PROC / name / "fd")
        except OSError:
            continue
        for fd in fds:
            with contextlib.suppress(OSError):
                if os.readlink(_PROC / name / "fd" / fd) in wanted:
                    return int(name)
    return None


def describe_holder(port: int) -> tuple[str, bool] | None:
    """Who holds ``port``, in words, and whether it is an octoric run's process; None when no
    holder is visible (another user's, another network namespace)."""
    pid = port_holder(port)
    if pid is None:
        return None
    p = _marked(pid)
    if p is None:
        return f"pid {pid} ({_cmdline(pid)})", False
    run = Run(p.marker, p.run_dir, [p])
    if run.supervisor_alive():
        return (
            f"{p} of the octoric run in {p.run_dir} (supervisor pid {run.supervisor_pid}, still "
            "running): stop it with `octoric stop`, or give this run other ports",
            True,
        )
    return (
        f"{p}, left by the octoric run in {p.run_dir} whose supervisor is gone: "
        "`octoric stop` ends it",
        True,
    )


# --- octoric stop -----------------------------------------------------------------------------


def _wait_exit(pid: int, ticks: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while is_running(pid, ticks):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def stop_runs(target: str | None, list_only: bool, out: TextIO, grace_s: float = 30.0) -> int:
    """``octoric stop``: name the runs found (or the one whose run folder or supervisor pid is
    ``target``); unless ``list_only``, stop each: a running ``octoric run`` by SIGTERM (a clean
    stop that writes its report; a second SIGTERM after ``grace_s`` hurries it), an orphan's
    processes by SIGKILL. Exit code: 0, or 1 when ``target`` names no run."""
    runs = find_runs()
    if target is not None:
        t = Path(target).absolute() if not target.isdigit() else None
        runs = [
            r
            for r in runs
            if (t is None and r.supervisor_pid == int(target))
            or (t is not None and r.run_dir and Path(r.run_dir).absolute() == t)
        ]
        if not runs:
            print(f"no octoric run found for {target}", file=out)
            return 1
    if not runs:
        print("no octoric run is running", file=out)
        return 0
    for run in runs:
        print(run.describe(), file=out)
        if list_only:
            continue
        pid, ticks = supervisor_of(run.marker)
        if run.supervisor_alive():
            if not run.is_octoric_run():
                print(
                    f"  not stopped: pid {pid} ({_cmdline(pid)}) runs them and is not an "
                    "`octoric run`; stop that program",
                    file=out,
                )
                continue
            os.kill(pid, signal.SIGTERM)
            if not _wait_exit(pid, ticks, grace_s):
                os.kill(pid, signal.SIGTERM)  # the second: kill what remains, write the report
                if not _wait_exit(pid, ticks, 10.0):
                    os.kill(pid, signal.SIGKILL)
                    _wait_exit(pid, ticks, 2.0)
        left = sweep(run.marker)  # an orphan's processes; after a clean stop, none
        print(f"  stopped{f' ({len(left)} killed)' if left else ''}", file=out)
    return 0


# --- the watchdog -----------------------------------------------------------------------------


class Watchdog:
    """The run's watchdog process, told of each child that starts and exits (its pid leads
    its session). ``close()`` at the end of the run: it then sweeps once and exits; if this
    process dies first, the pipe closes all the same and it sweeps."""

    def __init__(self, marker: str) -> None:
        r, self._w = os.pipe()  # not inheritable (PEP 446): only this process holds the write end
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "octoric.lifeline", marker],
                stdin=r,
                stdout=subprocess.DEVNULL,
                start_new_session=True,  # a terminal's Ctrl-C or hang-up does not reach it
            )
        except BaseException:
            os.close(self._w)
            raise
        finally:
            os.close(r)

    def _tell(self, line: str) -> None:
        if self._w >= 0:
            with contextlib.suppress(OSError):  # it is gone: nothing left to tell
                os.write(self._w, line.encode())

    def started(self, pid: int) -> None:
        self._tell(f"+{pid}\n")

    def exited(self, pid: int) -> None:
        self._tell(f"-{pid}\n")

    def close(self, timeout: float = 5.0) -> None:
        if self._w < 0:
            return
        os.close(self._w)
        self._w = -1
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def main(argv: list[str]) -> int:
    """The watchdog: follow the running children (``+pid``, ``-pid`` lines on stdin) until end
    of file, then SIGKILL what is left of the run."""
    for sig in (signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    (marker,) = argv
    children: set[int] = set()
    with contextlib.suppress(OSError):
        for line in sys.stdin.buffer:
            with contextlib.suppress(ValueError):
                if line.startswith(b"+"):
                    children.add(int(line[1:]))
                elif line.startswith(b"-"):
                    children.discard(int(line[1:]))
    # the children alive when the supervisor ended die with it (PDEATHSIG) about now; their
    # session ids stay reserved while anything is in those sessions, so none is another's
    killed = sweep(marker, children, timeout=5.0)
    if killed:
        pid = supervisor_of(marker)[0]
        with contextlib.suppress(OSError):
            print(
                f"octoric: killed what the run of supervisor pid {pid} left: "
                + ", ".join(str(p) for p in killed),
                file=sys.stderr,
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
