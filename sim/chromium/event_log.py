"""libwebrtc's RTC event log (new format, ``rtc_event_log2.proto``): the sender's own record of
its bandwidth estimates, read back for the model check.

Chromium writes one log per peer connection with ``--webrtc-event-logging=DIR``
(``call.py --event-log``; ``octoric eval webrtc --event-log``). This module reads the events
that say what libwebrtc's congestion controller decided and why: the delay-based estimate and
its detector state, the loss-based estimate with its loss fraction, probe clusters and their
results, ALR, and the outgoing RTP packets (sizes, padding, transport sequence numbers).

Why a reader of our own: the events come in batches whose later members are delta-encoded in
bit-packed fields (libwebrtc's ``delta_encoding.cc``, read in M125 for the format), which
protobuf's generated code leaves as opaque bytes; the protobuf wire format itself is a
few lines, so no schema or generated code is carried for six message types.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any


class EventLogError(ValueError):
    """A log this reader cannot decode (truncated, or not libwebrtc's new format)."""


# EventStream's fields (rtc_event_log2.proto) for the messages read here
OUTGOING_RTP = 3
BEGIN_LOG = 16
LOSS_BASED = 18
DELAY_BASED = 19
PROBE_CLUSTER = 21
PROBE_SUCCESS = 22
PROBE_FAILURE = 23
ALR_STATE = 24

DETECTOR = {0: "unknown", 1: "normal", 2: "underusing", 3: "overusing"}
PROBE_FAILURE_REASON = {0: "unknown", 1: "send-receive interval", 2: "send-receive ratio",
                        3: "timeout"}  # fmt: skip


def _varint(buf: bytes, i: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        if i >= len(buf):
            raise EventLogError("truncated varint")
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, i
        shift += 7
        if shift > 63:
            raise EventLogError("varint longer than 10 bytes")


def fields(buf: bytes) -> Iterator[tuple[int, int | bytes]]:
    """(field number, value) of one protobuf message: varints as int, fixed32/64 as int,
    length-delimited as bytes."""
    i = 0
    while i < len(buf):
        key, i = _varint(buf, i)
        num, wire = key >> 3, key & 7
        if wire == 0:
            v, i = _varint(buf, i)
            yield num, v
        elif wire == 1:
            yield num, int.from_bytes(buf[i : i + 8], "little")
            i += 8
        elif wire == 2:
            n, i = _varint(buf, i)
            if i + n > len(buf):
                raise EventLogError(f"field {num}: {n} bytes past the end")
            yield num, buf[i : i + n]
            i += n
        elif wire == 5:
            yield num, int.from_bytes(buf[i : i + 4], "little")
            i += 4
        else:
            raise EventLogError(f"field {num}: wire type {wire} is not protobuf's")


class _Bits:
    """MSB-first bit reader (libwebrtc's BitstreamReader)."""

    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def read(self, n: int) -> int:
        if self.pos + n > 8 * len(self.data):
            raise EventLogError("delta field shorter than its header says")
        v = 0
        for _ in range(n):
            byte = self.data[self.pos >> 3]
            v = (v << 1) | ((byte >> (7 - (self.pos & 7))) & 1)
            self.pos += 1
        return v

    def varint(self) -> int:
        v = 0
        for k in range(10):
            b = self.read(8)
            v += (b & 0x7F) << (7 * k)
            if not b & 0x80:
                return v
        raise EventLogError("delta field's varint longer than 10 bytes")


def decode_deltas(data: bytes, base: int | None, count: int) -> list[int | None]:
    """The ``count`` values after ``base`` that ``data`` encodes (libwebrtc's fixed-length
    delta encoding: a 2-bit type, the delta width, then for type 1 signedness, whether values
    may be absent and the value width; then a presence bit per value if they may be absent,
    then one delta per present value, or a varint while no previous value exists)."""
    if not data:  # every value equals the base
        return [base] * count
    r = _Bits(data)
    kind = r.read(2)
    if kind not in (0, 1):
        raise EventLogError(f"delta encoding type {kind} is reserved")
    delta_bits = r.read(6) + 1
    signed, optional, value_bits = False, False, 64
    if kind == 1:
        signed, optional = bool(r.read(1)), bool(r.read(1))
        value_bits = r.read(6) + 1
    value_mask = (1 << value_bits) - 1
    delta_mask = (1 << delta_bits) - 1
    present = [bool(r.read(1)) for _ in range(count)] if optional else [True] * count
    out: list[int | None] = []
    prev = base
    for p in present:
        if not p:
            out.append(None)
            continue
        if prev is None:
            v = r.varint()
        else:
            d = r.read(delta_bits)
            if signed and d >> (delta_bits - 1):
                v = (prev - ((~d & delta_mask) + 1)) & value_mask
            else:
                v = (prev + d) & value_mask
        out.append(v)
        prev = v
    return out


def _batch(msg: bytes, base_fields: dict[int, int], count_field: int) -> list[dict[int, Any]]:
    """A batch message's events: the first from its plain fields, the rest from each plain
    field's delta field (``base_fields``: plain field number -> its delta field number)."""
    plain: dict[int, int] = {}
    deltas: dict[int, bytes] = {}
    count = 0
    for num, v in fields(msg):
        if num == count_field:
            count = int(v) if isinstance(v, int) else 0
        elif num in base_fields and isinstance(v, int):
            plain[num] = v
        elif isinstance(v, bytes):
            deltas[num] = v
    events: list[dict[int, Any]] = [dict(plain)]
    if count:
        cols = {f: decode_deltas(deltas.get(d, b""), plain.get(f), count)
                for f, d in base_fields.items()}  # fmt: skip
        for k in range(count):
            events.append({f: col[k] for f, col in cols.items() if col[k] is not None})
    return events


def _signed64(v: int) -> int:
    return v - (1 << 64) if v >> 63 else v


@dataclass
class EventLog:
    """The sender's decisions, each as (log time in ms, ...); ``utc_offset_ms`` turns a log
    time into epoch ms (BeginLogEvent's UTC time minus its log time)."""

    utc_offset_ms: int = 0
    delay_based: list[tuple[int, int, str]] = field(default_factory=list)  # t, bps, state
    loss_based: list[tuple[int, int, float, int]] = field(default_factory=list)  # t, bps, loss, n
    probe_clusters: list[tuple[int, int, int]] = field(default_factory=list)  # t, id, bps
    probe_results: list[tuple[int, int, int | None, str]] = field(default_factory=list)
    alr: list[tuple[int, bool]] = field(default_factory=list)
    # t, transport sequence number (None without one), bytes (header + payload + padding), pad
    rtp_out: list[tuple[int, int | None, int, int]] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        d = asdict(self)
        return {k: (len(v) if isinstance(v, list) else v) for k, v in d.items()}


def _ints(msg: bytes) -> dict[int, int]:
    """A message's integer fields (a one-event message: no delta fields)."""
    return {num: v for num, v in fields(msg) if isinstance(v, int)}


def read(path: Path) -> EventLog:
    """Every event of the kinds above in one log file, each kind in time order (a log holds
    one batch per stream and period, so packets of two streams interleave out of order)."""
    data = path.read_bytes()
    log = EventLog()
    for num, msg in fields(data):
        if not isinstance(msg, bytes):
            continue
        if num == BEGIN_LOG:
            f = _ints(msg)
            if f.get(2, 0) != 2:
                raise EventLogError(f"{path}: log version {f.get(2)}, not the new format (2)")
            log.utc_offset_ms = _signed64(f.get(3, 0)) - _signed64(f.get(1, 0))
        elif num == DELAY_BASED:
            for e in _batch(msg, {1: 101, 2: 102, 3: 103}, 4):
                state = DETECTOR.get(e.get(3, 0), "?")
                log.delay_based.append((_signed64(e.get(1, 0)), e.get(2, 0), state))
        elif num == LOSS_BASED:
            for e in _batch(msg, {1: 101, 2: 102, 3: 103, 4: 104}, 5):
                loss = e.get(3, 0) / 255.0
                log.loss_based.append((_signed64(e.get(1, 0)), e.get(2, 0), loss, e.get(4, 0)))
        elif num in (PROBE_CLUSTER, PROBE_SUCCESS, PROBE_FAILURE, ALR_STATE):
            f = _ints(msg)
            t = _signed64(f.get(1, 0))
            if num == PROBE_CLUSTER:
                log.probe_clusters.append((t, f.get(2, 0), f.get(3, 0)))
            elif num == PROBE_SUCCESS:
                log.probe_results.append((t, f.get(2, 0), f.get(3, 0), "success"))
            elif num == PROBE_FAILURE:
                why = PROBE_FAILURE_REASON.get(f.get(3, 0), "?")
                log.probe_results.append((t, f.get(2, 0), None, why))
            else:
                log.alr.append((t, bool(f.get(2, 0))))
        elif num == OUTGOING_RTP:
            for e in _batch(msg, {1: 101, 8: 108, 9: 109, 10: 110, 15: 115}, 11):
                size = e.get(8, 0) + e.get(9, 0) + e.get(10, 0)
                log.rtp_out.append((_signed64(e.get(1, 0)), e.get(15), size, e.get(10, 0)))
    for series in (log.delay_based, log.loss_based, log.probe_clusters, log.probe_results,
                   log.alr):  # fmt: skip
        series.sort(key=lambda e: e[0])
    log.rtp_out.sort(key=lambda e: (e[0], -1 if e[1] is None else e[1]))
    return log


def read_dir(folder: Path) -> EventLog:
    """The one log of a call's ``event-log/`` folder (a call has one peer connection)."""
    logs = sorted(folder.glob("*.log"))
    if len(logs) != 1:
        raise EventLogError(f"{folder}: {len(logs)} event logs, expected one")
    return read(logs[0])


def main(argv: list[str] | None = None) -> int:
    """``python -m octoric.sim.chromium.event_log LOG``: the counts, then each BWE event (LOG:
    a log file, or a call's ``event-log/`` folder holding one)."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m octoric.sim.chromium.event_log EVENT_LOG|FOLDER", file=sys.stderr)
        return 2
    path = Path(args[0])
    try:
        log = read_dir(path) if path.is_dir() else read(path)
    except (EventLogError, OSError) as e:
        print(f"event_log: {e}", file=sys.stderr)
        return 1
    print(json.dumps(log.summary()))
    for t, bps, state in log.delay_based:
        print(f"{t} delay-based {bps / 1e3:.0f} kbit/s {state}")
    for t, bps, loss, n in log.loss_based:
        print(f"{t} loss-based {bps / 1e3:.0f} kbit/s loss {loss:.3f} of {n}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
