"""octoric's RMR library (``librmr_si.so``) for unmodified ricxappframe xApps.

Importing this module loads the library with ``RTLD_GLOBAL``. Because the library's soname
is ``librmr_si.so``, glibc then satisfies ricxappframe's own ``CDLL("librmr_si.so")`` with
the copy already loaded, so no ``LD_LIBRARY_PATH`` is needed::

    import octoric.rmr  # noqa: F401  (must come before ricxappframe)
    from ricxappframe.xapp_frame import RMRXapp

Where the library is looked for, first hit wins: ``$OCTORIC_RMR_LIB`` (a file),
``$OCTORIC_LIB_DIR/librmr_si.so``, ``<repo>/build/lib/librmr_si.so``, this package's folder.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from octoric.errors import OctoricError
from octoric.native import LIB_NAME, rmr_candidates, rmr_library


class RmrLibraryError(OctoricError):
    """The RMR library could not be found or loaded."""


def lib_path() -> Path:
    """The library file that :func:`load` would use."""
    found = rmr_library()
    if found is not None:
        return found
    tried = ", ".join(str(p) for p in rmr_candidates())
    raise RmrLibraryError(f"{LIB_NAME} not found (tried {tried}); run `make native`")


_LIB: ctypes.CDLL | None = None


def load() -> ctypes.CDLL:
    """Load the library once, globally, so later dlopen("librmr_si.so") finds it."""
    global _LIB
    if _LIB is None:
        path = lib_path()
        try:
            _LIB = ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL)
        except OSError as e:
            raise RmrLibraryError(f"cannot load {path}: {e}") from e
    return _LIB


def warm_ricxappframe_constants() -> None:
    """Fill ricxappframe's cache of RMR's constants (call after importing ricxappframe).

    Its ``get_constants(cache={})`` means to cache them in the default argument but rebinds
    the local instead, so every send with a MEID and every received message's summary calls
    into RMR and parses its JSON again (~15-25 us each, on the latency path of every xApp
    and of the RIC's own endpoints). Filled once, the cache works as intended; the values
    are RMR's own."""
    from ricxappframe.rmr.rmrclib import rmrclib

    cache: object = (rmrclib.get_constants.__defaults__ or ({},))[0]
    if isinstance(cache, dict) and not cache:
        cache.update(rmrclib.get_constants())


def fast_ricxappframe_payloads() -> None:
    """Make ricxappframe read a received payload with one copy.

    Its ``rmr.get_payload`` (used by ``message_summary`` for every message an RMRXapp
    receives) slices the payload pointer into a Python list of ints, one per byte, and
    builds a char array from it: ~2 ms for a 38 KB KPM indication, more than all the xApp's
    own work on it. The replacement returns the same bytes with ``ctypes.string_at``.
    Idempotent; call after importing ricxappframe."""
    from ricxappframe.rmr import rmr

    if getattr(rmr.get_payload, "octoric_fast", False):
        return

    def get_payload(ptr_mbuf: Any) -> bytes:
        m = ptr_mbuf.contents
        return ctypes.string_at(m.payload, m.len)

    get_payload.octoric_fast = True  # type: ignore[attr-defined]
    rmr.get_payload = get_payload


def stream_ricxappframe_receives() -> None:
    """Make ricxappframe's receive loop hand each message over as it arrives.

    Its ``RmrLoop`` calls ``helpers.rmr_rcvall_msgs_raw``, which drains RMR into a list and
    only then lets the loop queue them: under a burst the first message waits for the last
    one's receive and summary (~30-50 us each in Python). The replacement yields each
    (summary, buffer) as soon as it is received: the same messages, in the same order, one
    at a time. Call before constructing an ``RMRXapp``; idempotent."""
    from ricxappframe.rmr import helpers, rmr

    if getattr(helpers.rmr_rcvall_msgs_raw, "octoric_stream", False):
        return
    batch = helpers.rmr_rcvall_msgs_raw

    def rcv_stream(mrc: Any, pass_filter: Any = None, timeout: int = 0) -> Any:
        if pass_filter is not None:  # not RmrLoop's call: ricxappframe's own behaviour
            yield from batch(mrc, pass_filter, timeout)
            return
        while True:
            mbuf = rmr.rmr_torcv_msg(mrc, rmr.rmr_alloc_msg(mrc, 4096), timeout)
            timeout = 0  # as ricxappframe: only the first receive waits
            summary = rmr.message_summary(mbuf)
            if summary[rmr.RMR_MS_MSG_STATUS] != "RMR_OK":
                rmr.rmr_free_msg(mbuf)
                return
            yield summary, mbuf

    rcv_stream.octoric_stream = True  # type: ignore[attr-defined]
    helpers.rmr_rcvall_msgs_raw = rcv_stream


@dataclass(frozen=True)
class RmrStats:
    """Counters of one RMR context (octoric extension ``octoric_rmr_stats``)."""

    received: int
    sent: int
    send_failures: int
    dropped_overflow: int
    dropped_bad_frame: int
    dropped_bad_stream: int
    connections_accepted: int
    connections_made: int
    rt_installed: int
    rt_errors: int
    # issue #43: connections refused for who they come from, frames whose sender field is not
    # the connection's peer, replayed route tables, listener limits
    peers_rejected: int = 0
    forged_senders: int = 0
    rt_replayed: int = 0
    conns_over_cap: int = 0
    frames_timed_out: int = 0
    frames_too_big: int = 0


def stats(ctx: int | None) -> RmrStats:
    """Counters of a context returned by ``rmr_init`` (ours only, not real RMR's)."""
    lib = load()
    fn = lib.octoric_rmr_stats
    fn.restype = ctypes.POINTER(ctypes.c_char)
    fn.argtypes = [ctypes.c_void_p]
    free = lib.rmr_free_consts
    free.argtypes = [ctypes.POINTER(ctypes.c_char)]
    free.restype = None
    ptr = fn(ctx)
    if not ptr:
        raise RmrLibraryError("octoric_rmr_stats: no context")
    try:
        raw = ctypes.cast(ptr, ctypes.c_char_p).value or b"{}"
    finally:
        free(ptr)
    known = {f.name for f in dataclasses.fields(RmrStats)}
    return RmrStats(**{k: v for k, v in json.loads(raw.decode()).items() if k in known})


if os.environ.get("OCTORIC_RMR_NO_PRELOAD") != "1":
    # Importing must not fail where the library is not built (e.g. docs, linters);
    # ricxappframe's own import then reports the missing library.
    with contextlib.suppress(RmrLibraryError):
        load()
