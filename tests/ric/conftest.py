"""Fixtures for RIC tests: a whole embedded RIC per test or per module."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from octoric.redis_server import RedisServer
from octoric.testing.ric_stack import LoopThread, RicStack, free_pair, start_ric, stop_ric

__all__ = ["LoopThread", "RicStack", "free_pair"]


@pytest.fixture
def ric_stack(tmp_path: Path) -> Iterator[RicStack]:
    with RedisServer() as redis:
        stack = start_ric(tmp_path, redis)
        try:
            yield stack
        finally:
            stop_ric(stack)


@pytest.fixture
def loop_thread() -> Iterator[LoopThread]:
    lt = LoopThread()
    yield lt
    lt.stop()


@pytest.fixture(scope="module")
def shared_ric(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RicStack]:
    """One RIC for a whole module, for tests that do not disturb each other."""
    tmp = tmp_path_factory.mktemp("ric")
    with RedisServer() as redis:
        stack = start_ric(tmp, redis)
        try:
            yield stack
        finally:
            stop_ric(stack)
