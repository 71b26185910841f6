"""The RTC event log reader against a log Debian's Chromium 156 wrote (vectors/chromium-event-log,
provenance in its index.json), checked against what the same Chromium said in getStats().
"""

from __future__ import annotations

import bisect
import itertools
import json
from pathlib import Path

import pytest

from octoric.sim.chromium.event_log import EventLogError, decode_deltas, read

VECTORS = Path(__file__).parent / "vectors" / "chromium-event-log"


@pytest.fixture(scope="module")
def recorded() -> tuple[dict, object]:
    idx = json.loads((VECTORS / "index.json").read_text())
    return idx, read(VECTORS / idx["log"])


def test_target_matches_getstats(recorded) -> None:
    """The loss-based update carries the target libwebrtc hands on, which getStats() reports as
    availableOutgoingBitrate: at nearly every 100 ms sample the decoded log's latest target
    is the very number the page read (timestamps, bitrates and their deltas all decoded)."""
    idx, log = recorded
    ts = [t + log.utc_offset_ms for t, *_ in log.loss_based]
    same = near = n = 0
    for t, avail in idx["available"]:
        i = bisect.bisect_right(ts, t) - 1
        if i < 0:
            continue
        n += 1
        bps = log.loss_based[i][1]
        same += bps == avail
        near += abs(bps - avail) <= 0.02 * avail
    assert n > 500
    assert same / n > 0.9, f"{same} of {n} samples equal the logged target"
    assert near / n > 0.95


def test_events_are_libwebrtcs(recorded) -> None:
    _, log = recorded
    # the epoch of the call (2026-11-28) from BeginLogEvent's UTC time
    assert 1795800000000 < log.delay_based[0][0] + log.utc_offset_ms < 1795900000000
    for series in (log.delay_based, log.loss_based, log.rtp_out):
        times = [e[0] for e in series]
        assert times == sorted(times)
    assert {s for _, _, s in log.delay_based} <= {"normal", "overusing", "underusing"}
    assert any(s == "overusing" for _, _, s in log.delay_based)
    # the initial probes: 3x and 6x the start rate of 300 kbit/s (ProbeController defaults)
    assert [b for _, _, b in log.probe_clusters[:2]] == [900_000, 1_800_000]
    assert all(1_000 <= bps <= 20_000_000 for _, bps, _ in log.delay_based)
    # every media packet has a transport sequence number, consecutive across the call
    seqs = [s for _, s, _, _ in log.rtp_out if s is not None]
    assert len(seqs) > 5000
    assert all(b - a == 1 for a, b in itertools.pairwise(seqs))
    assert all(100 < size <= 1300 for _, _, size, _ in log.rtp_out if size > 100)


def _bits(*fields: tuple[int, int]) -> bytes:
    s = "".join(format(v, f"0{n}b") for v, n in fields)
    s += "0" * (-len(s) % 8)
    return int(s, 2).to_bytes(len(s) // 8, "big") if s else b""


def test_delta_encodings() -> None:
    # no bytes: every value is the base
    assert decode_deltas(b"", 7, 3) == [7, 7, 7]
    # type 0: unsigned 4-bit deltas, 64-bit values
    assert decode_deltas(_bits((0, 2), (3, 6), (1, 4), (15, 4)), 10, 2) == [11, 26]
    # type 1: signed 3-bit deltas on 8-bit values, wrapping below zero
    data = _bits((1, 2), (2, 6), (1, 1), (0, 1), (7, 6), (0b111, 3), (0b010, 3))
    assert decode_deltas(data, 1, 2) == [0, 2]
    assert decode_deltas(data, 0, 2) == [255, 1]
    # optional values: presence bits first; with no base the first present value is a varint
    data = _bits((1, 2), (0, 6), (0, 1), (1, 1), (63, 6), (0, 1), (1, 1), (1, 1),
                 (300 & 0x7F | 0x80, 8), (300 >> 7, 8), (1, 1))  # fmt: skip
    assert decode_deltas(data, None, 3) == [None, 300, 301]


def test_bad_logs_raise_clearly(tmp_path: Path) -> None:
    with pytest.raises(EventLogError):
        decode_deltas(_bits((2, 2)), 0, 1)  # a reserved encoding type
    with pytest.raises(EventLogError):
        decode_deltas(_bits((0, 2), (63, 6)), 0, 4)  # deltas the field does not hold
    good = (VECTORS / "verizon-lte-seed1.log").read_bytes()
    cut = tmp_path / "cut.log"
    cut.write_bytes(good[: len(good) // 2])
    with pytest.raises(EventLogError):
        read(cut)
    junk = tmp_path / "junk.log"
    junk.write_bytes(b"\x0f" * 64)  # wire type 7
    with pytest.raises(EventLogError):
        read(junk)


def test_the_command_reads_a_file_or_a_calls_folder(tmp_path: Path, capsys) -> None:
    from octoric.sim.chromium.event_log import main

    folder = tmp_path / "event-log"
    folder.mkdir()
    (folder / "event_log_1.log").write_bytes((VECTORS / "verizon-lte-seed1.log").read_bytes())
    assert main([str(folder)]) == 0
    out = capsys.readouterr().out
    assert '"delay_based": 728' in out and "overusing" in out
    (tmp_path / "junk.log").write_bytes(b"\x0f" * 8)
    assert main([str(tmp_path / "junk.log")]) == 1
    assert "wire type" in capsys.readouterr().err
    assert main([str(tmp_path / "missing.log")]) == 1
