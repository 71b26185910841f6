"""A RIC that cannot start (a port taken by someone else) fails clearly and leaves nothing."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from octoric.redis_server import RedisServer
from octoric.ric.stack import RIC_PORTS, distinct_pairs

pytestmark = pytest.mark.integration


def _processes_mentioning(text: str) -> list[int]:
    pids = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                if text.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                    pids.append(int(pid))
            except OSError:
                continue
    return pids


def test_port_conflict_fails_cleanly(tmp_path: Path) -> None:
    ports = distinct_pairs([*RIC_PORTS, "squatter"])
    with RedisServer() as redis, socket.socket() as squatter:
        squatter.bind(("127.0.0.1", ports["squatter"]))
        squatter.listen()
        ports["a1_rmr_port"] = ports["squatter"]  # a1's RMR port is taken
        argv = [
            sys.executable,
            "-m",
            "octoric.cli",
            "ric",
            "up",
            "--duration",
            "60",
            "--set",
            f"report_dir={tmp_path}/run",
            "--set",
            "redis.external=true",
            "--set",
            f"redis.port={redis.port}",
        ]
        for name in RIC_PORTS:
            argv += ["--set", f"ric.{name}={ports[name]}"]
        env = dict(os.environ, OCTORIC_STATE_DIR=str(tmp_path / "state"))
        r = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 1
    # the port and the setting that names it, at once (issue #16), not a dying child process
    assert f"port {ports['squatter']} (ric.a1_rmr_port) on 127.0.0.1 is in use" in r.stderr
    assert "--set ric.a1_rmr_port=PORT" in r.stderr
    assert _processes_mentioning(str(tmp_path)) == [], "RIC processes were left running"
