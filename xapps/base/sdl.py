"""JSON values in an xApp's SDL namespace ``octoric.<xapp>``, through ricsdl (the O-RAN SC
SDL client ricxappframe uses, reading ``DBAAS_SERVICE_HOST``/``PORT``), so the data sits in
Redis in the platform's key layout (``{octoric.occ},flow.1``) and survives the xApp.

And state that survives Redis (issue #17): the store keeps a write-through mirror of its
namespace (loaded by ``load()`` at start, then every write). A write that Redis refuses is
kept in the mirror and counted, never raised into the xApp; reads fall back to the mirror
while Redis is away. ``check()`` (every second from ``watch_in_thread``) looks for a sentinel
key: when Redis comes back empty (restarted without persistence, flushed) the mirror is
written back, counted in ``reseeds``. ``healthy()`` is False while Redis cannot be reached,
so the xApp's ready check answers 503.

Credentials: ricsdl 3.1.3 reads only ``DBAAS_SERVICE_*`` and connects without a password (a
cluster's dbaas has none). The embedded RIC's Redis wants one (issue #43), so
``use_redis_credentials`` gives ricsdl's Redis clients the user and password named by
``OCTORIC_REDIS_USER`` / ``OCTORIC_REDIS_PASSWORD_FILE``, for our store and for ricxappframe's
own SDL (R-NIB reads, health checks) alike; without those variables it changes nothing.
"""

from __future__ import annotations

import functools
import json
import logging
import threading
import time
from typing import Any

from octoric.redis_server import RedisAuth

log = logging.getLogger("xapps.sdl")
SENTINEL = "__octoric.sentinel"  # written by the store; gone = Redis lost our data


def _backend_errors() -> tuple[type[BaseException], ...]:
    try:
        from ricsdl.exceptions import SdlException
    except ImportError:  # pragma: no cover - ricsdl is a dependency
        return (OSError,)
    return (SdlException, OSError)


def use_redis_credentials() -> bool:
    """Make ricsdl's Redis clients (standalone Redis, the embedded RIC's case; not Sentinel)
    authenticate with the credentials the environment names (module docstring). Call it
    before ricsdl's ``SyncStorage`` is made (ricxappframe makes one in ``RMRXapp()``); again
    is harmless. True when credentials are in force; a password file that cannot be read is a
    clear ``OctoricError``."""
    import ricsdl.backend.redis as backend

    client = backend.Redis
    plain = client.func if isinstance(client, functools.partial) else client
    auth = RedisAuth.from_env()
    if not auth.enabled:
        backend.Redis = plain  # ricsdl as shipped (again, if an earlier call changed it)
        return False
    # ricsdl builds each client as ``Redis(host=..., port=..., db=0, max_connections=20)``;
    # its pub/sub shares that client's pool, so it authenticates too
    username, password = auth.credentials()
    backend.Redis = functools.partial(plain, username=username, password=password)
    return True


