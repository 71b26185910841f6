"""The real-Redis fixture and the RedisServer behind it."""

from __future__ import annotations

import os

import pytest

from octoric.errors import OctoricError
from octoric.redis_server import RedisServer, ping

pytestmark = pytest.mark.integration


def test_fixture_is_a_real_redis(redis_server: RedisServer, redis_client: object) -> None:
    import redis

    assert isinstance(redis_client, redis.Redis)
    redis_client.set("octoric:k", b"v")
    assert redis_client.get("octoric:k") == b"v"
    assert redis_client.info("server")["redis_version"]
    assert ping(redis_server.host, redis_server.port)


def test_each_test_starts_empty(redis_client: object) -> None:
    import redis

    assert isinstance(redis_client, redis.Redis)
    assert redis_client.dbsize() == 0


def test_stop_leaves_no_process() -> None:
    server = RedisServer().start()
    assert server.proc is not None
    pid = server.proc.pid
    server.stop()
    assert not ping(server.host, server.port)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_port_in_use_is_a_clear_error(redis_server: RedisServer) -> None:
    with pytest.raises(OctoricError, match="already has a Redis server"):
        RedisServer(port=redis_server.port).start()


def test_missing_binary_is_a_clear_error() -> None:
    with pytest.raises(OctoricError, match="apt-get install -y redis-server"):
        _no_binary().start()


def _no_binary() -> RedisServer:
    s = RedisServer()
    s.binary = None
    return s
