"""`octoric run`: starts Redis and the supervisor, shows status, stops cleanly, leaves nothing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from octoric.redis_server import RedisServer, free_port, ping

pytestmark = pytest.mark.integration


def _start(tmp_path: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "octoric.cli", "run", "--set", f"report_dir={tmp_path}", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _assert_gone(pid: int) -> None:
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_duration_run_writes_report_and_leaves_no_process(tmp_path: Path) -> None:
    port = free_port()
    p = _start(tmp_path, "--duration", "1.5", "--set", f"redis.port={port}")
    out, err = p.communicate(timeout=60)
    assert p.returncode == 0, err
    assert "[octoric" in out and f"redis :{port} up" in out  # the status line
    assert "stopped because: duration" in out
    report = json.loads((tmp_path / "latest.json").read_text())
    assert report["stopped_because"] == "duration"
    assert 1.5 <= report["seconds"] < 30
    pid = report["components"]["redis"]["pid"]
    assert isinstance(pid, int)
    _assert_gone(pid)
    assert not ping("127.0.0.1", port)


def test_ctrl_c_stops_cleanly(tmp_path: Path) -> None:
    port = free_port()
    p = _start(tmp_path, "--set", f"redis.port={port}")
    deadline = time.monotonic() + 30
    while not ping("127.0.0.1", port):
        assert time.monotonic() < deadline, "redis never came up"
        assert p.poll() is None, p.communicate()
        time.sleep(0.05)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 0, err
    assert "stopped because: signal SIGINT" in out
    report = json.loads((tmp_path / "latest.json").read_text())
    _assert_gone(report["components"]["redis"]["pid"])
    assert not ping("127.0.0.1", port)


def test_busy_redis_port_is_a_clear_failure(tmp_path: Path, redis_server: RedisServer) -> None:
    p = _start(tmp_path, "--duration", "5", "--set", f"redis.port={redis_server.port}")
    _, err = p.communicate(timeout=60)
    assert p.returncode == 1
    assert "already listens" in err and "redis.external=true" in err


def test_external_redis_is_used_not_started(tmp_path: Path, redis_server: RedisServer) -> None:
    p = _start(
        tmp_path,
        "--duration",
        "1",
        "--set",
        "redis.external=true",
        "--set",
        f"redis.port={redis_server.port}",
    )
    _, err = p.communicate(timeout=60)
    assert p.returncode == 0, err
    report = json.loads((tmp_path / "latest.json").read_text())
    assert report["components"]["redis"] == {
        "host": "127.0.0.1",
        "port": redis_server.port,
        "external": True,
        "pid": None,
    }
    assert ping(redis_server.host, redis_server.port)  # someone else's Redis is left running


def test_killed_redis_comes_back_with_its_data(tmp_path: Path) -> None:
    """The embedded Redis is persistent (AOF) and supervised: kill -9 mid-run, it is restarted
    on the same port with every key, and the run goes on (issue #17: it used to end the run and
    lose all state)."""
    import asyncio
    import io

    import redis

    from octoric.config import load
    from octoric.runner import RedisComponent
    from octoric.supervisor import RunContext, Supervisor

    port = free_port()
    ctx = RunContext(config=load(overrides=["duration=8", f"redis.port={port}"]), run_dir=tmp_path)
    comp = RedisComponent()

    async def scenario() -> tuple[bool, str]:
        run = asyncio.create_task(Supervisor(ctx, [comp], stream=io.StringIO()).run())
        deadline = time.monotonic() + 10
        while not ping("127.0.0.1", port):
            assert time.monotonic() < deadline
            await asyncio.sleep(0.05)
        user, password = ctx.redis_auth.credentials()  # the run's Redis user (issue #43)
        client = redis.Redis(host="127.0.0.1", port=port, username=user, password=password)
        await asyncio.to_thread(client.set, "octoric.test", b"kept")
        assert comp.child is not None and comp.child.proc is not None
        first = comp.child.proc.pid
        os.kill(first, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while (
            comp.child.proc is None or comp.child.proc.pid == first or not ping("127.0.0.1", port)
        ):
            assert time.monotonic() < deadline, "redis was not restarted"
            await asyncio.sleep(0.05)
        value = await asyncio.to_thread(client.get, "octoric.test")
        outcome = await run
        return outcome.ok, (value or b"").decode()

    ok, value = asyncio.run(scenario())
    assert ok and value == "kept"
    assert comp.child is not None and comp.child.restarts == 1
    assert (tmp_path / "redis").is_dir()
    assert not ping("127.0.0.1", port)  # stopped at the end of the run
