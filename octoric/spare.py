"""Warm spares: a restarted process that skips its interpreter start and imports.

A Python xApp spends most of a cold start (~1 s here: numpy, numba, the codecs) before it
does anything of its own, and every indication sent meanwhile is lost. The supervisor
(``supervisor.ChildProcess(spare=True)``) therefore keeps one *spare* per such component: a
process started with the same argv and environment plus ``OCTORIC_SPARE_FD``, which imports
what it will need, then blocks on that pipe. On a (re)start the supervisor writes one byte
and the spare goes on exactly as a fresh process would from that point (reading its
configuration, SDL state and ports only now, so it starts from the newest state). When the
pipe closes without a byte (the supervisor stops, or retires the spare), it exits quietly.

This is the child side; a program opts in by calling :func:`wait_if_spare` after its
imports. A program that does not call it must not be run with ``spare=True``: it would run
as a second instance.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

SPARE_FD_ENV = "OCTORIC_SPARE_FD"
ACTIVATE = b"!"


def is_spare() -> bool:
    return bool(os.environ.get(SPARE_FD_ENV))


def wait_if_spare(preload: Callable[[], None] | None = None) -> float:
    """In a spare: run ``preload`` (work that needs no state: imports, compiled kernels),
    wait for activation, return how long it waited (s); exits 0 on a closed pipe.
    Not a spare: return 0.0 at once (``preload`` is left to the caller's normal path)."""
    fd_s = os.environ.pop(SPARE_FD_ENV, "")  # its children are not spares
    if not fd_s:
        return 0.0
    fd = int(fd_s)
    if preload is not None:
        preload()
    t0 = time.monotonic()
    got = os.read(fd, 1)  # retried on EINTR by Python itself
    os.close(fd)
    if got != ACTIVATE:
        os._exit(0)  # retired: no state was touched, nothing to flush
    return time.monotonic() - t0
