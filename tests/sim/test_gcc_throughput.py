"""GCC's acknowledged rate (libwebrtc M125's RobustThroughputEstimator, the default) and the
delay detector's reset after a feedback silence (DelayBasedBwe's kStreamTimeOut)."""

from __future__ import annotations

import pytest

from octoric.sim.cc.base import SchemeContext
from octoric.sim.cc.gcc import Gcc
from octoric.sim.cc.gcc_acked import AcknowledgedBitrateEstimator, RobustThroughputEstimator
from octoric.sim.receiver import FeedbackBatch

MS = 1000


def _paced(n: int, every_us: int, size: int, t0: int = 0, delay_us: int = 20 * MS,
           recv_every_us: int | None = None) -> list[tuple[int, int, int]]:  # fmt: skip
    r = every_us if recv_every_us is None else recv_every_us
    return [(t0 + i * every_us, t0 + delay_us + i * r, size) for i in range(n)]


def test_no_estimate_before_ten_packets() -> None:
    e = RobustThroughputEstimator()
    e.on_packets(_paced(9, 10 * MS, 1000))
    assert e.bitrate_bps() is None
    e.on_packets(_paced(1, 10 * MS, 1000, t0=90 * MS))
    assert e.bitrate_bps() == pytest.approx(800e3)  # 1000 B every 10 ms


def test_a_backlog_drained_in_a_burst_reads_as_the_send_rate() -> None:
    """1 Mbit/s sent for 2 s; the cell held the last second and delivers it in 83 ms. The
    Bayesian estimator's 150 ms windows read part of the burst (above the 1 Mbit/s sent);
    the robust one never reads above what was sent."""
    sent = [(i * 12 * MS, 0, 1500) for i in range(167)]  # 1500 B every 12 ms: 1 Mbit/s
    rows = []
    for k, (s, _, size) in enumerate(sent):
        recv = s + 20 * MS if k < 84 else 2000 * MS + (k - 84) * MS + 1  # the backlog burst
        rows.append((s, recv, size))
    robust, bayes = RobustThroughputEstimator(), AcknowledgedBitrateEstimator()
    robust.on_packets(rows)
    bayes.on_packets(rows)
    r, b = robust.bitrate_bps(), bayes.bitrate_bps()
    assert r is not None and b is not None
    assert r == pytest.approx(1e6, rel=0.02)
    assert b > 1.1e6


def test_a_stall_is_replaced_by_the_second_largest_gap() -> None:
    """2 Mbit/s received with one 500 ms stall: the stall does not pull the rate down."""
    rows = _paced(40, 6 * MS, 1500)  # 1500 B every 6 ms: 2 Mbit/s, sent evenly
    rows = [(s, r + (500 * MS if i >= 20 else 0), z) for i, (s, r, z) in enumerate(rows)]
    e = RobustThroughputEstimator()
    e.on_packets(rows)
    assert e.bitrate_bps() == pytest.approx(2e6, rel=0.01)


def test_the_window_keeps_twenty_packets_or_one_second() -> None:
    e = RobustThroughputEstimator()
    e.on_packets(_paced(200, 10 * MS, 1000))  # 2 s at 100 packets/s: the last ~1 s stays
    assert 100 <= len(e.window) <= 102
    slow = RobustThroughputEstimator()
    slow.on_packets(_paced(30, 400 * MS, 1000))  # 2.5 packets/s: 20 packets span 8 s > 5 s
    assert len(slow.window) <= 13  # never more than 5 s of receptions
    assert slow.bitrate_bps() == pytest.approx(20e3, rel=0.01)


def _gcc() -> Gcc:
    return Gcc(SchemeContext(40.0, 1e6, 50e3, 5e6, {"probing": False}))


def _fb(rows: list[tuple[int, int, int]], seq0: int) -> FeedbackBatch:
    return FeedbackBatch(seqs=[seq0 + i for i in range(len(rows))],
                         send_us=[r[0] for r in rows], recv_us=[r[1] for r in rows],
                         sizes=[r[2] for r in rows])  # fmt: skip


def test_gcc_defaults_to_the_robust_estimator_and_can_run_the_bayesian() -> None:
    assert isinstance(_gcc().acked_est, RobustThroughputEstimator)
    g = Gcc(SchemeContext(40.0, 1e6, 50e3, 5e6, {"throughput_estimator": "bayesian"}))
    assert isinstance(g.acked_est, AcknowledgedBitrateEstimator)
    with pytest.raises(ValueError, match="throughput_estimator"):
        Gcc(SchemeContext(40.0, 1e6, 50e3, 5e6, {"throughput_estimator": "typo"}))


def test_stragglers_after_a_feedback_silence_do_not_read_as_overuse() -> None:
    """An outage: two frames' packets trickle through one per second. With feedback gaps of
    at most 2 s the detector sees their growing delay and flags over-use; after a gap of more
    than 2 s libwebrtc starts a fresh detector, which needs new samples first."""

    def run(gap_s: float) -> list[str]:
        g = _gcc()
        seq, signals = 0, []
        for k in range(50):  # 2 s of 25 fps frames, 3 packets each, 20 ms one-way
            rows = [(k * 40 * MS + i * MS, k * 40 * MS + 20 * MS + i * MS, 1000) for i in range(3)]
            g.on_feedback(k * 40 * MS + 60 * MS, _fb(rows, seq))
            seq += 3
        # the outage: packets of frames sent at 2.0 s, 2.04 s, 2.08 s trickle in, one per
        # report, every gap_s (libwebrtc's receiver sends no feedback in between)
        now = 2000 * MS
        for k in range(6):
            sent = 2000 * MS + (k // 2) * 40 * MS + (k % 2) * MS
            now += int(gap_s * 1e6)
            g.on_feedback(now + 30 * MS, _fb([(sent, now, 1000)], seq))
            seq += 1
            signals.append(g.signal)
        return signals

    assert "overuse" in run(1.0)
    assert "overuse" not in run(2.5)
