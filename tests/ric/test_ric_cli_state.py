"""`octoric ric up --detach` / `status` / `down` find the running RIC from any working directory
(issue #16: `ric down` outside the repository said there was no RIC while one ran)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from octoric.redis_server import free_port
from octoric.ric.stack import RIC_PORTS, distinct_pairs

pytestmark = [pytest.mark.integration]


def _octoric(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "octoric.cli", *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_state_is_found_from_any_directory(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "OCTORIC_STATE_DIR"}
    env["XDG_STATE_HOME"] = str(tmp_path / "state")
    sets = [f"report_dir={tmp_path / 'runs'}", f"redis.port={free_port()}"]
    sets += [f"ric.{n}={p}" for n, p in distinct_pairs(RIC_PORTS).items()]
    argv = ["ric", "up", "--detach"]
    for s in sets:
        argv += ["--set", s]
    up = _octoric(a, env, *argv)
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        status = _octoric(b, env, "ric", "status")
        assert status.returncode == 0, status.stderr
        assert "health: " in status.stdout and "DOWN" not in status.stdout
    finally:
        down = _octoric(b, env, "ric", "down")
    assert down.returncode == 0 and "RIC stopped" in down.stdout, down.stdout + down.stderr
    assert (tmp_path / "state" / "octoric" / "ric.log").exists()  # under XDG_STATE_HOME