class SdlStore:
    """get/set/delete/find of JSON (or raw bytes) under one namespace, with a mirror.
    Thread-safe: ricsdl calls are single Redis commands; the mirror has a lock."""

    def __init__(self, xapp: str, storage: Any | None = None) -> None:
        self.ns = f"octoric.{xapp}"
        if storage is None:
            from ricsdl.syncstorage import SyncStorage

            use_redis_credentials()
            storage = SyncStorage()
        self._s = storage
        self._errors = _backend_errors()
        self._mirror: dict[str, bytes] = {}
        self._lock = threading.Lock()
        self._up = True
        self.reseeds = 0
        self.write_errors = 0
        self.read_errors = 0
        self.last_error = ""

    # --- writes: Redis, and the mirror in any case ----------------------------------------
    def _failed(self, what: str, e: BaseException) -> None:
        self.last_error = f"{what}: {e}"
        if self._up:
            log.warning("SDL %s: %s failed (kept in memory until Redis is back): %s",
                        self.ns, what, e)  # fmt: skip
        self._up = False

    def set_json(self, key: str, value: Any) -> None:
        self.set_many({key: json.dumps(value).encode()})

    def set_many(self, items: dict[str, bytes]) -> None:
        if not items:
            return
        with self._lock:
            self._mirror.update(items)
        try:
            self._s.set(self.ns, items)
        except self._errors as e:
            self.write_errors += 1
            self._failed("set", e)

    def set_many_json(self, items: dict[str, Any]) -> None:
        self.set_many({k: json.dumps(v).encode() for k, v in items.items()})

    def delete(self, *keys: str) -> None:
        if not keys:
            return
        with self._lock:
            for k in keys:
                self._mirror.pop(k, None)
        try:
            self._s.remove(self.ns, set(keys))
        except self._errors as e:
            self.write_errors += 1
            self._failed("delete", e)

    # --- reads: Redis, the mirror while Redis is away ----------------------------------------
    def get(self, key: str) -> bytes | None:
        try:
            v = self._s.get(self.ns, {key}).get(key)
        except self._errors as e:
            self.read_errors += 1
            self._failed("get", e)
            with self._lock:
                return self._mirror.get(key)
        return None if v is None else bytes(v)

    def get_json(self, key: str) -> Any:
        v = self.get(key)
        return None if v is None else json.loads(v)

    def find(self, prefix: str) -> dict[str, bytes]:
        """Every key starting with ``prefix`` (glob characters in it are escaped)."""
        pattern = "".join("\\" + c if c in "*?[]\\" else c for c in prefix) + "*"
        try:
            found = self._s.find_and_get(self.ns, pattern)
        except self._errors as e:
            self.read_errors += 1
            self._failed("find", e)
            with self._lock:
                return {k: v for k, v in self._mirror.items() if k.startswith(prefix)}
        return {k: bytes(v) for k, v in found.items() if k != SENTINEL}

    def find_json(self, prefix: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k, v in self.find(prefix).items():
            try:
                out[k] = json.loads(v)
            except ValueError:
                log.warning("SDL %s,%s is not JSON; ignored", self.ns, k)
        return out

    # --- surviving Redis ---------------------------------------------------------------------
    def load(self) -> int:
        """The namespace into the mirror (what a previous run kept) and the sentinel set;
        how many keys. Redis away: 0, and the next ``check`` tries again."""
        try:
            found = self._s.find_and_get(self.ns, "*")
            self._s.set(self.ns, {SENTINEL: str(time.time()).encode()})
        except self._errors as e:
            self._failed("load", e)
            return 0
        with self._lock:
            for k, v in found.items():
                if k != SENTINEL:
                    self._mirror.setdefault(k, bytes(v))
        return len(found)

    def check(self) -> bool:
        """Is Redis there, with our data? Writes the mirror back when it came back empty (or
        after writes it refused). Returns (and remembers) whether Redis could be reached."""
        try:
            if not self._s.get(self.ns, {SENTINEL}).get(SENTINEL) or not self._up:
                with self._lock:
                    data = dict(self._mirror)
                data[SENTINEL] = str(time.time()).encode()
                self._s.set(self.ns, data)
                if self._up:  # up all along, yet the sentinel was gone: emptied
                    self.reseeds += 1
                    log.warning("SDL %s: Redis came back empty; re-seeded %d keys",
                                self.ns, len(data) - 1)  # fmt: skip
                else:
                    log.info("SDL %s: Redis reachable again; %d keys written back",
                             self.ns, len(data) - 1)  # fmt: skip
            self._up = True
        except self._errors as e:
            self._failed("check", e)
        return self._up

    def watch_in_thread(self, stop: threading.Event, period_s: float = 1.0) -> threading.Thread:
        def loop() -> None:
            while not stop.wait(period_s):
                self.check()

        t = threading.Thread(target=loop, name="sdl-watch", daemon=True)
        t.start()
        return t

    def healthy(self) -> bool:
        if not self._up:
            return False
        try:
            return bool(self._s.is_active())
        except Exception:  # any backend failure means "not healthy", never a crash
            return False
