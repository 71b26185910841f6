"""The supervisor behind ``octoric run``: starts components in order, shows a live status
line, stops them in reverse order on Ctrl-C, SIGTERM or after ``--duration``.

A component is anything with ``name``, ``start``, ``stop``, ``status`` and ``report``.
Which components run is the caller's choice (``octoric.deploy.embedded`` for ``octoric run``,
the RIC alone for ``octoric ric up``); see :mod:`octoric.runner`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import subprocess
import sys
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TextIO, runtime_checkable

from octoric import lifeline
from octoric.config import RunConfig
from octoric.errors import OctoricError
from octoric.redis_server import PASSWORD_FILE_ENV, USER_ENV, RedisAuth
from octoric.spare import ACTIVATE, SPARE_FD_ENV

log = logging.getLogger("octoric.supervisor")


@dataclass
class RunContext:
    """What components share during a run: the config, where Redis is, the run folder, the
    marker every child process carries (``octoric.lifeline``), whether the run is stopping."""

    config: RunConfig
    run_dir: Path
    redis_host: str = "127.0.0.1"
    redis_port: int = 0
    # the credentials of the run's Redis user (the RIC's and the xApps'), and of its admin
    # (fault injection, tests); empty when Redis wants none
    redis_auth: RedisAuth = field(default_factory=RedisAuth)
    redis_admin: RedisAuth = field(default_factory=RedisAuth)
    started_at: float = field(default_factory=time.monotonic)
    marker: str = field(default_factory=lifeline.new_marker)
    stopping: bool = False  # set at the stop request: no child is started or restarted after
    watchdog: lifeline.Watchdog | None = None  # the runner's; told of every child
    children: list[asyncio.subprocess.Process] = field(default_factory=list, init=False)
    _waits: set[asyncio.Task[None]] = field(default_factory=set, init=False, repr=False)

    def track(self, proc: asyncio.subprocess.Process) -> None:
        """A child process started (every one leads a session of its own)."""
        self.children.append(proc)
        if self.watchdog is not None:
            self.watchdog.started(proc.pid)
            task = asyncio.ensure_future(self._exited(proc, self.watchdog))
            self._waits.add(task)
            task.add_done_callback(self._waits.discard)

    @staticmethod
    async def _exited(proc: asyncio.subprocess.Process, watchdog: lifeline.Watchdog) -> None:
        await proc.wait()
        watchdog.exited(proc.pid)

    def running_sessions(self) -> list[int]:
        return [p.pid for p in self.children if p.returncode is None]

    def child_env(self) -> dict[str, str]:
        """Environment for child processes: SDL (ricxappframe's DBAAS_*, the Redis user) and log
        format."""
        env = dict(os.environ)
        env["DBAAS_SERVICE_HOST"] = self.redis_host
        env["DBAAS_SERVICE_PORT"] = str(self.redis_port)
        for name in (USER_ENV, PASSWORD_FILE_ENV):  # never another Redis's credentials
            env.pop(name, None)
        env.update(self.redis_auth.env())
        env.setdefault("OCTORIC_LOG_FORMAT", "json")
        return env


@runtime_checkable
class Component(Protocol):
    name: str

    async def start(self, ctx: RunContext) -> None: ...

    async def stop(self) -> None: ...

    def status(self) -> str:
        """A short fragment for the live status line, e.g. 'redis :6379 up'."""
        ...

    def report(self) -> dict[str, Any]:
        """What goes into the end-of-run report under this component's name."""
        ...

    def failed(self) -> str | None:
        """Why the component has died, or None while it is healthy."""
        ...


class ChildProcess:
    """A component that is a child process in its own session (so stop kills its whole group).

    With ``max_restarts`` > 0 a child that dies is started again, as a Kubernetes deployment
    would restart a pod: at once the first time within the window (a one-off crash costs no
    waiting), after ``backoff_s`` when it died again recently. The budget is a rate: the run
    fails when a child needs more than ``max_restarts`` restarts within ``restart_window_s``;
    a child that dies now and then, hours apart, is restarted every time.

    With ``spare=True`` (a program that calls ``spare.wait_if_spare``) a start activates a
    warm spare, a process already past its imports, and a new spare is made ``spare_delay_s``
    later (not at once: its imports would compete with the start for the CPU). Which process
    is the live one: ``<run_dir>/<name>.pid``.
    """

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        env: dict[str, str] | None = None,
        max_restarts: int = 0,
        backoff_s: float = 0.5,
        restart_window_s: float = 60.0,
        spare: bool = False,
        spare_delay_s: float = 5.0,
        stdin_pipe: bool = False,
    ) -> None:
        self.name = name
        self.argv = list(argv)
        self.env = env
        self.max_restarts, self.backoff_s = max_restarts, backoff_s
        self.restart_window_s = restart_window_s
        self.restarts = 0  # over the whole run (the report); the budget counts recent ones
        self._recent: deque[float] = deque()
        self.proc: asyncio.subprocess.Process | None = None
        self._stopping = False
        self._gave_up: str | None = None
        self._watch: asyncio.Task[None] | None = None
        self._ctx: RunContext | None = None
        self.log_path: Path | None = None
        self.use_spare, self.spare_delay_s = spare, spare_delay_s
        # the waiting spare and the write end of its pipe; the task that makes the next one
        self._spare: tuple[asyncio.subprocess.Process, int] | None = None
        self._spare_task: asyncio.Task[None] | None = None
        self.spares_used = 0
        # a program that takes commands on its standard input (srsRAN's gnb): ``send_line``
        self.stdin_pipe = stdin_pipe

    async def _exec(self, spare_fd: int | None = None) -> asyncio.subprocess.Process:
        assert self._ctx is not None and self.log_path is not None
        if self._ctx.stopping:
            raise OctoricError(f"{self.name}: not started, the run is stopping")
        env = dict(self.env or self._ctx.child_env())
        if spare_fd is not None:
            env[SPARE_FD_ENV] = str(spare_fd)
        # the run's marker, inherited by the child's own children: what the watchdog, a
        # later start and `octoric stop` find them by (octoric.lifeline)
        env[lifeline.RUN_ENV] = self._ctx.marker
        env[lifeline.RUN_DIR_ENV] = str(self._ctx.run_dir)
        with self.log_path.open("ab") as out:
            proc = await asyncio.create_subprocess_exec(
                *self.argv,
                stdin=asyncio.subprocess.PIPE if self.stdin_pipe else asyncio.subprocess.DEVNULL,
                stdout=out,
                stderr=out,
                env=env,
                start_new_session=True,
                pass_fds=() if spare_fd is None else (spare_fd,),
                # SIGKILL when the supervisor dies, however it dies; forked from the event
                # loop's thread, which lives until the run ends (PDEATHSIG follows the thread)
                preexec_fn=lifeline.die_with_parent(),
            )
        self._ctx.track(proc)
        return proc

    async def send_line(self, line: str) -> None:
        """Write one command line to the live process's standard input (``stdin_pipe``)."""
        p = self.proc
        if not self.stdin_pipe or p is None or p.stdin is None or p.returncode is not None:
            raise OctoricError(f"{self.name} is not running with a command input")
        p.stdin.write(line.rstrip("\n").encode() + b"\n")
        await p.stdin.drain()

    async def _new_spare(self) -> tuple[asyncio.subprocess.Process, int]:
        r, w = os.pipe()
        try:
            proc = await self._exec(spare_fd=r)
        except BaseException:
            os.close(w)
            raise
        finally:
            os.close(r)
        return proc, w

    async def _spawn(self) -> None:
        if not self.use_spare:
            self.proc = await self._exec()
            log.info("started %s (pid %d)", self.name, self.proc.pid)
            self._write_pid()
            return
        spare, self._spare = self._spare, None
        warm = spare is not None
        if spare is None:
            spare = await self._new_spare()
        proc, w = spare
        try:
            os.write(w, ACTIVATE)
        except OSError as e:  # the spare died while waiting: start cold
            log.warning("%s: spare (pid %d) gone (%s), starting a new one", self.name, proc.pid, e)
            os.close(w)
            await _reap(proc)
            warm = False
            proc, w = await self._new_spare()
            try:
                os.write(w, ACTIVATE)
            finally:
                os.close(w)
        else:
            os.close(w)
        self.proc = proc
        self.spares_used += warm
        log.info("started %s (pid %d%s)", self.name, proc.pid, ", a warm spare" if warm else "")
        self._write_pid()
        if self._spare_task is None or self._spare_task.done():
            self._spare_task = asyncio.create_task(self._make_spare_later())

    async def _make_spare_later(self) -> None:
        await asyncio.sleep(self.spare_delay_s)
        if not self._stopping and not self._halted() and self._spare is None:
            self._spare = await self._new_spare()
            log.info("%s: warm spare ready to start (pid %d)", self.name, self._spare[0].pid)

    async def _retire_spare(self) -> None:
        if self._spare_task is not None:
            self._spare_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._spare_task
        spare, self._spare = self._spare, None
        if spare is None:
            return
        proc, w = spare
        os.close(w)  # it exits on the closed pipe; the group kill is for one still importing
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        await _reap(proc)

    def _write_pid(self) -> None:
        if self._ctx is not None and self.proc is not None:
            (self._ctx.run_dir / f"{self.name}.pid").write_text(f"{self.proc.pid}\n")

    async def start(self, ctx: RunContext) -> None:
        self._ctx = ctx
        self.log_path = ctx.run_dir / f"{self.name}.log"
        await self._spawn()
        self._watch = asyncio.create_task(self._watcher())

    def _halted(self) -> bool:
        """The run is stopping: a child that dies now is not restarted (it may have been
        killed on purpose, by a second Ctrl-C)."""
        return self._ctx is not None and self._ctx.stopping

    async def _watcher(self) -> None:
        while True:
            assert self.proc is not None
            rc = await self.proc.wait()
            if self._stopping or self._halted():
                return
            now = time.monotonic()
            while self._recent and now - self._recent[0] > self.restart_window_s:
                self._recent.popleft()
            if len(self._recent) >= self.max_restarts:
                self._gave_up = (
                    f"{self.name} exited with code {rc}, its {len(self._recent)} restart(s) in "
                    f"{self.restart_window_s:g} s spent (log: {self.log_path})"
                )
                return
            self._recent.append(now)
            self.restarts += 1
            log.warning(
                "%s exited with code %s; restart %d of %d within %g s (%d in all)",
                self.name, rc, len(self._recent), self.max_restarts, self.restart_window_s,
                self.restarts,
            )  # fmt: skip
            if len(self._recent) > 1:  # a repeat within the window: do not spin
                await asyncio.sleep(self.backoff_s)
            if self._stopping or self._halted():
                return
            await self._spawn()

    async def stop(self) -> None:
        self._stopping = True
        if self._watch is not None:
            self._watch.cancel()
        await self._retire_spare()
        p = self.proc
        if p is None or p.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(p.pid, signal.SIGTERM)
        try:
            await asyncio.wait_for(p.wait(), 5)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
            await p.wait()

    def status(self) -> str:
        if self.proc is None:
            return f"{self.name} -"
        return f"{self.name} {'up' if self.proc.returncode is None else 'exited'}"

    def report(self) -> dict[str, Any]:
        return {
            "pid": self.proc.pid if self.proc else None,
            "exit_code": self.proc.returncode if self.proc else None,
            "restarts": self.restarts,
            **({"warm_spares_used": self.spares_used} if self.use_spare else {}),
            "log": str(self.log_path) if self.log_path else None,
        }

    def failed(self) -> str | None:
        return self._gave_up


