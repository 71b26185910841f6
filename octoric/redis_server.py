"""Start and stop a real ``redis-server`` (Debian's) for the embedded RIC and for tests.

Authentication (issue #43): with ``auth`` the server gets a config file (mode 0600, in its
0700 data folder) with three ACL users: ``default`` disabled, so a connection that has not
authenticated can run no command; ``octoric``, the RIC's and the xApps' user, with every
command but Redis' ``@dangerous`` ones (CONFIG, SHUTDOWN, DEBUG, MODULE, ACL, FLUSHALL,
MONITOR, replication...; KEYS stays allowed, ricsdl's ``find_keys`` uses it); and
``octoric-admin`` with everything (tests and fault injection flush Redis with it). Each
user's password is random per run and lies in a 0600 file (``redis-password``,
``redis-admin-password``); the config file holds only their SHA-256. Clients find the
credentials through ``RedisAuth`` (``OCTORIC_REDIS_USER`` / ``OCTORIC_REDIS_PASSWORD_FILE``).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import re
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from octoric.errors import OctoricError

INSTALL_HINT = (
    "install it with `apt-get update && apt-get install -y redis-server` (or `make setup`)"
)


_handed_out: set[int] = set()  # this process's picks: never the same port twice


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768  # Linux's default


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free a moment ago (bound, then released) for a listener to take.

    Below the kernel's ephemeral range: a port the kernel hands out by bind(0) is one every
    outgoing connection may take too, so a listener started a moment later could find it taken
    by any process's connect() (an xApp's RMR port by its own Redis connection: it then exited,
    "RMR port ... is not free", a CI flake). Picked at random, and never twice in one process.
    Where the ephemeral range starts too low to leave room, bind(0) as before."""
    import random

    low = _ephemeral_low()
    span = low // 4  # the quarter below the range: 24576-32767 with Linux's default
    if span >= 1024 and low - span >= 1024:
        for _ in range(200):
            p = random.randrange(low - span, low)
            if p in _handed_out:
                continue
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                try:
                    s.bind((host, p))
                except OSError:
                    continue
            _handed_out.add(p)
            return p
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


USER_ENV = "OCTORIC_REDIS_USER"
PASSWORD_FILE_ENV = "OCTORIC_REDIS_PASSWORD_FILE"
APP_USER = "octoric"
ADMIN_USER = "octoric-admin"
PASSWORD_FILE = "redis-password"  # the app user's, in the run folder
ADMIN_PASSWORD_FILE = "redis-admin-password"
# the app user: every key and channel, every command but the dangerous ones (module docstring)
APP_RULES = "~* &* +@all -@dangerous +keys"


@dataclass(frozen=True)
class RedisAuth:
    """Credentials for a Redis that wants them: an ACL user (empty: ``default``, i.e. a plain
    ``requirepass``) and a file whose first line is the password. No file: no AUTH at all
    (O-RAN SC's dbaas in a cluster has no password)."""

    username: str = ""
    password_file: str = ""

    @property
    def enabled(self) -> bool:
        return bool(self.password_file)

    def password(self) -> str:
        """The password, read now (a clear error naming the file when it cannot be)."""
        try:
            lines = Path(self.password_file).read_text().splitlines()
        except OSError as e:
            raise OctoricError(
                f"cannot read the Redis password file {self.password_file}: {e.strerror}"
            ) from None
        if not lines or not lines[0]:
            raise OctoricError(f"the Redis password file {self.password_file} is empty")
        return lines[0]

    def credentials(self) -> tuple[str | None, str | None]:
        """(username, password) for a redis-py client; (None, None) without a password file."""
        if not self.enabled:
            return None, None
        return self.username or None, self.password()

    def env(self) -> dict[str, str]:
        """The environment variables that hand these credentials to a child process."""
        if not self.enabled:
            return {}
        return {USER_ENV: self.username, PASSWORD_FILE_ENV: self.password_file}

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> RedisAuth:
        env = os.environ if environ is None else environ
        return cls(env.get(USER_ENV, ""), env.get(PASSWORD_FILE_ENV, ""))


def write_private(path: Path, text: str) -> None:
    """A file only its owner can read, with that mode from the first byte on."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        os.fchmod(f.fileno(), 0o600)  # an existing file keeps its mode through O_CREAT
        f.write(text)


def write_acl(conf_dir: Path, secrets_dir: Path) -> tuple[Path, RedisAuth, RedisAuth]:
    """The ACL config file (in ``conf_dir``) and two new password files (in ``secrets_dir``);
    returns the config file and the app's and the admin's credentials."""
    users = []
    creds = []
    for user, name, rules in (
        (APP_USER, PASSWORD_FILE, APP_RULES),
        (ADMIN_USER, ADMIN_PASSWORD_FILE, "~* &* +@all"),
    ):
        password = secrets.token_hex(32)
        write_private(secrets_dir / name, password + "\n")
        digest = hashlib.sha256(password.encode()).hexdigest()
        users.append(f"user {user} on #{digest} {rules}")
        creds.append(RedisAuth(user, str(secrets_dir / name)))
    conf = conf_dir / "redis.conf"
    # `default` off: a connection that has not authenticated may run nothing (NOAUTH)
    write_private(conf, "\n".join(["user default off resetpass -@all", *users, ""]))
    return conf, creds[0], creds[1]


def _resp(*args: str) -> bytes:
    out = [f"*{len(args)}\r\n".encode()]
    for a in args:
        b = a.encode()
        out.append(b"$%d\r\n%s\r\n" % (len(b), b))
    return b"".join(out)


def command(host: str, port: int, auth: RedisAuth | None, *args: str, timeout: float = 2.0) -> str:
    """One command on a new connection, after AUTH with ``auth`` when it has a password (raw
    RESP, no client library); the reply's first line (``+OK``, ``-NOAUTH ...``), or ``""``
    when nothing answers. For fault injection and probes, not for data."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            if auth is not None and auth.enabled:
                user = [auth.username] if auth.username else []
                s.sendall(_resp("AUTH", *user, auth.password()))
                reply = s.recv(256)
                if not reply.startswith(b"+OK"):
                    return reply.decode(errors="replace").split("\r\n")[0]
            s.sendall(_resp(*args))
            return s.recv(4096).decode(errors="replace").split("\r\n")[0]
    except OSError:
        return ""


