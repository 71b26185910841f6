"""``octoric bench loop`` end to end, briefly: scripted gNBs -> e2term -> the OCC xApp (its own
process) -> UDP feedback, at 1 node x 100 UEs every 1 ms for two seconds. Checks the row's
shape and that the loop is closed (every indication processed, feedback matched to the
indications that produced it, latencies positive); the figures themselves are the
benchmark's (``make bench``), not asserted here."""

from __future__ import annotations

import ctypes
import socket
import struct
import time

import numpy as np
import pytest

from octoric.experiments import loop_bench as lb

pytestmark = pytest.mark.integration


def test_loop_bench_closes_the_loop() -> None:
    case = lb.LoopCase("smoke-1x100@1ms", 1, 100, 1, flows_per_node=10, flip=True)
    r = lb.measure(case, seconds=2.0, warmup_s=1.0)
    assert {
        "config",
        "p50_us",
        "p99_us",
        "p999_us",
        "lost",
        "ue_samples_per_s",
        "sustained",
    } <= set(r)
    assert r["config"] == "smoke-1x100@1ms"
    assert r["indications_sent"] == 3000
    assert r["lost"] == 0 and r["indications_processed"] == 3000 and r["shed"] == 0
    # every indication is due a datagram to each of the 10 flows (their UEs' fallback flag
    # flips) and no periodic refresh sends one no indication caused
    assert r["feedback_possible"] == 2000 * 10
    assert r["latency_samples"] >= 0.99 * r["feedback_possible"], r["latency_samples"]
    assert 0 < r["p50_us"] <= r["p99_us"] <= r["p999_us"]
    assert r["ue_samples_per_s"] > 50_000  # 100 UEs x 1000 per s offered
    assert set(r["cpu_us_per_ue_sample"]) == {"e2term", "occ_xapp", "gnbs", "receiver"}
    # the breakdown joins the gNB's, e2term's and the xApp's marks of every indication, and
    # the xApp's mark with each datagram's arrival
    b = r["breakdown_ms"]
    hops = ("gnb_to_e2term", "e2term_to_handler", "handler_to_feedback_sent")
    assert set(b) == {*hops, "e2term_to_feedback_sent", "feedback_sent_to_received",
                      "feedback_sent_to_socket", "socket_to_read"}  # fmt: skip
    for name in (*hops, "e2term_to_feedback_sent"):
        assert b[name]["n"] == 3000, b
        assert 0 < b[name]["p50"] <= b[name]["p99"] <= b[name]["p999"], b
    assert b["e2term_to_feedback_sent"]["p50"] > b["handler_to_feedback_sent"]["p50"]
    # from the mark after the indication's last datagram: an earlier flow's can be ahead of it
    udp = b["feedback_sent_to_received"]
    assert udp["n"] == r["latency_samples"] and udp["p50"] <= udp["p99"] <= udp["p999"]
    assert udp["p99"] > 0
    # the kernel stamps each datagram's arrival at the receiver's socket: every sample has
    # one, no later than the receiver's read of it
    sock, wake = b["feedback_sent_to_socket"], b["socket_to_read"]
    assert sock["n"] == udp["n"] and wake["n"] == r["latency_samples"]
    assert wake["p50"] >= 0 and sock["p50"] <= udp["p50"]
    assert 0 < r["socket_p50_us"] <= r["p50_us"] and r["socket_p99_us"] <= r["p99_us"]


def test_template_patches_only_sn_and_time_stamp() -> None:
    """The benchmark's indications are built once; each send patches the sequence number and
    the header's time stamp in place, and the result is what encoding afresh gives."""
    from octoric.e2sm import envelope, fastenc, kpm
    from octoric.e2sm.common import ntp_timestamp
    from octoric.e2sm.e2ap_ies import RicRequestId
    from octoric.e2sm.node_session import NodeSubscription

    sub = NodeSubscription(RicRequestId(1234, 7), kpm.RAN_FUNCTION_ID, action_ids=[3])
    case = lb.LoopCase("t", 1, 3, 2)
    msg = lb.variant_messages(0, case, 1)[0]
    t = lb.Template(sub, msg)
    got = t.fill(4321, 1_763_812_345_120)
    want = envelope.encode_ric_indication(
        1234, 7, kpm.RAN_FUNCTION_ID, 3,
        fastenc.encode_indication_header(ntp_timestamp(1_763_812_345.120)), msg, sn=4321,
    )  # fmt: skip
    assert got == want


