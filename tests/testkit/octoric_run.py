"""``octoric run`` as a test starts it: on free ports, its run folders below the test's."""

from __future__ import annotations

import sys
from pathlib import Path

from octoric.redis_server import free_port
from octoric.ric.stack import RIC_PORTS, distinct_pairs


def run_argv(report_dir: Path, duration_s: float, *sets: str) -> tuple[list[str], int]:
    """The argv of ``octoric run --no-live`` for ``duration_s`` with Redis, the RIC and the
    dashboard on free ports and run folders below ``report_dir``; ``sets``: more ``--set``
    overrides (after ours: they win). Returns it and the dashboard's port."""
    dash = free_port()
    overrides = [f"report_dir={report_dir}", f"redis.port={free_port()}", f"dashboard.port={dash}"]
    overrides += [f"ric.{name}={port}" for name, port in distinct_pairs(RIC_PORTS).items()]
    argv = [sys.executable, "-m", "octoric.cli", "run", "--no-live"]
    argv += ["--duration", f"{duration_s:g}"]
    for s in [*overrides, *sets]:
        argv += ["--set", s]
    return argv, dash
