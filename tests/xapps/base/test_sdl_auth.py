"""The xApps' SDL (ricsdl, ours and ricxappframe's own) on a Redis that wants a password
(issue #43): ricsdl 3.1.3 has no password setting, so ``use_redis_credentials`` hands it the
credentials ``OCTORIC_REDIS_USER`` / ``OCTORIC_REDIS_PASSWORD_FILE`` name (the embedded RIC
sets them through ``octoric.deploy.xapp_env``); without them ricsdl is left as shipped."""

from __future__ import annotations

import functools
from collections.abc import Iterator

import pytest

from octoric.errors import OctoricError
from octoric.redis_server import PASSWORD_FILE_ENV, USER_ENV, RedisServer
from octoric.xapps.base.sdl import SdlStore, use_redis_credentials

pytestmark = [pytest.mark.integration]


@pytest.fixture
def authed_redis(monkeypatch: pytest.MonkeyPatch) -> Iterator[RedisServer]:
    import ricsdl.backend.redis as backend

    # whatever a test installs into ricsdl is undone for the tests after it
    monkeypatch.setattr(backend, "Redis", backend.Redis)
    with RedisServer(auth=True) as server:
        monkeypatch.setenv("DBAAS_SERVICE_HOST", server.host)
        monkeypatch.setenv("DBAAS_SERVICE_PORT", str(server.port))
        monkeypatch.delenv("DBAAS_SERVICE_SENTINEL_PORT", raising=False)
        yield server


def _login(monkeypatch: pytest.MonkeyPatch, server: RedisServer) -> None:
    monkeypatch.setenv(USER_ENV, server.auth.username)
    monkeypatch.setenv(PASSWORD_FILE_ENV, server.auth.password_file)


def test_store_and_ricxappframe_sdl_work_with_the_run_credentials(
    authed_redis: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ricxappframe.xapp_sdl import SDLWrapper

    _login(monkeypatch, authed_redis)
    store = SdlStore("authtest")  # installs the credentials itself
    store.set_json("flow.a", {"x": 1})
    assert store.get_json("flow.a") == {"x": 1}
    assert set(store.find("flow.")) == {"flow.a"}  # KEYS: allowed to the app user
    assert store.check() and store.healthy()
    assert store.write_errors == 0 and store.read_errors == 0
    # ricxappframe's own SDL (the R-NIB reads, RMRXapp's health check) goes through it too
    frame = SDLWrapper(use_fake_sdl=False)
    frame.set("octoric.authtest", "k", {"y": 2})
    assert frame.get("octoric.authtest", "k") == {"y": 2}
    assert frame.healthcheck() is True


def test_without_credentials_ricsdl_is_refused_and_left_as_shipped(
    authed_redis: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The other half: the password is what let the first test in; unset, nothing is
    changed (a cluster's dbaas has none) and this Redis refuses ricsdl."""
    import ricsdl.backend.redis as backend
    from ricxappframe.xapp_sdl import SDLWrapper

    _login(monkeypatch, authed_redis)
    assert use_redis_credentials()
    assert isinstance(backend.Redis, functools.partial)
    monkeypatch.delenv(PASSWORD_FILE_ENV)
    assert not use_redis_credentials()
    assert not isinstance(backend.Redis, functools.partial)  # ricsdl as shipped
    store = SdlStore("authtest")
    store.set_json("flow.a", {"x": 1})
    assert store.write_errors == 1 and "Authentication required" in store.last_error
    assert not store.healthy()
    assert SDLWrapper(use_fake_sdl=False).healthcheck() is False


def test_an_unreadable_password_file_is_a_clear_error(
    authed_redis: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(USER_ENV, "octoric")
    monkeypatch.setenv(PASSWORD_FILE_ENV, "/nonexistent/redis-password")
    with pytest.raises(OctoricError, match="cannot read the Redis password file /nonexistent"):
        SdlStore("authtest")
