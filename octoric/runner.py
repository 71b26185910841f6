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
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from octoric import log as octolog
from octoric.config import RunConfig
from octoric.errors import OctoricError
from octoric.redis_server import free_port, ping, redis_binary, server_argv
from octoric.supervisor import ChildProcess, Component, RunContext, RunOutcome, Supervisor

log = logging.getLogger("octoric.run")

# builds the components of a run (after Redis), in start order
ComponentFactory = Callable[[RunContext], list[Component]]


class RedisComponent:
    """The SDL: a private redis-server, or a check that an external one answers.

    The private server keeps an append-only file in ``<run_dir>/redis`` and runs as a supervised
    child: if it dies, it is restarted on the same port and reloads every key, so the RIC and
    the xApps lose no state (restart budget: ``REDIS_RESTARTS`` per minute).
    """

    name = "redis"
    REDIS_RESTARTS = 5

    def __init__(self) -> None:
        self.child: ChildProcess | None = None
        self.host = "127.0.0.1"
        self.port = 0
        self.external = False
        self.pid: int | None = None

    async def start(self, ctx: RunContext) -> None:
        cfg = ctx.config.redis
        self.host, self.external = cfg.host, cfg.external
        if cfg.external:
            if not ping(cfg.host, cfg.port):
                raise OctoricError(f"no Redis answers at {cfg.host}:{cfg.port} (redis.external)")
            self.port = cfg.port
        else:
            port = cfg.port or free_port(cfg.host)
            if ping(cfg.host, port):
                raise OctoricError(
                    f"a Redis server already listens on {cfg.host}:{port}; use it with "
                    f"--set redis.external=true, or pick a free port with --set redis.port=0"
                )
            data = ctx.run_dir / "redis"
            data.mkdir(parents=True, exist_ok=True)
            argv = server_argv(redis_binary(), cfg.host, port, data, persist=True)
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
            self.pid = self.child.proc.pid if self.child.proc else None
        ctx.redis_host, ctx.redis_port = self.host, self.port

    async def stop(self) -> None:
        if self.child is not None:
            await self.child.stop()

    def status(self) -> str:
        up = self.child is None or (
            self.child.proc is not None and self.child.proc.returncode is None
        )
        return f"redis :{self.port} {'up' if up else 'down'}"

    def report(self) -> dict[str, Any]:
        rep = {"host": self.host, "port": self.port, "external": self.external, "pid": self.pid}
        if self.child is not None:
            rep["restarts"] = self.child.restarts
            rep["pid"] = self.child.proc.pid if self.child.proc else self.pid
        return rep

    def failed(self) -> str | None:
        return self.child.failed() if self.child is not None else None


def _summary(outcome: RunOutcome, report_path: Path) -> str:
    lines = [
        "",
        "octoric run summary",
        f"  ran {outcome.seconds:.1f} s, stopped because: {outcome.reason}",
    ]
    for name, rep in outcome.report["components"].items():
        brief = ", ".join(f"{k}={v}" for k, v in rep.items() if not isinstance(v, (dict, list)))
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
    # absolute: the state pointers and child processes must not depend on a working directory
    run_dir = Path(cfg.report_dir).absolute() / time.strftime("%Y%m%d-%H%M%S")
    run_dir.mkdir(parents=True, exist_ok=True)
    ctx = RunContext(config=cfg, run_dir=run_dir)
    components: list[Component] = [RedisComponent(), *factory(ctx)]
    log.info("run folder %s; components: %s", run_dir, ", ".join(c.name for c in components))
    outcome = asyncio.run(Supervisor(ctx, components, live=live).run())
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
