"""Per-message latency marks across processes, for benchmarks (off unless asked for).

A benchmark that needs a span between two processes (e2term's arrival of an E2 indication to
the handover xApp's 30501 leaving, say) sets ``OCTORIC_LATENCY_TRACE`` to a directory in
their environment. Each process then appends ``<point> <monotonic ns> <key>`` lines to
``<dir>/<point>-<pid>.trace``, one ``os.write`` per mark after its clock reading, so the mark
costs the measured span nothing. The key is the CRC-32 and length of the E2AP PDU, which
e2term forwards unchanged, so both ends compute it from the same bytes. CLOCK_MONOTONIC is
one clock for every process of a Linux host, so the marks of two processes subtract.

When the variable is unset, ``LatencyTrace.enabled`` is False and ``mark`` is never called.
"""

from __future__ import annotations

import os
import time
import zlib
from pathlib import Path

ENV = "OCTORIC_LATENCY_TRACE"


def key_of(pdu: bytes) -> str:
    return f"{zlib.crc32(pdu):08x}:{len(pdu)}"


class LatencyTrace:
    """The marks of one point in this process (``enabled`` only when the variable is set)."""

    def __init__(self, point: str, directory: str | None = None) -> None:
        self.point = point
        d = directory if directory is not None else os.environ.get(ENV)
        self.enabled = bool(d)
        self._fd = -1
        if d:
            Path(d).mkdir(parents=True, exist_ok=True)
            path = Path(d) / f"{point}-{os.getpid()}.trace"
            self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)

    def mark(self, pdu: bytes, at_ns: int | None = None, key: str | None = None) -> None:
        """Record that ``pdu`` passed this point at ``at_ns`` (now if None); ``key``: its
        ``key_of``, when the caller computed it already (two points of one process)."""
        t = time.monotonic_ns() if at_ns is None else at_ns
        if self._fd >= 0:
            os.write(self._fd, f"{self.point} {t} {key or key_of(pdu)}\n".encode())

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def read_marks(directory: Path, point: str) -> dict[str, list[int]]:
    """Every mark of ``point`` under ``directory``: key -> times (ns), in file order."""
    out: dict[str, list[int]] = {}
    for f in sorted(directory.glob(f"{point}-*.trace")):
        for line in f.read_text().splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[0] == point:
                out.setdefault(parts[2], []).append(int(parts[1]))
    return out


def spans_ms(start: dict[str, list[int]], end: dict[str, list[int]]) -> list[float]:
    """For each key marked at both points: end - start in ms (the first mark of each side;
    a key seen twice at the start, two identical PDUs, is ambiguous and left out)."""
    out: list[float] = []
    for key, ends in end.items():
        starts = start.get(key)
        if starts is None or len(starts) != 1:
            continue
        out.append((ends[0] - starts[0]) / 1e6)
    return out