def refusals(host: str, port: int, admin: RedisAuth, timeout: float = 2.0) -> dict[str, int]:
    """How many commands Redis refused since it started, by cause, from ``INFO errorstats``
    (admin only): ``noauth`` (not logged in), ``wrongpass`` (a failed AUTH), ``noperm`` (a
    command or key the user may not use). Empty when Redis cannot be asked."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            user = [admin.username] if admin.username else []
            s.sendall(_resp("AUTH", *user, admin.password()) + _resp("INFO", "errorstats"))
            data = b""
            # the replies: +OK, then a bulk string ($<length>, the text): read to its end
            while True:
                parts = data.split(b"\r\n", 2)
                bulk = len(parts) == 3 and parts[1].startswith(b"$")
                if bulk and len(parts[2]) >= int(parts[1][1:]):
                    break
                chunk = s.recv(65536)
                if not chunk:
                    return {}
                data += chunk
    except (OSError, ValueError, OctoricError):
        return {}
    if parts[0] != b"+OK":
        return {}
    out = {"noauth": 0, "wrongpass": 0, "noperm": 0}
    for line in parts[2].decode(errors="replace").splitlines():
        m = re.match(r"errorstat_([A-Z]+):count=(\d+)", line)
        if m and m[1].lower() in out:
            out[m[1].lower()] = int(m[2])
    return out


def admin_auth(run_dir: Path) -> RedisAuth:
    """The admin's credentials of the run whose folder this is (none: its Redis has no ACL)."""
    path = run_dir / ADMIN_PASSWORD_FILE
    return RedisAuth(ADMIN_USER, str(path)) if path.exists() else RedisAuth()


def probe(host: str, port: int, auth: RedisAuth | None = None, timeout: float = 0.5) -> str:
    """One look at the Redis at host:port: ``"ok"`` (PING answered, after AUTH with ``auth``
    when given), ``"noauth"`` (a Redis that wants credentials), ``"down"`` (nothing answers),
    or the server's error (e.g. ``WRONGPASS ...``)."""
    reply = command(host, port, auth, "PING", timeout=timeout)
    if reply.startswith("+PONG"):
        return "ok"
    if reply.startswith("-NOAUTH"):
        return "noauth"
    return reply.lstrip("-") or "down"


def ping(host: str, port: int, timeout: float = 0.5) -> bool:
    """True when a Redis server answers at host:port, whether or not it wants a password."""
    return probe(host, port, timeout=timeout) in ("ok", "noauth")


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


def server_argv(
    binary: str, host: str, port: int, data_dir: Path, persist: bool, conf: Path | None = None
) -> list[str]:
    """A redis-server command line: loopback, no RDB snapshots; with ``persist`` an append-only
    file, so a restarted server (same ``data_dir``) has every key back. Redis writes that file
    before it answers a write, and ``appendfsync no`` leaves its flush to the kernel: a Redis
    that dies (kill -9, a crash) loses no acknowledged write; a machine that dies ends the run
    anyway. ``always`` (an fsync per write) stalled Redis on a loaded 2-core VM for up to 0.8 s
    (SET p99.9 38-75 ms, against 6-8 ms with ``no``): long enough for submgr's reads to time
    out beside a live srsRAN gNB (issue #39);
    ``conf``: the ACL config file of ``write_acl`` (passwords never on the command line, which
    every local user can read in /proc)."""
    return [
        binary,
        *([str(conf)] if conf is not None else []),
        "--bind", host,
        "--port", str(port),
        "--save", "",
        "--appendonly", "yes" if persist else "no",
        "--appendfsync", "no",
        "--dir", str(data_dir),
        "--logfile", str(data_dir / "redis.log"),
        "--protected-mode", "yes" if conf is not None else "no",
        *_keeps_environment(binary),
    ]  # fmt: skip


def redis_binary() -> str:
    binary = shutil.which("redis-server")
    if not binary:
        raise OctoricError(f"redis-server not found; {INSTALL_HINT}")
    return binary


class RedisServer:
    """A private redis-server on loopback: no persistence, its own temp dir, killed on stop.
    With ``auth``: the ACL users of ``write_acl``; ``auth`` / ``admin`` then hold the app's
    and the admin's credentials (password files in the temp dir), else they are empty."""

    def __init__(
        self, port: int = 0, host: str = "127.0.0.1", binary: str | None = None, auth: bool = False
    ) -> None:
        self.host = host
        self.port = port or free_port(host)
        self.binary = binary or shutil.which("redis-server")
        self.with_auth = auth
        self.auth = RedisAuth()
        self.admin = RedisAuth()
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
        where = Path(self._dir.name)
        log = where / "redis.log"
        conf = None
        if self.with_auth:
            conf, self.auth, self.admin = write_acl(where, where)
        args = server_argv(self.binary, self.host, self.port, where, persist=False, conf=conf)
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