def test_sustained_means_no_loss_no_shedding_no_standing_queue() -> None:
    """0 lost with a p99 of seconds kept up only by queueing: not sustained."""
    assert lb.sustained(0, 0, 12_000.0)
    assert lb.sustained(0, 0, lb.SUSTAINED_P99_US)
    assert not lb.sustained(0, 0, 2_400_000.0)  # the 10 ms row's standing queue
    assert not lb.sustained(1, 0, 1_000.0)
    assert not lb.sustained(0, 3, 1_000.0)
    assert not lb.sustained(0, 0, None)  # no latency sample: nothing shows it kept pace


def test_the_latency_row_is_the_median_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """One 30 s run's p99 swings; the row is the run with the median p99 and lists every
    run's, so a reader sees the spread."""
    p99s = iter([1300.0, 900.0, 1100.0, 950.0, 1000.0])

    def fake(case: lb.LoopCase, seconds: float, rt_priority: int | None) -> dict[str, object]:
        p = next(p99s)
        return {"config": case.name, "p99_us": p, "socket_p99_us": p - 100, "run": p}

    monkeypatch.setattr(lb, "measure", fake)
    row = lb._median_run(lb.CASES[1], 30.0, 10, 5)
    assert row["run"] == 1000.0
    assert row["p99_runs_us"] == [1300.0, 900.0, 1100.0, 950.0, 1000.0]
    assert row["socket_p99_runs_us"] == [1200.0, 800.0, 1000.0, 850.0, 900.0]


def test_shed_counts_ring_drops() -> None:
    """Shed = the xApp's dispatch queue full plus RMR's receive ring full (the OCC status
    mirrors the library's ring drops into ``rmr.dropped_ring_full``): either fails
    ``sustained``."""
    status = {"counters": {"indications": 5}, "rmr": {"dropped_ring_full": 3}}
    assert lb._shed(status) == 3
    assert lb._seen(status) == 8
    status["rmr"]["shed_queue_full"] = 2
    assert lb._shed(status) == 5


@pytest.mark.parametrize("spread", [False, True])
def test_the_native_replay_sends_on_schedule_at_once_or_at_spread_phases(spread: bool) -> None:
    """``loadgen_blast``: node i's indication k at start + k * period, plus i/N of the period
    when spread; each frame is the template with its SN and time stamp patched."""
    lib = lb._loadgen()
    if lib is None:
        pytest.fail("libocto_loadgen.so is not built (make setup builds it)")
    n, count, period_ns = 3, 4, 30_000_000
    pairs = [socket.socketpair() for _ in range(n)]
    tpl = [bytes(range(16)) for _ in range(n)]
    ptrs = (ctypes.c_char_p * n)(*tpl)
    lens = np.full(n, 16, dtype=np.uintp)
    sn_off, ts_off = np.zeros(n, dtype=np.uintp), np.full(n, 4, dtype=np.uintp)
    sn0 = np.array([7, 8, 9], dtype=np.uint16)
    ts = b"".join(struct.pack(">Q", 1000 + k) for k in range(count))
    fds = np.array([a.fileno() for a, _ in pairs], dtype=np.intc)
    sent = np.zeros(n * count, dtype=np.uint64)
    start = time.monotonic_ns() + 20_000_000
    try:
        got = lib.loadgen_blast(n, fds.ctypes.data, 1, ptrs, lens.ctypes.data, sn_off.ctypes.data,
                                ts_off.ctypes.data, sn0.ctypes.data, ts, count, start, period_ns,
                                int(spread), sent.ctypes.data)  # fmt: skip
        assert got == n * count
        for i, (_, b) in enumerate(pairs):
            data = b.recv(4096)
            assert len(data) == count * 20
            for k in range(count):
                f = data[20 * k : 20 * k + 20]
                assert struct.unpack(">I", f[:4])[0] == 16
                assert struct.unpack(">H", f[4:6])[0] == sn0[i] + k
                assert struct.unpack(">Q", f[8:16])[0] == 1000 + k
                assert f[6:8] == bytes([2, 3]) and f[16:] == bytes(range(12, 16))
    finally:
        for a, b in pairs:
            a.close()
            b.close()
    # when each was sent, against its slot (ms): never early, and the phases as asked
    late = (sent.reshape(n, count).astype(np.int64) - start) / 1e6
    slots = np.arange(count) * period_ns / 1e6
    phase = np.array([[i * period_ns / n / 1e6 if spread else 0.0] for i in range(n)])
    assert (late >= slots + phase).all(), late
    assert (late < slots + phase + 5.0).all(), late  # a loaded 2-core machine: 5 ms slack
