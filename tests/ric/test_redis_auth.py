"""Redis is the RIC's alone (issue #43): a local user who is not the RIC's cannot read, forge
or stop its state.

Before: the embedded RIC's Redis had no password. A process running as ``nobody`` wrote two
keys that made rtmgr sign a route table naming it (KPM indications, OCC reports and e2term's
control allow-list followed), ran ``CONFIG SET requirepass x`` and so crash-looped the whole
run, and read the append-only file (mode 0644); appmgr's ready check said 200 while Redis
admitted no one. Each attack is replayed here as ``nobody`` against ``octoric ric up`` with
its own Redis (the ``octoric run`` way), which needs root to switch users."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import stat
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from octoric.redis_server import (
    ADMIN_PASSWORD_FILE,
    ADMIN_USER,
    APP_USER,
    PASSWORD_FILE,
    RedisAuth,
    RedisServer,
    free_port,
)
from octoric.ric.services import COMPONENTS, RicRuntime
from octoric.ric.stack import spawn_ric_up

pytestmark = [pytest.mark.integration]
NOBODY = 65534  # uid nobody, gid nogroup (Debian)
# the attacker's interpreter: one nobody may run (the venv's may live under a private /root)
SYSTEM_PYTHON = "/usr/bin/python3"
needs_root = pytest.mark.skipif(
    os.geteuid() != 0 or not os.access(SYSTEM_PYTHON, os.X_OK),
    reason="replaying an attack as user nobody needs root (to switch users) and /usr/bin/python3",
)

# What a hostile process does, as nobody: raw RESP on the RIC's Redis port, and a read of
# every file of the run folder (the paths come from the test, which can list them).
ATTACKER = r"""
import json, socket, sys
port, paths = int(sys.argv[1]), json.loads(sys.argv[2])
def cmd(*args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        out += b"$%d\r\n%s\r\n" % (len(a.encode()), a.encode())
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(out)
        return s.recv(4096).decode(errors="replace").strip()
out = {
    "set": cmd("SET", "{octoric.ric.appmgr},evil", "{}"),
    "config": cmd("CONFIG", "SET", "requirepass", "x"),
    "shutdown": cmd("SHUTDOWN", "NOSAVE"),
    "auth_default": cmd("AUTH", "x"),
    "read": {},
}
for p in paths:
    try:
        with open(p, "rb") as f:
            f.read(1)
        out["read"][p] = "read"
    except OSError as e:
        out["read"][p] = type(e).__name__
print(json.dumps(out))
"""


@dataclass
class OwnRedisRic:
    proc: subprocess.Popen[bytes]
    rt: RicRuntime
    run_dir: Path
    redis_port: int
    log: Path

    def ready(self, comp: str) -> int:
        url = f"http://127.0.0.1:{self.rt.http_port(comp)}/ric/v1/health/ready"
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                return int(r.status)
        except urllib.error.HTTPError as e:
            return int(e.code)
        except OSError:
            return 0


def _logs(base: Path) -> str:
    """The run's own log and its processes' (why a start failed)."""
    return "\n".join(f"--- {p}\n{p.read_text(errors='replace')[-2000:]}" for p in
                     sorted(base.rglob("*.log")))  # fmt: skip


@contextlib.contextmanager
def ric_with_own_redis(extra: tuple[str, ...] = ()) -> Iterator[OwnRedisRic]:
    """``octoric ric up`` with the Redis it starts itself, its run folder below a folder every
    user may enter (as a checkout's build/run is; pytest's tmp_path is private to root, which
    would hide what the run folder's own modes do)."""
    base = Path(tempfile.mkdtemp(prefix="octoric-auth-"))
    base.chmod(0o755)
    port = free_port()
    proc, log = spawn_ric_up(base, [f"redis.port={port}", *extra])
    try:
        current = base / "state" / "current.json"
        deadline = time.monotonic() + 120
        while not current.exists():
            assert proc.poll() is None and time.monotonic() < deadline, _logs(base)
            time.sleep(0.1)
        state = Path(json.loads(current.read_text())["state"])
        ric = OwnRedisRic(proc, RicRuntime.read(state), state.parent, port, log)
        while ric.ready("a1") != 200:  # a1 starts last
            assert proc.poll() is None and time.monotonic() < deadline, _logs(base)
            time.sleep(0.1)
        yield ric
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        shutil.rmtree(base, ignore_errors=True)


def _redis(port: int, auth: RedisAuth | None) -> object:
    import redis

    user, password = (auth or RedisAuth()).credentials()
    return redis.Redis(port=port, username=user, password=password, socket_timeout=5)


def _reply(client: object, *args: str) -> str:
    import redis

    try:
        return str(client.execute_command(*args))  # type: ignore[attr-defined]
    except redis.RedisError as e:
        return f"{type(e).__name__}: {e}"


@needs_root
def test_a_local_user_cannot_forge_stop_or_read_the_ric(tmp_path: Path) -> None:
    with ric_with_own_redis() as ric:
        files = [p for p in ric.run_dir.rglob("*") if p.is_file()]
        names = {p.name for p in files}
        assert {"ric.json", "api-token", "routes.rt"} <= names, names
        assert any("appendonly" in p.name for p in files), names  # the AOF is there to steal
        argv = [SYSTEM_PYTHON, "-c", ATTACKER, str(ric.redis_port), json.dumps(
            [str(p) for p in files])]  # fmt: skip
        done = subprocess.run(argv, user=NOBODY, group=NOBODY, extra_groups=[],
                              capture_output=True, text=True, timeout=60, cwd="/")  # fmt: skip
        assert done.returncode == 0, done.stderr
        got = json.loads(done.stdout)
        # no command without logging in, and no password to log in with
        assert got["set"].startswith("-NOAUTH"), got
        assert got["config"].startswith("-NOAUTH"), got
        assert got["shutdown"].startswith("-NOAUTH"), got
        assert not got["auth_default"].startswith("+OK"), got
        assert set(got["read"].values()) == {"PermissionError"}, got["read"]
        assert {PASSWORD_FILE, ADMIN_PASSWORD_FILE, "redis.conf"} <= names, names
        # every file the run made is its user's alone, every folder too
        for p in [ric.run_dir, *ric.run_dir.rglob("*")]:
            mode = stat.S_IMODE(p.lstat().st_mode)
            assert mode & 0o077 == 0, f"{p} has mode {mode:o}"

        admin = _redis(
            ric.redis_port, RedisAuth(ADMIN_USER, str(ric.run_dir / ADMIN_PASSWORD_FILE))
        )
        assert _reply(admin, "GET", "{octoric.ric.appmgr},evil") == "None"
        # the RIC's own user (what an xApp holds) cannot stop or reconfigure Redis either
        app = _redis(ric.redis_port, RedisAuth(APP_USER, str(ric.run_dir / PASSWORD_FILE)))
        for args in (("CONFIG", "SET", "requirepass", "x"), ("SHUTDOWN", "NOSAVE"),
                     ("FLUSHALL",), ("ACL", "SETUSER", APP_USER, "nopass"), ("DEBUG", "SLEEP", "0"),
                     ("MODULE", "LIST")):  # fmt: skip
            why = _reply(app, *args)  # DEBUG and MODULE: off in redis-server itself (7.0+)
            assert why.startswith("NoPermissionError") or "command not allowed" in why, args
        assert _reply(app, "SET", "{octoric.t},k", "v") == "True"
        # what Redis refused is counted and said (octoric.runner.RedisComponent)
        deadline = time.monotonic() + 10
        while "Redis refused" not in ric.log.read_text():
            assert time.monotonic() < deadline, ric.log.read_text()[-2000:]
            time.sleep(0.2)
        time.sleep(1.5)  # a watchdog round of every process after the attacks
        assert [ric.ready(c) for c in COMPONENTS] == [200] * len(COMPONENTS), ric.log.read_text()[
            -2000:
        ]


def test_not_ready_while_redis_refuses_the_ric(tmp_path: Path) -> None:
    """Redis stops admitting the RIC's user (here its password changed; as after a CONFIG SET
    requirepass): every process says 503, then 200 once Redis admits it again. Before, the
    pool's already-authenticated connections kept appmgr's ready check at 200."""
    with ric_with_own_redis() as ric:
        admin = _redis(
            ric.redis_port, RedisAuth(ADMIN_USER, str(ric.run_dir / ADMIN_PASSWORD_FILE))
        )
        password = (ric.run_dir / PASSWORD_FILE).read_text().strip()
        assert _reply(admin, "ACL", "SETUSER", APP_USER, "resetpass", ">another") == "b'OK'"
        deadline = time.monotonic() + 10
        while any(ric.ready(c) != 503 for c in COMPONENTS):
            assert time.monotonic() < deadline, [ric.ready(c) for c in COMPONENTS]
            time.sleep(0.2)
        body = urllib.request.Request(
            f"http://127.0.0.1:{ric.rt.ric.appmgr_port}/ric/v1/health/ready"
        )
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(body, timeout=2)
        assert "SDL (Redis)" in e.value.read().decode()
        assert _reply(admin, "ACL", "SETUSER", APP_USER, "resetpass", f">{password}") == "b'OK'"
        deadline = time.monotonic() + 10
        while any(ric.ready(c) != 200 for c in COMPONENTS):
            assert time.monotonic() < deadline, [ric.ready(c) for c in COMPONENTS]
            time.sleep(0.2)
        assert ric.proc.poll() is None


def test_external_redis_with_a_password(tmp_path: Path) -> None:
    """redis.external with redis.username / redis.password_file: the RIC logs in with them;
    without them, or with a wrong one, `octoric ric up` stops at once with one clear line."""
    from octoric.ric.stack import start_ric, stop_ric

    with RedisServer(auth=True) as server:
        login = (f"redis.username={server.auth.username}",
                 f"redis.password_file={server.auth.password_file}")  # fmt: skip
        (tmp_path / "ok").mkdir()
        stack = start_ric(tmp_path / "ok", server, login)
        try:
            assert stack.rt.redis_auth() == server.auth
            admin = _redis(server.port, server.admin)
            # the RIC's processes wrote their state (their sentinels) as the app user
            assert "platform" in _reply(admin, "KEYS", "{octoric.ric.health},*")
        finally:
            stop_ric(stack)
        (tmp_path / "wrong").mkdir()
        wrong = tmp_path / "wrong" / "password"
        wrong.write_text("not-it\n")
        for extra, says in (
            ((), "wants a password: name a file that holds it with --set redis.password_file"),
            ((f"redis.username={APP_USER}", f"redis.password_file={wrong}"), "WRONGPASS"),
        ):
            with pytest.raises(RuntimeError, match="RIC did not start") as e:
                start_ric(tmp_path / "wrong", server, extra)
            assert says in str(e.value), str(e.value)
