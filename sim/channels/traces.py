"""Readers for channel traces: Mahimahi delivery opportunities and per-second CQI CSVs.

Every malformed line raises :class:`TraceError` naming the file and the 1-based line.
"""

from __future__ import annotations

import csv
import io
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from octoric.sim.errors import TraceError

MAHIMAHI_PACKET_BYTES = 1500


@dataclass(frozen=True)
class MahimahiTrace:
    """Bytes deliverable per millisecond over one period of the (looping) trace."""

    path: str
    bytes_per_ms: np.ndarray  # float64, length = period in ms

    @property
    def period_ms(self) -> int:
        return int(self.bytes_per_ms.size)

    @property
    def deliveries(self) -> int:
        """Delivery opportunities (packets) in one period."""
        return round(float(self.bytes_per_ms.sum()) / MAHIMAHI_PACKET_BYTES)

    @property
    def mean_bps(self) -> float:
        return float(self.bytes_per_ms.sum()) * 8.0 * 1000.0 / self.period_ms


def read_mahimahi(path: str | Path) -> MahimahiTrace:
    """One non-negative integer millisecond timestamp per line, non-decreasing; the trace
    repeats with a period equal to its last timestamp (Mahimahi's semantics)."""
    p = str(path)
    try:
        text = Path(path).read_text()
    except OSError as e:
        raise TraceError(f"cannot read trace: {e.strerror}", p) from e
    stamps: list[int] = []
    prev = 0
    for lineno, raw in enumerate(text.splitlines(), 1):
        s = raw.strip()
        if not s:
            continue
        try:
            v = int(s)
        except ValueError:
            raise TraceError(
                f"expected an integer millisecond timestamp, got {s[:40]!r}", p, lineno
            ) from None
        if v < 0:
            raise TraceError(f"negative timestamp {v}", p, lineno)
        if v < prev:
            raise TraceError(f"timestamps must not decrease ({v} after {prev})", p, lineno)
        prev = v
        stamps.append(v)
    if not stamps:
        raise TraceError("empty trace (no delivery opportunities)", p)
    period = stamps[-1]
    if period <= 0:
        raise TraceError("the last timestamp must be > 0 (it sets the loop period)", p, len(stamps))
    counts = np.bincount(np.asarray(stamps, dtype=np.int64) % period, minlength=period)
    return MahimahiTrace(p, counts.astype(np.float64) * MAHIMAHI_PACKET_BYTES)


@dataclass(frozen=True)
class CqiTrace:
    """Per-second channel samples (CQI 0..15, optional SNR dB and serving cell id)."""

    path: str
    cqi: np.ndarray  # int per second
    cell_id: list[str]


def _open_csv(path: str) -> str:
    """``file.csv`` or ``archive.zip::member.csv``."""
    try:
        if "::" in path:
            zpath, member = path.split("::", 1)
            with zipfile.ZipFile(zpath) as z:
                return z.read(member).decode("utf-8", errors="replace")
        return Path(path).read_text(errors="replace")
    except (OSError, KeyError, zipfile.BadZipFile) as e:
        raise TraceError(f"cannot read trace: {e}", path) from e


def read_cqi_csv(path: str | Path, column: str = "CQI") -> CqiTrace:
    """CSV with a header naming ``CQI`` (as in the 5G production dataset); one row per
    second. Rows with ``-`` hold the previous value; a leading gap takes the first value."""
    p = str(path)
    text = _open_csv(p)
    reader = csv.reader(io.StringIO(text))
    try:
        header = next(reader)
    except StopIteration:
        raise TraceError("empty CSV (no header)", p, 1) from None
    names = [h.strip() for h in header]
    if column not in names:
        raise TraceError(f"no {column!r} column in the header (found: {', '.join(names)})", p, 1)
    ci = names.index(column)
    cell_i = names.index("CellID") if "CellID" in names else None
    values: list[int | None] = []
    cells: list[str] = []
    for lineno, row in enumerate(reader, 2):
        if not row or all(not c.strip() for c in row):
            continue
        if len(row) <= ci:
            raise TraceError(
                f"row has {len(row)} fields, the {column} column is field {ci + 1}", p, lineno
            )
        cell = row[ci].strip()
        if cell in ("-", ""):
            values.append(None)
        else:
            try:
                v = int(float(cell))
            except ValueError:
                raise TraceError(
                    f"{column} must be a number, got {cell[:40]!r}", p, lineno
                ) from None
            if not 0 <= v <= 15:
                raise TraceError(f"{column} must be in 0..15, got {v}", p, lineno)
            values.append(v)
        cells.append(row[cell_i].strip() if cell_i is not None and len(row) > cell_i else "")
    known = [v for v in values if v is not None]
    if not known:
        raise TraceError(f"no {column} values in the trace", p)
    out = np.empty(len(values), dtype=np.int64)
    last: int = known[0]
    for i, x in enumerate(values):
        if x is not None:
            last = x
        out[i] = last
    return CqiTrace(p, out, cells)


def read_rate_csv(path: str | Path, column: str = "DL_bitrate") -> np.ndarray:
    """Per-row throughput in kbit/s from a CSV with a header naming ``column`` (the 5G
    production dataset's G-NetTrack logs: one row per second, ``DL_bitrate`` in kbit/s).
    Rows with ``-`` hold the previous value; a leading gap takes the first value."""
    p = str(path)
    reader = csv.reader(io.StringIO(_open_csv(p)))
    try:
        names = [h.strip() for h in next(reader)]
    except StopIteration:
        raise TraceError("empty CSV (no header)", p, 1) from None
    if column not in names:
        raise TraceError(f"no {column!r} column in the header (found: {', '.join(names)})", p, 1)
    ci = names.index(column)
    values: list[float | None] = []
    for lineno, row in enumerate(reader, 2):
        if not row or all(not c.strip() for c in row):
            continue
        cell = row[ci].strip() if len(row) > ci else ""
        if cell in ("-", ""):
            values.append(None)
            continue
        try:
            v = float(cell)
        except ValueError:
            raise TraceError(f"{column} must be a number, got {cell[:40]!r}", p, lineno) from None
        if not v >= 0:
            raise TraceError(f"{column} must be >= 0, got {cell[:40]!r}", p, lineno)
        values.append(v)
    known = [v for v in values if v is not None]
    if not known:
        raise TraceError(f"no {column} values in the trace", p)
    out = np.empty(len(values), dtype=np.float64)
    last = known[0]
    for i, x in enumerate(values):
        if x is not None:
            last = x
        out[i] = last
    return out


def mahimahi_from_rates(kbps: np.ndarray, row_ms: int = 1000) -> list[int]:
    """Mahimahi delivery opportunities (ms timestamps of 1500-byte packets) that carry each
    row's rate over its ``row_ms``, spread evenly within the row, the fraction of a packet
    carried to the next row; the last timestamp is the trace's length (Mahimahi's loop
    period), with one opportunity added there when the last row is silent."""
    if row_ms <= 0:
        raise TraceError("row_ms must be > 0", "<rates>")
    stamps: list[int] = []
    carry = 0.0
    for row, rate in enumerate(np.asarray(kbps, dtype=np.float64)):
        carry += rate * 1000.0 / 8.0 * row_ms / 1000.0 / MAHIMAHI_PACKET_BYTES
        n = int(carry)
        carry -= n
        base = row * row_ms
        stamps.extend(base + round((i + 1) * row_ms / n) for i in range(n))
    end = len(kbps) * row_ms
    if end <= 0:
        raise TraceError("no rows", "<rates>")
    if not stamps or stamps[-1] != end:
        stamps.append(end)
    return stamps
