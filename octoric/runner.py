"""Runs a list of components under the supervisor, Redis first, and writes the report.

The generic half of ``octoric run`` and ``octoric ric up``: which components run is the
caller's choice (``octoric.deploy.embedded`` composes the whole embedded deployment). The
end-of-run report goes to ``<report_dir>/<time>/report.json`` and ``latest.json``, with a
readable summary on stdout.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from octoric import lifeline, realtime
from octoric import log as octolog
from octoric.config import RunConfig
from octoric.errors import OctoricError
from octoric.redis_server import (
    RedisAuth,
    free_port,
    ping,
    probe,
    redis_binary,
    refusals,
    server_argv,
    write_acl,
)
from octoric.supervisor import ChildProcess, Component, RunContext, RunOutcome, Supervisor

log = logging.getLogger("octoric.run")

# builds the components of a run (after Redis), in start order
ComponentFactory = Callable[[RunContext], list[Component]]


class RedisComponent:
    """The SDL: a private redis-server, or a check that an external one answers.

    The private server keeps an append-only file in ``<run_dir>/redis`` and runs as a supervised
    child: if it dies, it is restarted on the same port and reloads every key, so the RIC and
    the xApps lose no state (restart budget: ``REDIS_RESTARTS`` per minute).

    With ``redis.auth`` it counts what Redis refused (``refused``: not logged in, wrong
    password, not permitted; Redis' own ``INFO errorstats``, read as the admin every
    ``WATCH_S``) and logs each increase: the RIC's processes never cause one, so a count is
    someone on this host trying the RIC's Redis.
    """

    name = "redis"
    REDIS_RESTARTS = 5
    WATCH_S = 2.0

    def __init__(self) -> None:
        self.child: ChildProcess | None = None
        self.host = "127.0.0.1"
        self.port = 0
        self.external = False
        self.pid: int | None = None
        self.refused = {"noauth": 0, "wrongpass": 0, "noperm": 0}
        self._watch: asyncio.Task[None] | None = None

    async def start(self, ctx: RunContext) -> None:
        cfg = ctx.config.redis
        self.host, self.external = cfg.host, cfg.external
        if cfg.external:
            if not ping(cfg.host, cfg.port):
                raise OctoricError(f"no Redis answers at {cfg.host}:{cfg.port} (redis.external)")
            ctx.redis_auth = _external_auth(cfg.host, cfg.port, cfg.username, cfg.password_file)
            self.port = cfg.port
        else:
            port = cfg.port or free_port(cfg.host)
            if ping(cfg.host, port):
                holder = lifeline.describe_holder(port)
                if holder is not None and holder[1]:  # an octoric run's: not a Redis to use
                    raise OctoricError(f"port {port} (redis.port) is held by {holder[0]}")
                by = f" ({holder[0]})" if holder is not None else ""
                raise OctoricError(
                    f"a Redis server{by} already listens on {cfg.host}:{port}; use it with "
                    f"--set redis.external=true, or pick a free port with --set redis.port=0"
                )
            data = ctx.run_dir / "redis"
            data.mkdir(mode=0o700, parents=True, exist_ok=True)
            data.chmod(0o700)  # the append-only file holds every key: this user's alone
            conf = None
            if cfg.auth:
                conf, ctx.redis_auth, ctx.redis_admin = write_acl(data, ctx.run_dir)
            argv = server_argv(redis_binary(), cfg.host, port, data, persist=True, conf=conf)
            self.child = ChildProcess("redis", argv, max_restarts=self.REDIS_RESTARTS)
            await self.child.start(ctx)
            self.port = port
            deadline = time.monotonic() + 10
            while not await asyncio.to_thread(ping, cfg.host, port):
                if (why := self.child.failed()) is not None or time.monotonic() > deadline:
                    await self.child.stop()
                    raise OctoricError(
                        why
                        or f"redis-server did not answer on {cfg.host}:{port} in 10 s "
                        f"(log: {data / 'redis.log'})"
                    )
                await asyncio.sleep(0.02)
            # a loaded machine (CI) can answer the bare PING and then be slow to the login:
            # only a refusal is final, silence is retried until the deadline
            state = await asyncio.to_thread(probe, cfg.host, port, ctx.redis_auth, 2.0)
            while state == "down" and time.monotonic() < deadline and self.child.failed() is None:
                await asyncio.sleep(0.05)
                state = await asyncio.to_thread(probe, cfg.host, port, ctx.redis_auth, 2.0)
            if state != "ok":  # e.g. a config file redis-server read differently
                await self.child.stop()
                raise OctoricError(f"the private Redis refused the run's credentials: {state}")
            self.pid = self.child.proc.pid if self.child.proc else None
            if self.pid is not None:
                realtime.grant(self.pid, "redis")  # with OCTORIC_RT_PRIORITY, as e2term and xApps
            if ctx.redis_admin.enabled:
                self._watch = asyncio.create_task(self._count_refusals(ctx.redis_admin))
        ctx.redis_host, ctx.redis_port = self.host, self.port

    async def _count_refusals(self, admin: RedisAuth) -> None:
        # our own start-up probes (PING before AUTH) are in the first reading: not counted
        last = await asyncio.to_thread(refusals, self.host, self.port, admin)
        while True:
            await asyncio.sleep(self.WATCH_S)
            now = await asyncio.to_thread(refusals, self.host, self.port, admin)
            if not now:  # Redis away (restarting): the next reading tells
                continue
            # a restarted Redis counts from 0 again
            new = {k: n - last.get(k, 0) if n >= last.get(k, 0) else n for k, n in now.items()}
            last = now
            if any(new.values()):
                for k, n in new.items():
                    self.refused[k] += n
                log.warning(
                    "Redis refused %d command(s) not logged in, %d failed logins and %d not "
                    "permitted since the last look: someone on this host is trying the RIC's "
                    "Redis (counted in the report under redis.refused)",
                    new["noauth"], new["wrongpass"], new["noperm"],
                )  # fmt: skip

    async def stop(self) -> None:
        if self._watch is not None:
            self._watch.cancel()
        if self.child is not None:
            await self.child.stop()

    def status(self) -> str:
        up = self.child is None or (
            self.child.proc is not None and self.child.proc.returncode is None
        )
        refused = sum(self.refused.values())
        return f"redis :{self.port} {'up' if up else 'down'}" + (
            f", {refused} refused" if refused else ""
        )

    def report(self) -> dict[str, Any]:
        rep: dict[str, Any] = {
            "host": self.host, "port": self.port, "external": self.external, "pid": self.pid
        }  # fmt: skip
        if self._watch is not None:  # counted only where the run holds Redis' admin
            rep["refused"] = dict(self.refused)
        if self.child is not None:
            rep["restarts"] = self.child.restarts
            rep["pid"] = self.child.proc.pid if self.child.proc else self.pid
        return rep

    def failed(self) -> str | None:
        return self.child.failed() if self.child is not None else None


def _external_auth(host: str, port: int, username: str, password_file: str) -> RedisAuth:
    """The credentials for an external Redis (redis.username / redis.password_file), checked
    now: a refusal is one clear line at the start, not processes that die and restart."""
    auth = RedisAuth(username, str(Path(password_file).absolute()) if password_file else "")
    state = probe(host, port, auth)
    if state == "noauth":
        raise OctoricError(
            f"the Redis at {host}:{port} (redis.external) wants a password: name a file that "
            f"holds it with --set redis.password_file=FILE (and its ACL user, if not "
            f"'default', with --set redis.username=USER)"
        )
    if state != "ok":
        raise OctoricError(
            f"the Redis at {host}:{port} (redis.external) refused "
            f"{'user ' + repr(username) if username else 'the password'} from "
            f"{password_file or 'no password'}: {state}"
        )
    return auth


def _plain(v: object) -> str:
    """A report value as a reader wants it: no Python reprs (``True``, ``0.30000000000000004``)."""
    if isinstance(v, bool):
        return "yes" if v else "no"
    return f"{v:.6g}" if isinstance(v, float) else str(v)


def _summary(outcome: RunOutcome, report_path: Path) -> str:
    lines = [
        "",
        "octoric run summary",
        f"  ran {outcome.seconds:.1f} s, stopped because: {outcome.reason}",
    ]
    for name, rep in outcome.report["components"].items():
        brief = ", ".join(
            f"{k}={_plain(v)}"
            for k, v in rep.items()
            if v is not None and not isinstance(v, (dict, list))  # None: not measured
        )
        lines.append(f"  {name:<12} {brief}")
        # a component's own readable lines (e.g. the sim: OCC-fed flows' p99 frame latency)
        lines += [
            f"  {'':<12} {ln}" for ln in rep.get("summary_lines") or [] if isinstance(ln, str)
        ]
    lines.append(f"  report: {report_path}")
    return "\n".join(lines)


def run(
    cfg: RunConfig,
    factory: ComponentFactory,
    live: bool = True,
    after: Callable[[Path], Path | None] | None = None,
) -> int:
    """Run Redis and the components ``factory`` builds under the supervisor; ``after(run
    folder)`` runs at the end (e.g. writes the HTML report) and may name a file to show."""
    fmt = None if cfg.log.format == "auto" else cfg.log.format
    octolog.configure("octoric-run", fmt=fmt, level=cfg.log.level)
    # everything the run and its children create is this user's alone (issue #43): the run
    # folder holds the route key, the API token, Redis's passwords and its append-only file
    umask = os.umask(0o077)
    try:
        return _run(cfg, factory, live, after)
    finally:
        os.umask(umask)


def _run(
    cfg: RunConfig,
    factory: ComponentFactory,
    live: bool,
    after: Callable[[Path], Path | None] | None,
) -> int:
    # absolute: the state pointers and child processes must not depend on a working directory
    run_dir = Path(cfg.report_dir).absolute() / time.strftime("%Y%m%d-%H%M%S")
    run_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    run_dir.chmod(0o700)
    ctx = RunContext(config=cfg, run_dir=run_dir)
    _end_earlier_runs(ctx.marker)
    lifeline.write_record(run_dir)
    # ends the run's processes if this one dies (kill -9, OOM), or whatever a stop left
    ctx.watchdog = watchdog = lifeline.Watchdog(ctx.marker)

    def after_supervisor(signum: int, frame: object) -> None:
        # the supervisor's own handlers are in force while it runs; this one before (as
        # usual: KeyboardInterrupt) and after it has stopped every process, while the report
        # is written (a second or third Ctrl-C must not break that off)
        if not ctx.stopping:
            raise KeyboardInterrupt
        log.warning("%s: the run has stopped, writing its report", signal.Signals(signum).name)

    sigs = (signal.SIGINT, signal.SIGTERM)
    previous = {sig: signal.signal(sig, after_supervisor) for sig in sigs}
    try:
        components: list[Component] = [RedisComponent(), *factory(ctx)]
        log.info("run folder %s; components: %s", run_dir, ", ".join(c.name for c in components))
        outcome = asyncio.run(Supervisor(ctx, components, live=live).run())
        watchdog.close()  # every process has stopped: none is left to end, the report is ours
        return _finish(cfg, run_dir, outcome, after)
    finally:
        watchdog.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _end_earlier_runs(marker: str) -> None:
    """An earlier run's processes whose supervisor is gone (kill -9, OOM) hold its ports: they
    carry its marker, so they are provably octoric's; end them, naming them. A run still
    supervised is named only (``octoric stop`` ends it)."""
    for run in lifeline.find_runs(exclude=marker):
        if run.supervisor_alive():
            if run.is_octoric_run():
                log.info("another octoric run is running (`octoric stop` ends it): %s",
                         run.describe())  # fmt: skip
            continue
        log.warning("ending what an earlier run left: %s", run.describe())
        lifeline.sweep(run.marker)


def _finish(
    cfg: RunConfig, run_dir: Path, outcome: RunOutcome, after: Callable[[Path], Path | None] | None
) -> int:
    report = {"config": cfg.to_dict(), **outcome.report}
    report_path = run_dir / "report.json"
    report_path.write_text(json.dumps(report, indent=2, default=str))
    latest = Path(cfg.report_dir) / "latest.json"
    latest.write_text(json.dumps(report, indent=2, default=str))
    print(_summary(outcome, report_path), flush=True)
    if after is not None:
        try:
            extra = after(run_dir)
            if extra is not None:
                print(f"  report: {extra}", flush=True)
        except Exception as e:  # a report that cannot be drawn must not fail the run
            log.warning("the end-of-run report failed: %s", e)
    if not outcome.ok:
        print(f"octoric run: {outcome.reason}", file=sys.stderr)
        return 1
    return 0
