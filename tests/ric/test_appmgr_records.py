"""appmgr-lite reads its registrations from SDL on every listing and route rebuild, but decodes
only the records whose bytes changed: another writer's change, a deletion or a flushed Redis
must show at once, as they did when every record was decoded every time."""

from __future__ import annotations

import asyncio
import json

import pytest

from octoric.redis_server import RedisServer
from octoric.ric import appmgr
from octoric.ric.sdl import Sdl

pytestmark = pytest.mark.integration


def _record(name: str, port: int, rx: list[str]) -> bytes:
    descriptor = {"name": name, "messaging": {"ports": [
        {"name": "rmr-data", "port": port, "rxMessages": rx, "txMessages": []}]}}  # fmt: skip
    rec = {"name": name, "instance": name, "version": "1",
           "http_endpoint": f"127.0.0.1:{port + 1000}", "rmr_endpoint": f"127.0.0.1:{port}",
           "descriptor": descriptor}  # fmt: skip
    return json.dumps(rec).encode()


def test_listing_follows_sdl_changes_made_by_others(
    redis_server: RedisServer, redis_client: object
) -> None:
    async def run() -> None:
        mine = Sdl(redis_server.host, redis_server.port)
        other = Sdl(redis_server.host, redis_server.port)  # e.g. a restarted platform process
        am = appmgr.Appmgr(mine)
        try:
            await other.set(appmgr.NS, {"a": _record("a", 4600, ["RIC_INDICATION"]),
                                        "b": _record("b", 4610, [])})  # fmt: skip
            first = await am.xapps()
            assert [(x.name, x.routes().rx) for x in first] == [("a", [12050]), ("b", [])]
            again = await am.xapps()
            assert again[0] is first[0], "an unchanged record is decoded again"

            # another writer changes b's descriptor and endpoint, deletes a, adds c
            await other.set(appmgr.NS, {"b": _record("b", 4620, ["RIC_INDICATION"]),
                                        "c": _record("c", 4630, [])})  # fmt: skip
            await other.delete(appmgr.NS, "a")
            now = {x.name: x for x in await am.xapps()}
            assert sorted(now) == ["b", "c"]
            assert now["b"].rmr_endpoint == "127.0.0.1:4620"
            assert now["b"].routes().rx == [12050]

            redis_client.flushall()  # type: ignore[attr-defined]
            assert await am.xapps() == []
        finally:
            await mine.close()
            await other.close()

    asyncio.run(run())
