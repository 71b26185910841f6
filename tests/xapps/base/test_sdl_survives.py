"""An xApp's SDL state survives Redis (issue #17): flushed or restarted empty, the store
writes its mirror back; while Redis is away, writes are kept and counted (never raised into
the xApp), reads come from the mirror and the store says it is not healthy."""

from __future__ import annotations

import pytest
import redis

from octoric.redis_server import RedisServer
from octoric.xapps.base.sdl import SdlStore

pytestmark = [pytest.mark.integration]


def test_flush_restart_and_absence(monkeypatch: pytest.MonkeyPatch) -> None:
    server = RedisServer().start()
    try:
        monkeypatch.setenv("DBAAS_SERVICE_HOST", "127.0.0.1")
        monkeypatch.setenv("DBAAS_SERVICE_PORT", str(server.port))
        r = redis.Redis(port=server.port)
        r.set("{octoric.survivor},flow.old", b'{"kept": 1}')  # a previous run's state
        s = SdlStore("survivor")
        assert s.load() == 1
        s.set_json("flow.a", {"x": 1})
        r.flushall()
        assert s.get("flow.a") is None  # Redis really lost it ...
        assert s.check() and s.reseeds == 1
        assert s.get_json("flow.a") == {"x": 1} and s.get_json("flow.old") == {"kept": 1}
        assert set(s.find("flow.")) == {"flow.a", "flow.old"}  # the sentinel is not data

        server.stop()  # Redis gone
        s.set_json("flow.b", {"y": 2})  # kept, counted, not raised
        s.delete("flow.a")
        assert s.write_errors == 2 and not s.healthy() and not s.check()
        assert set(s.find("flow.")) == {"flow.old", "flow.b"}  # from the mirror
        assert s.get_json("flow.b") == {"y": 2}

        server.start()  # back, empty (no persistence)
        assert s.check() and s.healthy()
        assert set(s.find("flow.")) == {"flow.old", "flow.b"}
        assert redis.Redis(port=server.port).get("{octoric.survivor},flow.b") == b'{"y": 2}'
    finally:
        server.stop()
