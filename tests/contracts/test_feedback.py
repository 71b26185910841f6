"""OCC feedback on the wire: REMB (+ OCCF APP) and JSON datagrams, the client parser, and the
sender's change/refresh policy."""

from __future__ import annotations

import json
import struct
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from octoric.contracts.feedback import (
    FeedbackFormatError,
    FeedbackListener,
    encode_json_feedback,
    encode_remb,
    encode_remb_feedback,
    parse_feedback,
    remb_fields,
)
from octoric.xapps.occ.feedback import FeedbackSender, UeTarget
from octoric.xapps.occ.flows import Flow

pytestmark = pytest.mark.unit


def test_remb_layout_by_hand() -> None:
    # 1 Mbit/s = 250000 * 2^2 (mantissa must fit 18 bits); two SSRCs -> length 4 + 2 = 6
    pkt = encode_remb(0x11223344, 1_000_000, [0xAABBCCDD, 0x01020304])
    assert len(pkt) == 4 * 7
    assert pkt[:4] == bytes([0x8F, 206, 0, 6])  # V=2 P=0 FMT=15, PT=206 (PSFB), length
    assert pkt[4:8] == bytes.fromhex("11223344") and pkt[8:12] == b"\0\0\0\0"
    assert pkt[12:16] == b"REMB"
    word = struct.unpack("!I", pkt[16:20])[0]
    assert word >> 24 == 2 and (word >> 18) & 0x3F == 2 and word & 0x3FFFF == 250_000
    assert pkt[20:] == bytes.fromhex("aabbccdd01020304")


@pytest.mark.parametrize("bps", [0, 1, 262_143, 262_144, 12_345_678, 987_654_321_000])
def test_remb_round_trip_within_mantissa_precision(bps: int) -> None:
    fb = parse_feedback(encode_remb_feedback(9, bps, True, (5,)))
    assert fb.format == "remb" and fb.fallback is True and fb.ssrcs == (5,) and fb.sender_ssrc == 9
    assert fb.target_bps <= bps and bps - fb.target_bps < max(1, bps) * 2**-17
    exp, mant = remb_fields(bps)
    assert mant < 2**18 and mant << exp == int(fb.target_bps)


def test_remb_without_occf_is_not_fallback() -> None:
    fb = parse_feedback(encode_remb(1, 5e6, [1]))
    assert fb.fallback is False and fb.target_bps == pytest.approx(5e6, rel=1e-5)


def test_json_round_trip() -> None:
    fb = parse_feedback(encode_json_feedback(17, 12_345_678.4, False, ts=1.5))
    assert (fb.format, fb.ue, fb.target_bps, fb.fallback, fb.ts) == (
        "json",
        17,
        12_345_678,
        False,
        1.5,
    )
    assert fb.t_ms is None  # an older xApp's datagram
    fb = parse_feedback(encode_json_feedback(17, 1e6, False, ts=1.5, t_ms=1_763_812_345_120))
    assert fb.t_ms == 1_763_812_345_120


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"{",
        b'{"ue": "a", "target_bps": 1, "fallback": false}',
        b'{"ue": 1, "target_bps": -1, "fallback": false}',
        b'{"ue": 1, "target_bps": 1, "fallback": 0}',
        b'{"ue": 1, "target_bps": 1, "fallback": false, "t_ms": 1.5}',
        b"[1]",
        b"\x8f\xce\x00\x06REMB",  # length beyond the datagram
        bytes([0x8F, 206, 0, 4]) + b"\0" * 8 + b"XXXX" + b"\0" * 4,  # no REMB identifier
        bytes([0x80, 200, 0, 0]),  # an RTCP packet, but no REMB
        b"\x00garbage",
    ],
)
def test_bad_datagrams_raise(data: bytes) -> None:
    with pytest.raises(FeedbackFormatError):
        parse_feedback(data)


def test_sender_policy_change_fallback_and_refresh() -> None:
    lst = FeedbackListener()
    try:
        s = FeedbackSender(min_change=0.02, max_interval_s=0.05)
        s.add(Flow("f", 7, "127.0.0.1", lst.address[1], "json"))
        s.update(7, UeTarget(10e6, False, None, 1))
        assert lst.get(1) is not None  # the first estimate goes out at once
        s.update(7, UeTarget(10.1e6, False, None, 2))  # +1%: held back
        assert lst.get(0.02) is None
        s.update(7, UeTarget(10.5e6, False, None, 3))  # +5%: sent at once
        fb = lst.get(0.5)
        assert fb is not None and fb.target_bps == 10_500_000
        s.update(7, UeTarget(10.5e6, True, None, 4))  # fallback flips: sent at once
        fb = lst.get(0.5)
        assert fb is not None and fb.fallback
        stop = __import__("threading").Event()
        s.start_timer(stop)
        time.sleep(0.5)
        stop.set()
        time.sleep(0.05)  # a refresh sent just before the stop is still on its way
        got = lst.drain()
        assert 5 <= len(got) <= 12  # refreshed every ~50 ms (10 expected), never more often
        s.remove("f")
        s.update(7, UeTarget(1e6, False, None, 5))
        assert lst.get(0.1) is None
    finally:
        lst.close()


