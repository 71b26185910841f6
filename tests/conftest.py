"""Fixtures every suite may use. Real parts, not mocks: a real redis-server on a free port."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from octoric.contracts import auth
from octoric.redis_server import RedisServer

# One API token for the session's RICs and xApps (the launcher takes it from the environment),
# so the tests' REST helpers (testkit.rest, test_a1.http) can present it.
os.environ.setdefault(auth.TOKEN_ENV, "octoric-test-" + auth.new_token()[:16])

REPO = Path(__file__).resolve().parent.parent
SHARED = (REPO.parent / "shared").resolve()


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    """One real redis-server for the whole session, on a free loopback port."""
    with RedisServer() as server:
        yield server


@pytest.fixture
def redis_client(redis_server: RedisServer) -> Iterator[object]:
    """A redis-py client on a flushed database (each test starts empty)."""
    import redis

    client = redis.Redis(host=redis_server.host, port=redis_server.port)
    client.flushall()
    yield client
    client.close()


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """../shared beside the repository; tests that need it skip with a clear reason."""
    if not SHARED.is_dir():
        pytest.skip(f"{SHARED} not found: these tests need ../shared beside the repository")
    return SHARED


@pytest.fixture
def netns_pair() -> Iterator[object]:
    """Two network namespaces joined by veth (skips cleanly when not root)."""
    from testkit.netns import NetnsPair, netns_unavailable

    why = netns_unavailable()
    if why:
        pytest.skip(why)
    with NetnsPair() as pair:
        yield pair


@pytest.fixture(scope="module")
def shared_ric(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """A whole embedded RIC (real Redis + its four processes, free ports) for one test module."""
    from octoric.ric.stack import running_ric

    with running_ric(tmp_path_factory.mktemp("ric")) as stack:
        yield stack
