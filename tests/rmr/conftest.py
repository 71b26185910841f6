"""Fixtures for the RMR tests: free loopback ports, peer processes, our library."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from octoric.redis_server import free_port  # noqa: F401  (the rmr tests' import)

REPO = Path(__file__).resolve().parents[2]
PEER = Path(__file__).resolve().parent / "xapp_peer.py"


def wait_listening(port: int, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"nothing listening on 127.0.0.1:{port}")


def rmr_env(seed: Path | None) -> dict[str, str]:
    env = dict(os.environ)
    env["RMR_RTG_SVC"] = "-1"
    env["RMR_BIND_IF"] = "127.0.0.1"
    env.pop("RMR_SRC_ID", None)
    if seed is not None:
        env["RMR_SEED_RT"] = str(seed)
    env.setdefault("OCTORIC_LIB_DIR", str(REPO / "build" / "lib"))
    return env


@pytest.fixture(scope="session")
def our_lib() -> Path:
    from octoric.rmr import RmrLibraryError, lib_path

    try:
        return lib_path()
    except RmrLibraryError as e:
        pytest.skip(str(e))


class Procs:
    def __init__(self) -> None:
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self, args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
        with open(log, "wb") as f:
            p = subprocess.Popen(args, env=env, stdout=f, stderr=subprocess.STDOUT)
        self.procs.append(p)
        return p

    def peer(self, role: str, out: Path, port: int, env: dict[str, str]) -> subprocess.Popen[bytes]:
        return self.start(
            [sys.executable, str(PEER), role, str(out), str(port)], env, out.with_suffix(".log")
        )


@pytest.fixture
def procs() -> Iterator[Procs]:
    p = Procs()
    yield p
    for proc in p.procs:
        if proc.poll() is None:
            proc.kill()  # ricxappframe's stop() takes ~15 s: kill instead
    for proc in p.procs:
        proc.wait(timeout=10)
