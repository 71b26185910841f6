"""The SDL: Redis with the O-RAN SC key layout, so xApps' ricsdl clients see the same data.

ricsdl stores key ``k`` of namespace ``ns`` as the Redis key ``{ns},k`` (the braces make Redis
Cluster keep a namespace on one slot). The embedded RIC writes its own state
(``octoric.ric.*``) and the R-NIB (``e2Manager``) that way.
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Iterable
from typing import Any

import redis.asyncio as aioredis

from octoric.contracts import ports


def db_key(ns: str, key: str) -> str:
    return "{" + ns + "}," + key


class Sdl:
    """Async SDL client: get/set/delete/keys/groups in namespaces, JSON helpers."""

    def __init__(self, host: str = "127.0.0.1", port: int = ports.REDIS) -> None:
        self.host, self.port = host, port
        self.r: aioredis.Redis[bytes] = aioredis.Redis(host=host, port=port)

    async def close(self) -> None:
        await self.r.close()

    async def ping(self) -> bool:
        return bool(await self.r.ping())

    async def set(self, ns: str, items: dict[str, bytes]) -> None:
        if items:
            await self.r.mset({db_key(ns, k): v for k, v in items.items()})

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
            await self.r.delete(*(db_key(ns, k) for k in keys))

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
            await self.r.sadd(db_key(ns, group), *members)

    async def remove_member(self, ns: str, group: str, *members: bytes) -> None:
        if members:
            await self.r.srem(db_key(ns, group), *members)

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


def _glob_escape(s: str) -> str:
    return "".join("\\" + c if c in "*?[]\\" else c for c in s)
