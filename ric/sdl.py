"""The SDL: Redis with the O-RAN SC key layout, so xApps' ricsdl clients see the same data.

ricsdl stores key ``k`` of namespace ``ns`` as the Redis key ``{ns},k`` (the braces make Redis
Cluster keep a namespace on one slot). The embedded RIC writes its own state
(``octoric.ric.*``) and the R-NIB (``e2Manager``) that way.

State that survives Redis: each RIC process keeps a write-through mirror of what it owns (its
namespaces, loaded at start, and everything it writes). ``watch()`` pings Redis every second
and checks a sentinel key the process wrote; when Redis comes back empty (a restart without
persistence, a FLUSHALL) the sentinel is gone and the mirror is written back (``reseed``,
counted, logged), then ``on_reseed`` runs (rtmgr rebuilds and pushes the routes). While
Redis cannot be reached, ``healthy`` is False and the process's ready check answers 503.

Credentials (``auth``, octoric.redis_server.RedisAuth): every connection authenticates as the
run's Redis user. Each watchdog round also opens a new connection, because the pool's
connections stay authenticated after Redis stops admitting anyone (password changed, user
disabled, ``maxclients``): a restarted process could not get in while the pool still worked.
"""

from __future__ import annotations

import asyncio
import builtins
import json
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any

import redis.asyncio as aioredis
from redis.asyncio.connection import Connection
from redis.exceptions import RedisError

from octoric.contracts import ports
from octoric.redis_server import RedisAuth

log = logging.getLogger("ric.sdl")
HEALTH_NS = "octoric.ric.health"  # one sentinel key per RIC process


def db_key(ns: str, key: str) -> str:
    return "{" + ns + "}," + key


