"""ToN'22 Fig. 23 in the simulator (experiments/ton22_eval.py): what a handover does to BBR's
BtlBw, its delivery-rate samples and its ACKs, measured per handover. First on a constructed
ACK trace whose every figure is known, then on a short run of the steady one-UE setup."""

from __future__ import annotations

import pytest

from octoric.experiments.ton22_eval import (
    AckTrace,
    around_handover,
    btlbw_around_handovers,
    ms_series,
    octopus_engine,
    summarize_handovers,
    tcp_scenario,
)
from octoric.sim.transport import TransportSender

pytestmark = pytest.mark.unit
MS = 1000


def _trace() -> AckTrace:
    """8 Mbit/s of ACKs (1000 B each ms, RTT 50 ms, samples 8 Mbit/s, BtlBw 10 Mbit/s) until
    the handover at 1000 ms; nothing until 1100 ms; then 100 delayed ACKs every 0.5 ms of
    packets sent at 900..999 ms (RTT 200 ms down to 150.5 ms, samples 2.5 Mbit/s), BtlBw 4 Mbit/s
    from the ACK at 1120 ms to the one at 1300 ms; from 1150 ms on ACKs as before."""
    tr = AckTrace()

    def ack(t_us: int, rtt_us: int, sample: float, est: float) -> None:
        tr.t_us.append(t_us)
        tr.acked.append(1000)
        tr.rtt_us.append(rtt_us)
        tr.sample_bps.append(sample)
        tr.estimate_bps.append(est)

    for k in range(1000):
        ack(k * MS, 50 * MS, 8e6, 10e6)
    for k in range(100):
        t = 1100 * MS + k * 500
        ack(t, t - (900 + k) * MS, 2.5e6, 4e6 if t >= 1120 * MS else 10e6)
    for k in range(1150, 2000):
        ack(k * MS, 50 * MS, 8e6, 4e6 if k < 1300 else 10e6)
    return tr


def test_around_handover_measures_a_constructed_trace() -> None:
    r = around_handover(_trace(), 1000 * MS, 1100 * MS, 2000 * MS)
    assert r is not None
    assert r["pre_mbps"] == 10.0 and r["min_mbps"] == 4.0 and r["min_frac"] == 0.4
    assert r["below90_ms"] == 180.0  # held from the ACK at 1120 ms to the one at 1300 ms
    assert r["min_sample_frac"] == 0.25
    assert r["ack_gap_ms"] == 101.0  # the last ACK before came at 999 ms, the next at 1100
    assert r["held_acks"] == 100 and r["burst_ms"] == 49.5
    assert r["ack_delay_ms"] == 150.0  # RTT 200 ms against RTprop 50 ms
    # the half second before: 500 kB (8 Mbit/s); the second after: 950 kB
    assert r["lost_mbit"] == pytest.approx(0.4) and r["outage_mbit"] == pytest.approx(0.8)
    # no ACK before the start: no row; an estimate that never fell: no time below
    assert around_handover(_trace(), 0, 100 * MS, 1000 * MS) is None
    calm = around_handover(_trace(), 500 * MS, 600 * MS, 900 * MS)
    assert calm is not None and calm["below90_ms"] == 0.0 and calm["held_acks"] == 0


def test_ms_series_and_summary() -> None:
    ser = ms_series(_trace(), 1000 * MS, before_ms=10, after_ms=400)
    est = dict(zip(ser["ms"], ser["estimate_mbps"], strict=True))
    acks = dict(zip(ser["ms"], ser["acks"], strict=True))
    assert est[-1] == 10.0 and est[50] == 10.0 and est[120] == 4.0 and est[300] == 10.0
    assert acks[-1] == 1 and acks[50] == 0 and acks[100] == 2 and ser["min_sample_mbps"][60] is None
    ok = {"failed": False, "window_ms": 1000.0, "min_frac": 0.4, "below90_ms": 180.0}
    ones = dict.fromkeys(("pre_mbps", "min_mbps", "min_sample_frac", "ack_gap_ms",
                          "ack_delay_ms", "held_acks", "burst_ms", "lost_mbit", "outage_mbit"),
                         1.0)  # fmt: skip
    rows = [
        {**ok, **ones},
        {**ok, "failed": True, "min_frac": 0.0},  # a failed handover: left out
        {**ok, "window_ms": 300.0, "min_frac": 0.0},  # the next came within a second: left out
    ]
    s = summarize_handovers(rows)
    assert s["handovers"] == 1 and s["fell"] == 1.0 and s["worst_min_frac"] == 0.4
    assert s["below90_ms"] == 180.0 and summarize_handovers(rows[1:]) == {"handovers": 0}


def test_delayed_acks_lower_bbrs_samples_in_the_steady_setup() -> None:
    """One UE, a steady channel, the hsr handovers (20 s): every successful handover delays
    ACKs (the UE is cut off for its duration, the gNB holds its packets), and their
    delivery-rate samples fall well below BtlBw (their ACK interval spans the interruption)."""
    rows, traces = btlbw_around_handovers("bbr", 1, 20.0, ues=1, fading=False)
    ok = [r for r in rows if not r["failed"]]
    assert ok and len(traces) == 1
    for r in ok:
        assert r["ack_gap_ms"] >= 0.8 * r["outage_ms"] and r["held_acks"] > 0, r
        assert r["min_sample_frac"] < 0.6, r


@pytest.mark.parametrize("at_end", [True, False])
def test_octopus_reports_a_handover_at_its_end(at_end: bool) -> None:
    """ToN'22 §III-B: Octopus sees a handover when the UE's serving cell changes, at its end;
    BBR-H hears of each handover once, e2_delay_ms + the wired path after the UE is attached
    again (the simulator's default: after it left)."""
    eng = octopus_engine(tcp_scenario("hsr", "bbr-h", 20.0, ues=1, fading=False), 1, at_end)
    f = eng.flows[0]
    assert f.tx is not None
    cc, heard = f.tx.scheme, []
    on_handover = cc.on_handover

    def spy(now_us: int, snd: TransportSender) -> None:
        heard.append(now_us)
        on_handover(now_us, snd)

    cc.on_handover = spy  # type: ignore[method-assign,assignment]
    eng.run()
    lag = round(eng.sc.e2_delay_ms * 1000) + f.dl_delay_us
    ends = [round(h.start_s * 1e6) + round(h.outage_ms * 1e3) * at_end + lag
            for h in eng.handovers]  # fmt: skip
    assert len(eng.handovers) >= 2
    assert heard == pytest.approx([e for e in ends if e < 20_000_000], abs=2)