async def cancel_task(task: asyncio.Task[Any] | None) -> None:
    """Cancel a component's background task and wait until it has ended."""
    if task is not None:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def _reap(proc: asyncio.subprocess.Process, timeout: float = 5.0) -> None:
    try:
        await asyncio.wait_for(proc.wait(), timeout)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        await proc.wait()


class StatusLine:
    """The live status. On a terminal: a few lines redrawn in place (``rich.live``), the
    header and one line per component, each cut to the terminal's width (an ellipsis) so
    nothing wraps at 80 columns. Elsewhere (a pipe, a log file, ``--no-live``): one plain line
    every 5 s or more."""

    def __init__(
        self, stream: TextIO, live: bool, interval: float, console: Any | None = None
    ) -> None:
        """``console``: a ``rich.console.Console`` to draw on (tests); default ``stream``'s."""
        self.stream = stream
        self.tty = console is not None or (live and stream.isatty())
        self.interval = interval if self.tty else max(interval, 5.0)
        self._last = 0.0
        self._live: Any = None
        self._console = console

    def _render(self, lines: list[str]) -> Any:
        from rich.table import Table
        from rich.text import Text

        t = Table.grid(expand=True)
        t.add_column(no_wrap=True, overflow="ellipsis")
        for i, line in enumerate(lines):
            t.add_row(Text(line, style="bold" if i == 0 else "", no_wrap=True, overflow="ellipsis"))
        return t

    def show(self, text: str | list[str], force: bool = False) -> None:
        """``text``: the lines (header first) or one line."""
        now = time.monotonic()
        if not force and now - self._last < self.interval:
            return
        self._last = now
        lines = [text] if isinstance(text, str) else text
        if not self.tty:
            self.stream.write(" | ".join(lines) + "\n")
            self.stream.flush()
            return
        if self._live is None:
            from rich.console import Console
            from rich.live import Live

            console = self._console or Console(file=self.stream)
            self._live = Live(
                self._render(lines), console=console, auto_refresh=False, transient=False
            )
            self._live.start()
            self._route_logs(console)
        self._live.update(self._render(lines), refresh=True)

    def _route_logs(self, console: Any) -> None:
        """Log lines to the terminal go above the live lines, not through them."""

        class _Above:
            def write(self, s: str) -> int:
                if s.strip():
                    console.print(s.rstrip("\n"), markup=False, highlight=False, soft_wrap=True)
                return len(s)

            def flush(self) -> None:
                pass

        self._saved: list[tuple[logging.StreamHandler[Any], Any]] = []
        for h in logging.getLogger().handlers:
            if (
                isinstance(h, logging.StreamHandler)
                and getattr(h.stream, "isatty", lambda: False)()
            ):
                self._saved.append((h, h.setStream(_Above())))

    def close(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None
            for h, stream in getattr(self, "_saved", []):
                h.setStream(stream)


@dataclass
class RunOutcome:
    reason: str  # "duration", "signal SIGINT", "failure: ..."
    seconds: float
    report: dict[str, Any]

    @property
    def ok(self) -> bool:
        return not self.reason.startswith("failure")


def _report(comp: Component) -> dict[str, Any]:
    try:
        return comp.report()
    except Exception as e:  # e.g. one whose start a Ctrl-C interrupted: the others still count
        return {"error": f"no report: {e}"}


class Supervisor:
    def __init__(
        self,
        ctx: RunContext,
        components: Sequence[Component],
        live: bool = True,
        stream: TextIO | None = None,
    ) -> None:
        self.ctx = ctx
        self.components = list(components)
        self.started: list[Component] = []
        self.status = StatusLine(stream or sys.stdout, live, ctx.config.status_interval)
        self._stop = asyncio.Event()
        self._hurry = asyncio.Event()
        self._reason = ""
        self._partial: Component | None = None  # the one that failed to start

    def request_stop(self, reason: str) -> None:
        if not self._stop.is_set():
            self._reason = reason
            self.ctx.stopping = True
            self._stop.set()

    def _on_signal(self, name: str) -> None:
        if not self._stop.is_set():
            self.request_stop(f"signal {name}")
        elif not self._hurry.is_set():
            # a second Ctrl-C: the user will not wait for clean stops; kill every process of
            # the run now, let the stops that are left finish at once, still write the report
            self._hurry.set()
            killed = lifeline.kill_run(self.ctx.marker, self.ctx.running_sessions())
            log.warning(
                "%s again: killed the run's %d processes; finishing the stop", name, len(killed)
            )

    def _line(self) -> list[str]:
        elapsed = time.monotonic() - self.ctx.started_at
        dur = self.ctx.config.duration
        head = f"[octoric {elapsed:6.1f}s" + (f"/{dur:.0f}s]" if dur else "]") + " Ctrl-C stops"
        return [head, *(c.status() for c in self.started)]

    async def _start(self, comp: Component) -> bool:
        """Start ``comp``; False when it failed or a stop request came first (a start that
        waits for health may take a minute: a Ctrl-C does not wait for it)."""
        log.info("starting %s", comp.name)
        task = asyncio.ensure_future(comp.start(self.ctx))
        stop = asyncio.ensure_future(self._stop.wait())
        try:
            await asyncio.wait({task, stop}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop.cancel()
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
            log.info("%s: start interrupted by the stop request", comp.name)
            self.started.append(comp)  # stopped and reported with the others
            return False
        e = asyncio.CancelledError("cancelled") if task.cancelled() else task.exception()
        if e is not None:
            log.error("%s failed to start: %s", comp.name, e)
            self.request_stop(f"failure: {comp.name} failed to start: {e}")
            self._partial = comp  # it may have started child processes: _stop_all stops it
            return False
        self.started.append(comp)
        return not self._stop.is_set()

    async def run(self) -> RunOutcome:
        loop = asyncio.get_running_loop()
        sigs = (signal.SIGINT, signal.SIGTERM)
        # restored at the end, not the default: a caller may handle signals after the run
        # (the runner keeps a second Ctrl-C from breaking off the report)
        previous = {sig: signal.getsignal(sig) for sig in sigs}
        for sig in sigs:
            loop.add_signal_handler(sig, self._on_signal, signal.Signals(sig).name)
        try:
            for comp in self.components:
                if not await self._start(comp):
                    break
            duration = self.ctx.config.duration
            deadline = None if duration is None else self.ctx.started_at + duration
            while not self._stop.is_set():
                for comp in self.started:
                    why = comp.failed()
                    if why:
                        self.request_stop(f"failure: {why}")
                if deadline is not None and time.monotonic() >= deadline:
                    self.request_stop("duration")
                self.status.show(self._line())
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stop.wait(), 0.1)
            self.status.show(self._line(), force=True)
        finally:
            self.ctx.stopping = True
            self.status.close()
            try:  # the signal handlers stay until every process is down: a second Ctrl-C hurries
                await self._stop_all()
                left = await asyncio.to_thread(
                    lifeline.sweep, self.ctx.marker, self.ctx.running_sessions()
                )
                if left:  # e.g. a grandchild that left its process group
                    log.warning("killed what the stops left: %s", ", ".join(map(str, left)))
            finally:
                for sig in sigs:
                    loop.remove_signal_handler(sig)
                    signal.signal(sig, previous[sig])
        seconds = time.monotonic() - self.ctx.started_at
        report = {
            "stopped_because": self._reason,
            "seconds": round(seconds, 3),
            "components": {c.name: _report(c) for c in self.started},
        }
        return RunOutcome(self._reason, seconds, report)

    async def _stop_one(self, comp: Component) -> None:
        """``comp.stop()``, given 20 s; 2 s more once a second Ctrl-C came (its processes are
        dead by then, so what is left of a stop is quick)."""
        task = asyncio.ensure_future(comp.stop())
        hurry = asyncio.ensure_future(self._hurry.wait())
        try:
            await asyncio.wait({task, hurry}, timeout=20, return_when=asyncio.FIRST_COMPLETED)
            if not task.done() and self._hurry.is_set():
                await asyncio.wait({task}, timeout=2)
        finally:
            hurry.cancel()
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
            raise TimeoutError("it did not stop in time")
        task.result()

    async def _stop_all(self) -> None:
        partial = [self._partial] if self._partial is not None else []
        for comp in [*partial, *reversed(self.started)]:
            try:
                await self._stop_one(comp)
                log.info("stopped %s", comp.name)
            except Exception as e:  # one failing stop must not leave the others running
                log.error("stopping %s failed: %s", comp.name, e)


def stop_process_group(proc: subprocess.Popen[bytes], timeout: float = 10.0) -> None:
    """SIGTERM a child started with ``start_new_session=True`` and its group; SIGKILL if it
    has not exited within ``timeout`` (benches and tests that run xApps as processes)."""
    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout)