def test_guami_mismatch_is_not_sent() -> None:
    lst = FeedbackListener()
    try:
        s = FeedbackSender()
        s.add(Flow("f", 7, "127.0.0.1", lst.address[1], "json", guami="00f110:1:1:0"))
        s.update(7, UeTarget(1e6, False, "00f110:2:1:0", 1))
        assert lst.get(0.1) is None and s.counters["guami_mismatch"] == 1
        s.update(7, UeTarget(2e6, False, "00f110:1:1:0", 2))
        assert lst.get(1) is not None
    finally:
        lst.close()


@settings(max_examples=300, deadline=None)
@given(
    ue=st.integers(0, (1 << 40) - 1),
    target=st.floats(0, 1e12, allow_nan=False),
    fallback=st.booleans(),
    ts=st.one_of(st.floats(0, 4e9, allow_nan=False), st.integers(0, 4_000_000_000)),
    t_ms=st.one_of(st.none(), st.integers(0, 1 << 45)),
)
def test_json_datagram_is_what_json_dumps_writes(
    ue: int, target: float, fallback: bool, ts: float, t_ms: int | None
) -> None:
    obj: dict[str, object] = {"ue": ue, "target_bps": round(target), "fallback": fallback,
                              "ts": round(ts, 6)}  # fmt: skip
    if t_ms is not None:
        obj["t_ms"] = t_ms
    want = json.dumps(obj, separators=(",", ":")).encode()
    assert encode_json_feedback(ue, target, fallback, ts=ts, t_ms=t_ms) == want


def test_update_batch_sends_what_update_would() -> None:
    """One indication's columns through ``update_batch``: the UEs with flows get exactly the
    datagrams per-UE ``update`` calls would send (t_ms included), the others nothing; a new
    flow hears the xApp's current target through ``lookup``."""
    import numpy as np

    lst = FeedbackListener()
    try:
        s = FeedbackSender(min_change=0.02, max_interval_s=10.0)
        for ue in (5, 9):
            s.add(Flow(f"f{ue}", ue, "127.0.0.1", lst.address[1], "json"))
        ids = np.array([4, 5, 9], dtype=np.int64)
        s.update_batch(ids, np.array([1e6, 2e6, np.nan]), np.array([False, True, False]),
                       [None, None, None], 777)  # fmt: skip
        got = lst.drain() + [x for x in [lst.get(0.3)] if x is not None]
        assert [(f.ue, f.target_bps, f.fallback, f.t_ms) for f in got] == [(5, 2e6, True, 777)]
        assert 4 not in s.targets and 9 not in s.targets  # no flow / not finite: not kept
        s.update_batch(ids, np.array([1e6, 2.01e6, 3e6]), np.array([False, True, False]),
                       [None, None, None], 778)  # fmt: skip
        got = [lst.get(0.5)]
        assert [(f.ue, f.t_ms) for f in got if f] == [(9, 778)]  # 5 moved by 0.5%: held
        assert lst.get(0.1) is None
        s.lookup = lambda ue: UeTarget(4e6, False, None, 779) if ue == 4 else None
        s.add(Flow("f4", 4, "127.0.0.1", lst.address[1], "json"))
        fb = lst.get(0.5)
        assert fb is not None and (fb.ue, fb.target_bps, fb.t_ms) == (4, 4e6, 779)
    finally:
        lst.close()


def test_update_batch_follows_flows_added_and_removed_between_batches() -> None:
    """The same UE list, batch after batch (as a node sends it): a flow registered or removed
    in between is heard from or left alone on the next batch (the rows with flows are kept
    per UE list and registry version)."""
    import numpy as np

    lst = FeedbackListener()
    try:
        s = FeedbackSender(min_change=0.0, max_interval_s=10.0)
        s.add(Flow("f5", 5, "127.0.0.1", lst.address[1], "json"))
        ids = np.array([4, 5, 6], dtype=np.int64)
        nofb = np.zeros(3, dtype=np.bool_)

        def batch(t_ms: int) -> list[tuple[int, int | None]]:
            s.update_batch(ids, np.array([1e6, 2e6, 3e6]) + t_ms, nofb, [None] * 3, t_ms)
            got, fb = [], lst.get(0.3)
            while fb is not None:
                got.append((fb.ue, fb.t_ms))
                fb = lst.get(0.1)
            return sorted(got)

        assert batch(1) == [(5, 1)]
        s.add(Flow("f6", 6, "127.0.0.1", lst.address[1], "json"))
        assert batch(2) == [(5, 2), (6, 2)]
        s.remove("f5")
        assert batch(3) == [(6, 3)]
        # the same values in another dtype are another list
        s.update_batch(ids.astype(np.int32), np.array([1e6, 2e6, 9e6]), nofb, [None] * 3, 4)
        fb = lst.get(0.5)
        assert fb is not None and (fb.ue, fb.t_ms) == (6, 4)
    finally:
        lst.close()
