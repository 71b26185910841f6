"""Start and stop a real ``redis-server`` (Debian's) for the embedded RIC and for tests."""

from __future__ import annotations

import contextlib
import functools
import re
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

from octoric.errors import OctoricError

INSTALL_HINT = (
    "install it with `apt-get update && apt-get install -y redis-server` (or `make setup`)"
)


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free a moment ago (bind to 0, read it back, release it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def ping(host: str, port: int, timeout: float = 0.5) -> bool:
    """True when a Redis server answers PING at host:port (raw RESP, no client library)."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.sendall(b"*1\r\n$4\r\nPING\r\n")
            return s.recv(16).startswith(b"+PONG")
    except OSError:
        return False


@functools.cache
def _keeps_environment(binary: str) -> list[str]:
    """``--set-proc-title no`` where redis-server knows it (6.2+): setting its process title
    overwrites the environment /proc shows, and with it the run's marker that ``octoric stop``
    and a later start find a run's processes by (octoric.lifeline)."""
    try:
        out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return []
    m = re.search(r"v=(\d+)\.(\d+)", out.stdout)
    return ["--set-proc-title", "no"] if m and (int(m[1]), int(m[2])) >= (6, 2) else []


def server_argv(binary: str, host: str, port: int, data_dir: Path, persist: bool) -> list[str]:
    """A redis-server command line: loopback, no RDB snapshots; with ``persist`` an append-only
    file fsynced on every write, so a restarted server (same ``data_dir``) has every key back."""
    return [
        binary,
        "--bind", host,
        "--port", str(port),
        "--save", "",
        "--appendonly", "yes" if persist else "no",
        "--appendfsync", "always",
        "--dir", str(data_dir),
        "--logfile", str(data_dir / "redis.log"),
        "--protected-mode", "no",
        *_keeps_environment(binary),
    ]  # fmt: skip


def redis_binary() -> str:
    binary = shutil.which("redis-server")
    if not binary:
        raise OctoricError(f"redis-server not found; {INSTALL_HINT}")
    return binary


class RedisServer:
    """A private redis-server on loopback: no persistence, its own temp dir, killed on stop."""

    def __init__(self, port: int = 0, host: str = "127.0.0.1", binary: str | None = None) -> None:
        self.host = host
        self.port = port or free_port(host)
        self.binary = binary or shutil.which("redis-server")
        self.proc: subprocess.Popen[bytes] | None = None
        self._dir: tempfile.TemporaryDirectory[str] | None = None

    @property
    def url(self) -> str:
        return f"redis://{self.host}:{self.port}/0"

    def start(self, timeout: float = 10.0) -> RedisServer:
        if not self.binary:
            raise OctoricError(f"redis-server not found; {INSTALL_HINT}")
        if ping(self.host, self.port):
            raise OctoricError(f"port {self.port} already has a Redis server; pick another port")
        self._dir = tempfile.TemporaryDirectory(prefix="octoric-redis-")
        log = Path(self._dir.name) / "redis.log"
        args = server_argv(self.binary, self.host, self.port, Path(self._dir.name), persist=False)
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                tail = log.read_text()[-500:] if log.exists() else ""
                raise OctoricError(f"redis-server exited with {self.proc.returncode}: {tail}")
            if ping(self.host, self.port):
                return self
            time.sleep(0.02)
        self.stop()
        raise OctoricError(f"redis-server did not answer on {self.host}:{self.port} in {timeout}s")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.proc = None
        if self._dir is not None:
            with contextlib.suppress(OSError):
                self._dir.cleanup()
            self._dir = None

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
