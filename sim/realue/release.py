"""Writing delivered packets into the UEs' TUNs at the end of their slot.

``NativeRelease`` drives the release thread of ``sim/realue/native`` (Rust, C ABI,
``libocto_realue.so``, built by ``make setup``): each packet is written when the wall clock
reaches its slot's end, within tens of µs, although the engine decided the slot earlier.
``ImmediateRelease`` is the fallback where the library is not built: it writes at once, so
packets leave when the event loop gets to their slot (its timers round up to 1 ms); the
path's status says which one runs, and both measure every write's error the same way.
"""

from __future__ import annotations

import ctypes
import os
import time
from pathlib import Path
from typing import Protocol

import numpy as np

from octoric import native_lib

LIB_NAME = "libocto_realue.so"
_DRAIN = 65536


class _Stats(ctypes.Structure):
    _fields_ = [(n, ctypes.c_uint64) for n in (
        "pushed", "refused", "written", "write_errors", "late_pushes", "errors_dropped",
        "pending", "fifo_priority",
    )]  # fmt: skip


class Release(Protocol):
    name: str

    def push(self, due_ns: int, fd: int, data: bytes) -> bool: ...

    def take_errors(self) -> np.ndarray: ...  # ns, write time - due time, since the last call

    def stats(self) -> dict[str, int]: ...

    def close(self) -> None: ...


def library_path() -> Path | None:
    """``$OCTORIC_LIB_DIR``, ``<repo>/build/lib``, then beside this file."""
    return native_lib.find(LIB_NAME, __file__)


class NativeRelease:
    name = "native"

    def __init__(self, path: Path, fifo_priority: int = 0) -> None:
        lib = ctypes.CDLL(str(path))
        vp = ctypes.c_void_p
        lib.octo_release_new.restype = vp
        lib.octo_release_new.argtypes = [ctypes.c_int32]
        lib.octo_release_push.restype = ctypes.c_int32
        lib.octo_release_push.argtypes = [vp, ctypes.c_int64, ctypes.c_int32, ctypes.c_char_p,
                                          ctypes.c_size_t]  # fmt: skip
        lib.octo_release_take_errors.restype = ctypes.c_size_t
        lib.octo_release_take_errors.argtypes = [vp, vp, ctypes.c_size_t]
        lib.octo_release_stats.restype = None
        lib.octo_release_stats.argtypes = [vp, ctypes.POINTER(_Stats)]
        lib.octo_release_free.restype = None
        lib.octo_release_free.argtypes = [vp]
        lib.octo_release_now_ns.restype = ctypes.c_int64
        self._lib = lib
        self._r: int | None = lib.octo_release_new(fifo_priority)
        self._push = lib.octo_release_push
        self._buf = np.zeros(_DRAIN, dtype=np.int64)
        self._final: dict[str, int] | None = None  # the counters when it was closed
        # both sides must read the same clock (CLOCK_MONOTONIC)
        skew = abs(lib.octo_release_now_ns() - time.monotonic_ns())
        if skew > 50_000_000:
            raise RuntimeError(f"the release library's clock is {skew} ns off time.monotonic")

    def push(self, due_ns: int, fd: int, data: bytes) -> bool:
        return bool(self._push(self._r, due_ns, fd, data, len(data)) == 0)

    def take_errors(self) -> np.ndarray:
        out = []
        while self._r is not None:
            n = self._lib.octo_release_take_errors(self._r, self._buf.ctypes.data, _DRAIN)
            out.append(self._buf[:n].copy())
            if n < _DRAIN:
                break
        return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)

    def stats(self) -> dict[str, int]:
        if self._r is None:
            return dict(self._final or {})
        s = _Stats()
        self._lib.octo_release_stats(self._r, ctypes.byref(s))
        return {n[0]: int(getattr(s, n[0])) for n in _Stats._fields_}

    def close(self) -> None:
        if self._r is not None:
            self._final = self.stats()
            self._lib.octo_release_free(self._r)
            self._r = None


class ImmediateRelease:
    def __init__(self, name: str = "immediate") -> None:
        self.name = name
        self._errors: list[int] = []
        self._stats = {"pushed": 0, "refused": 0, "written": 0, "write_errors": 0,
                       "late_pushes": 0, "errors_dropped": 0, "pending": 0,
                       "fifo_priority": 0}  # fmt: skip

    def push(self, due_ns: int, fd: int, data: bytes) -> bool:
        st = self._stats
        st["pushed"] += 1
        now = time.monotonic_ns()
        if due_ns <= now:
            st["late_pushes"] += 1
        try:
            os.write(fd, data)
        except OSError:
            st["write_errors"] += 1
            return True
        st["written"] += 1
        self._errors.append(now - due_ns)
        return True

    def take_errors(self) -> np.ndarray:
        out, self._errors = np.asarray(self._errors, dtype=np.int64), []
        return out

    def stats(self) -> dict[str, int]:
        return dict(self._stats)

    def close(self) -> None:
        pass


def best_release(fifo_priority: int = 0) -> Release:
    """The native release thread where it is built (SCHED_FIFO at ``fifo_priority`` if
    permitted, 0: ordinary), else immediate writes."""
    path = library_path()
    if path is None:
        return ImmediateRelease("immediate (libocto_realue.so not built: `make setup`)")
    return NativeRelease(path, fifo_priority)


def timer_floor_ns(n: int, period_ns: int = 500_000, fifo_priority: int = 10) -> np.ndarray:
    """How late a bare thread like the release thread wakes for ``n`` deadlines ``period_ns``
    apart (ns): this machine's floor for any sleeper. Empty where the library is not built."""
    path = library_path()
    if path is None:
        return np.zeros(0, dtype=np.int64)
    lib = ctypes.CDLL(str(path))
    fn = lib.octo_release_timer_floor
    fn.restype = ctypes.c_size_t
    fn.argtypes = [ctypes.c_size_t, ctypes.c_int64, ctypes.c_int32, ctypes.c_void_p]
    out = np.zeros(n, dtype=np.int64)
    got = fn(n, period_ns, fifo_priority, out.ctypes.data)
    return out[:got]
