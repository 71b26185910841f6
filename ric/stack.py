"""A whole embedded RIC for tests and benchmarks: real Redis, the four RIC processes, free
ports throughout (so it runs beside `make run`)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Coroutine, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from octoric.redis_server import RedisServer, free_port
from octoric.ric.services import RicRuntime

T = TypeVar("T")

RIC_PORTS = [
    "e2_port",
    "e2term_rmr_port",
    "submgr_rmr_port",
    "submgr_rest_port",
    "a1_rest_port",
    "a1_rmr_port",
    "appmgr_port",
    "rtmgr_rest_port",
    "rtmgr_rmr_port",
    "e2term_http_port",
]


def free_pair() -> int:
    """A free port p whose p+1 (the RMR route port) is free too."""
    for _ in range(100):
        p = free_port()
        if p < 65000:
            try:
                import socket

                with socket.socket() as s:
                    s.bind(("127.0.0.1", p + 1))
                return p
            except OSError:
                continue
    raise RuntimeError("no free port pair")


def distinct_pairs(names: list[str]) -> dict[str, int]:
    """A free port pair (p, p+1) per name, no two pairs overlapping (every RMR endpoint also
    listens on p+1, so independently chosen pairs could collide)."""
    taken: set[int] = set()
    out: dict[str, int] = {}
    for name in names:
        for _ in range(200):
            p = free_pair()
            if not {p, p + 1} & taken:
                break
        else:
            raise RuntimeError("no distinct free port pairs")
        taken |= {p, p + 1}
        out[name] = p
    return out


@dataclass
class RicStack:
    proc: subprocess.Popen[bytes]
    rt: RicRuntime
    state_dir: Path
    redis: RedisServer
    log: Path

    def url(self, port_name: str, path: str) -> str:
        return f"http://127.0.0.1:{getattr(self.rt.ric, port_name)}{path}"


def spawn_ric_up(base: Path, sets: Sequence[str]) -> tuple[subprocess.Popen[bytes], Path]:
    """``octoric ric up`` on distinct free RIC ports, its run folder and state below ``base``
    (``sets``: more ``--set`` overrides, e.g. the Redis to use); the process and its log."""
    overrides = [f"report_dir={base}/run"]
    overrides += [f"ric.{k}={v}" for k, v in distinct_pairs(RIC_PORTS).items()]
    overrides += sets  # last: they win over the defaults above
    env = dict(os.environ, OCTORIC_STATE_DIR=str(base / "state"), OCTORIC_LOG_FORMAT="json")
    argv = [sys.executable, "-m", "octoric.cli", "ric", "up"]
    for o in overrides:
        argv += ["--set", o]
    log = base / "ric.log"
    proc = subprocess.Popen(argv, stdout=log.open("wb"), stderr=subprocess.STDOUT, env=env)
    return proc, log


def start_ric(tmp: Path, redis: RedisServer, extra: Sequence[str] = ()) -> RicStack:
    """``extra``: more ``--set`` overrides, e.g. ``ric.e2_setup_timeout_s=2``."""
    redis_sets = ["redis.external=true", f"redis.port={redis.port}"]
    proc, log = spawn_ric_up(tmp, [*redis_sets, *extra])
    try:
        return _wait_healthy(proc, tmp, redis, log)
    except BaseException:
        terminate(proc)  # never leave a half-started RIC behind
        raise


def _wait_healthy(
    proc: subprocess.Popen[bytes], tmp: Path, redis: RedisServer, log: Path
) -> RicStack:
    current = tmp / "state" / "current.json"
    deadline = time.monotonic() + 120
    while not current.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"RIC did not start:\n{log.read_text()[-3000:]}")
        time.sleep(0.1)
    rt = RicRuntime.read(Path(json.loads(current.read_text())["state"]))
    # healthy once a1 (the last one started) answers
    import urllib.request

    while True:
        try:
            with urllib.request.urlopen(
                f"http://127.0.0.1:{rt.ric.a1_rest_port}/ric/v1/health/alive", timeout=0.5
            ):
                break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"RIC not healthy:\n{log.read_text()[-3000:]}") from None
            time.sleep(0.1)
    return RicStack(proc, rt, tmp / "state", redis, log)


def terminate(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM, then SIGKILL after 30 s (a process this test or tool started)."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def stop_ric(stack: RicStack) -> None:
    terminate(stack.proc)


@contextlib.contextmanager
def running_ric(tmp: Path, extra: Sequence[str] = ()) -> Iterator[RicStack]:
    """A private Redis and a whole RIC on free ports, torn down on exit (tests, benches)."""
    with RedisServer() as redis:
        stack = start_ric(tmp, redis, extra)
        try:
            yield stack
        finally:
            stop_ric(stack)


class LoopThread:
    """An asyncio loop in a background thread, for E2 nodes beside synchronous test code."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def call(self, coro: Coroutine[Any, Any, T], timeout: float = 30) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
