"""Our SDL writes what ricsdl (the O-RAN SC SDL library xApps use) reads, and back."""

from __future__ import annotations

import asyncio

import pytest

from octoric.redis_server import RedisServer
from octoric.ric.sdl import Sdl

pytestmark = pytest.mark.integration


@pytest.fixture
def ricsdl_storage(redis_server: RedisServer, monkeypatch: pytest.MonkeyPatch) -> object:
    from ricsdl.syncstorage import SyncStorage

    monkeypatch.setenv("DBAAS_SERVICE_HOST", redis_server.host)
    monkeypatch.setenv("DBAAS_SERVICE_PORT", str(redis_server.port))
    return SyncStorage()


def test_interoperates_with_ricsdl(
    redis_server: RedisServer, redis_client: object, ricsdl_storage: object
) -> None:
    async def ours() -> tuple[dict[str, bytes], list[str], set[bytes]]:
        sdl = Sdl(redis_server.host, redis_server.port)
        await sdl.set("octoric.test", {"a": b"1", "b*": b"2"})
        await sdl.add_member("octoric.test", "grp", b"x", b"y")
        got = await sdl.get_many("octoric.test", ["theirs", "a"])
        keys = await sdl.keys("octoric.test", "b*")
        members = await sdl.members("octoric.test", "grp")
        await sdl.close()
        return got, keys, members

    ricsdl_storage.set("octoric.test", {"theirs": b"from-ricsdl"})  # type: ignore[attr-defined]
    got, keys, members = asyncio.run(ours())
    assert got == {"theirs": b"from-ricsdl", "a": b"1"}
    assert keys == ["b*"]  # glob characters in a prefix are literal
    assert members == {b"x", b"y"}
    assert ricsdl_storage.get("octoric.test", {"a"}) == {"a": b"1"}  # type: ignore[attr-defined]
    assert ricsdl_storage.get_members("octoric.test", "grp") == {b"x", b"y"}  # type: ignore[attr-defined]


def test_json_helpers(redis_server: RedisServer, redis_client: object) -> None:
    async def go() -> dict[str, object]:
        sdl = Sdl(redis_server.host, redis_server.port)
        await sdl.set_json("ns", "sub.1", {"id": 1})
        await sdl.set_json("ns", "sub.2", {"id": 2})
        await sdl.set_json("ns", "other", {"id": 3})
        await sdl.delete("ns", "sub.2")
        out = await sdl.all_json("ns", "sub.")
        await sdl.close()
        return out

    assert asyncio.run(go()) == {"sub.1": {"id": 1}}
