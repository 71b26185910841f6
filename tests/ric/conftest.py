"""Fixtures for RIC tests: a whole embedded RIC per test or per module."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from octoric.ric.stack import LoopThread, RicStack, free_pair, running_ric

__all__ = ["LoopThread", "RicStack", "free_pair"]


@pytest.fixture
def ric_stack(tmp_path: Path) -> Iterator[RicStack]:
    with running_ric(tmp_path) as stack:
        yield stack


@pytest.fixture
def loop_thread() -> Iterator[LoopThread]:
    lt = LoopThread()
    yield lt
    lt.stop()
