"""``octoric run``: the embedded deployment on one machine.

Builds the component list (Redis first, then whatever the areas contribute through
``octoric.<area>.run_plugin``), runs it under the supervisor, and writes the end-of-run
report to ``<report_dir>/report.json`` with a readable summary on stdout.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import logging
import sys
import time
from pathlib import Path
from typing import Any

from octoric import log as octolog
from octoric.config import RunConfig
from octoric.errors import OctoricError
from octoric.redis_server import RedisServer, free_port, ping
from octoric.supervisor import Component, RunContext, RunOutcome, Supervisor

log = logging.getLogger("octoric.run")

# Areas that add components to `octoric run`, in start order. Each module defines
# `components(ctx: RunContext) -> list[Component]`.
RUN_PLUGINS = [
    "octoric.ric.run_plugin",
    "octoric.sim.run_plugin",
    "octoric.xapps.run_plugin",
]


class RedisComponent:
    """The SDL: a private redis-server, or a check that an external one answers."""

    name = "redis"

    def __init__(self) -> None:
        self.server: RedisServer | None = None
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
            self.server = await asyncio.to_thread(RedisServer(port, cfg.host).start)
            self.port = port
            self.pid = self.server.proc.pid if self.server.proc else None
        ctx.redis_host, ctx.redis_port = self.host, self.port

    async def stop(self) -> None:
        if self.server is not None:
            await asyncio.to_thread(self.server.stop)

    def status(self) -> str:
        up = self.server is None or (
            self.server.proc is not None and self.server.proc.poll() is None
        )
        return f"redis :{self.port} {'up' if up else 'down'}"

    def report(self) -> dict[str, Any]:
        return {"host": self.host, "port": self.port, "external": self.external, "pid": self.pid}

    def failed(self) -> str | None:
        if self.server is not None and self.server.proc is not None:
            rc = self.server.proc.poll()
            if rc is not None:
                return f"redis-server exited with code {rc}"
        return None


def build_components(ctx: RunContext, plugins: list[str] | None = None) -> list[Component]:
    comps: list[Component] = [RedisComponent()]
    for module in RUN_PLUGINS if plugins is None else plugins:
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as e:
            if e.name is not None and module.startswith(e.name):
                continue  # that area does not plug into `run` yet
            raise
        comps.extend(mod.components(ctx))
    return comps


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


def run(cfg: RunConfig, live: bool = True, plugins: list[str] | None = None) -> int:
    """Run the components of ``plugins`` (default: all areas) under the supervisor."""
    fmt = None if cfg.log.format == "auto" else cfg.log.format
    octolog.configure("octoric-run", fmt=fmt, level=cfg.log.level)
    run_dir = Path(cfg.report_dir) / time.strftime("%Y%m%d-%H%M%S")
    run_dir.mkdir(parents=True, exist_ok=True)
    ctx = RunContext(config=cfg, run_dir=run_dir)
    components = build_components(ctx, plugins)
    log.info("run folder %s; components: %s", run_dir, ", ".join(c.name for c in components))
    outcome = asyncio.run(Supervisor(ctx, components, live=live).run())
    report = {"config": cfg.to_dict(), **outcome.report}
    report_path = run_dir / "report.json"
    report_path.write_text(json.dumps(report, indent=2, default=str))
    latest = Path(cfg.report_dir) / "latest.json"
    latest.write_text(json.dumps(report, indent=2, default=str))
    print(_summary(outcome, report_path), flush=True)
    if not outcome.ok:
        print(f"octoric run: {outcome.reason}", file=sys.stderr)
        return 1
    return 0