class Sdl:
    """Async SDL client: get/set/delete/keys/groups in namespaces, JSON helpers, and the
    mirror that re-seeds Redis when it comes back empty (module docstring)."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = ports.REDIS,
        owned: Sequence[str] = (),
        name: str = "",
        auth: RedisAuth | None = None,
    ) -> None:
        """``owned``: the namespaces this process keeps (loaded into the mirror by ``load``);
        ``name``: its sentinel's key (one per process); ``auth``: the Redis user, if any."""
        self.host, self.port = host, port
        self._user, self._password = (auth or RedisAuth()).credentials()
        self.r: aioredis.Redis[bytes] = aioredis.Redis(
            host=host, port=port, socket_timeout=2.0, socket_connect_timeout=2.0,
            username=self._user, password=self._password,
        )  # fmt: skip
        self.owned, self.name = tuple(owned), name or "sdl"
        self.mirror: dict[str, bytes] = {}  # Redis key -> value, for what this process owns
        self.groups: dict[str, builtins.set[bytes]] = {}  # Redis key -> set members
        self.healthy = True
        self.reseeds = 0
        self.errors = 0
        self.last_error = ""
        self.on_reseed: Callable[[], Awaitable[None]] | None = None
        self._sentinel = db_key(HEALTH_NS, self.name)

    async def close(self) -> None:
        await self.r.close()

    async def ping(self) -> bool:
        return bool(await self.r.ping())

    async def set(self, ns: str, items: dict[str, bytes]) -> None:
        if items:
            data = {db_key(ns, k): v for k, v in items.items()}
            await self.r.mset(data)  # type: ignore[arg-type]
            self.mirror.update(data)

    async def get(self, ns: str, key: str) -> bytes | None:
        v = await self.r.get(db_key(ns, key))
        return None if v is None else bytes(v)

    async def get_many(self, ns: str, keys: Iterable[str]) -> dict[str, bytes]:
        keys = list(keys)
        if not keys:
            return {}
        values = await self.r.mget([db_key(ns, k) for k in keys])
        return {k: bytes(v) for k, v in zip(keys, values, strict=True) if v is not None}

    async def delete(self, ns: str, *keys: str) -> None:
        if keys:
            dbk = [db_key(ns, k) for k in keys]
            await self.r.delete(*dbk)
            for k in dbk:
                self.mirror.pop(k, None)
                self.groups.pop(k, None)

    async def incr(self, ns: str, key: str) -> int:
        """A counter (e.g. submgr's instance IDs); mirrored, so a re-seed never reuses one."""
        k = db_key(ns, key)
        n = int(await self.r.incr(k))
        self.mirror[k] = str(n).encode()
        return n

    async def keys(self, ns: str, prefix: str = "") -> list[str]:
        """Keys of ``ns`` starting with ``prefix`` (SCAN, never KEYS)."""
        head = db_key(ns, "")
        pattern = head.replace("{", "\\{").replace("}", "\\}") + _glob_escape(prefix) + "*"
        out = []
        async for k in self.r.scan_iter(match=pattern, count=500):
            out.append(k.decode()[len(head) :])
        return sorted(out)

    async def add_member(self, ns: str, group: str, *members: bytes) -> None:
        if members:
            k = db_key(ns, group)
            await self.r.sadd(k, *members)
            self.groups.setdefault(k, set()).update(members)

    async def remove_member(self, ns: str, group: str, *members: bytes) -> None:
        if members:
            k = db_key(ns, group)
            await self.r.srem(k, *members)
            self.groups.setdefault(k, set()).difference_update(members)

    async def members(self, ns: str, group: str) -> builtins.set[bytes]:
        return {bytes(m) for m in await self.r.smembers(db_key(ns, group))}

    async def set_json(self, ns: str, key: str, value: Any) -> None:
        await self.set(ns, {key: json.dumps(value, separators=(",", ":")).encode()})

    async def get_json(self, ns: str, key: str) -> Any:
        raw = await self.get(ns, key)
        return None if raw is None else json.loads(raw)

    async def all_json(self, ns: str, prefix: str = "") -> dict[str, Any]:
        keys = await self.keys(ns, prefix)
        raw = await self.get_many(ns, keys)
        return {k: json.loads(v) for k, v in raw.items()}

    # --- surviving Redis ---------------------------------------------------------------------
    async def load(self) -> int:
        """The owned namespaces into the mirror (at start: what a previous run kept), and the
        sentinel written. Returns how many keys were loaded."""
        n = 0
        for ns in self.owned:
            head = db_key(ns, "")
            pattern = head.replace("{", "\\{").replace("}", "\\}") + "*"
            async for raw in self.r.scan_iter(match=pattern, count=500):
                k = raw.decode()
                kind = (await self.r.type(k)).decode()  # type: ignore[no-untyped-call]
                if kind == "string":
                    v = await self.r.get(k)
                    if v is not None:
                        self.mirror[k] = bytes(v)
                        n += 1
                elif kind == "set":
                    self.groups[k] = {bytes(m) for m in await self.r.smembers(k)}
                    n += 1
        await self.r.set(self._sentinel, str(time.time()).encode())
        return n

    async def reseed(self) -> int:
        """Write the mirror back (Redis came back empty); returns how many keys."""
        pipe = self.r.pipeline(transaction=False)
        if self.mirror:
            pipe.mset(self.mirror)  # type: ignore[arg-type]
        for k, members in self.groups.items():
            if members:
                pipe.sadd(k, *members)
        pipe.set(self._sentinel, str(time.time()).encode())
        await pipe.execute()
        self.reseeds += 1
        n = len(self.mirror) + len(self.groups)
        log.warning("%s: Redis came back empty; re-seeded %d keys", self.name, n)
        if self.on_reseed is not None:
            await self.on_reseed()
        return n

    async def admits(self) -> None:
        """PING on a new connection (AUTH first, as every new connection does); raises when
        Redis does not admit this process now (module docstring)."""
        conn = Connection(
            host=self.host, port=self.port, socket_timeout=2.0, socket_connect_timeout=2.0,
            username=self._user, password=self._password,
        )  # fmt: skip
        try:
            await conn.connect()
            await conn.send_command("PING")
            await conn.read_response()
        finally:
            await conn.disconnect()

    async def check(self) -> bool:
        """One watchdog round: reachable and admitting us? emptied? Re-seeds when needed; sets
        ``healthy``."""
        try:
            await self.admits()
            if not await self.r.exists(self._sentinel):
                await self.reseed()
            ok = True
        except (RedisError, OSError) as e:
            ok = False
            self.errors += 1
            self.last_error = str(e)
        if ok != self.healthy:
            how = "reachable again" if ok else f"unreachable: {self.last_error}"
            log.log(logging.INFO if ok else logging.WARNING, "%s: Redis %s", self.name, how)
        self.healthy = ok
        return ok

    async def watch(self, period_s: float = 1.0) -> None:
        """``check()`` every ``period_s`` until cancelled."""
        while True:
            await asyncio.sleep(period_s)
            await self.check()


def _glob_escape(s: str) -> str:
    return "".join("\\" + c if c in "*?[]\\" else c for c in s)
