"""Acceptance 1: a Mahimahi trace replayed to one backlogged UE delivers its capacity."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from octoric.sim.channels.traces import read_mahimahi
from octoric.sim.runner import run_offline
from octoric.sim.scenario import ChannelSpec, FlowSpec, RanSpec, Scenario, UeSpec

pytestmark = pytest.mark.unit


def _replay(path: Path, duration_s: float, slot_ms: float = 1.0) -> tuple[int, int]:
    sc = Scenario(
        name="replay",
        duration_s=duration_s,
        ran=RanSpec(n_prb=106, slot_ms=slot_ms),
        ues=[UeSpec(channel=ChannelSpec("mahimahi", path=str(path)),
                    flows=[FlowSpec(traffic="backlogged")])],
    )  # fmt: skip
    s = run_offline(sc, seed=3).summary
    return s["ues"][0]["delivered_bytes"], s["ues"][0]["capacity_bytes"]


def _expected_bytes(path: Path, duration_ms: int) -> int:
    """Independent count: every opportunity (1500 B) at a looped timestamp < duration."""
    stamps = [int(x) for x in path.read_text().split()]
    period = stamps[-1]
    total = 0
    for k in range(duration_ms // period + 1):
        total += sum(1 for s in stamps if (s % period) + k * period < duration_ms)
    return total * 1500


def _write_synthetic(tmp_path: Path) -> Path:
    # 12 Mbit/s for 500 ms, 2 Mbit/s for 500 ms, a 200 ms outage: 1 opportunity = 12 kbit.
    lines = []
    for ms in range(1, 1201):
        n = 1 if ms <= 500 else (1 if ms % 6 == 0 else 0) if ms <= 1000 else 0
        lines += [str(ms)] * n
    lines.append("1300")
    p = tmp_path / "synthetic.down"
    p.write_text("\n".join(lines) + "\n")
    return p


@pytest.mark.parametrize("slot_ms", [1.0, 0.5])
def test_synthetic_trace_capacity_within_1pct(tmp_path: Path, slot_ms: float) -> None:
    p = _write_synthetic(tmp_path)
    dur_ms = 13_000  # 10 periods
    delivered, capacity = _replay(p, dur_ms / 1000, slot_ms)
    expected = _expected_bytes(p, dur_ms)
    assert abs(delivered - expected) / expected < 0.01, (delivered, expected)
    assert abs(capacity - expected) / expected < 0.01


def test_shared_mahimahi_trace_capacity_within_1pct(shared_dir: Path) -> None:
    p = shared_dir / "traces" / "mahimahi" / "Verizon-LTE-short.down"
    dur_ms = 60_000
    delivered, capacity = _replay(p, dur_ms / 1000)
    expected = _expected_bytes(p, dur_ms)
    assert expected > 0
    assert abs(delivered - expected) / expected < 0.01, (delivered, expected)
    assert abs(capacity - expected) / expected < 0.01
    tr = read_mahimahi(p)
    assert tr.period_ms == int(p.read_text().split()[-1])


def test_trace_reports_link_adaptation_mcs_not_packet_quantisation(tmp_path: Path) -> None:
    """Deliveries follow the trace exactly; the reported bits per PRB are the trace's capacity
    over the previous CSI period (20 ms), zero only after a period without a delivery."""
    from octoric.sim.engine import Engine
    from octoric.sim.measurements import AbwSource, KpmReport

    class Reports(AbwSource):
        def __init__(self) -> None:
            self.reports: list[KpmReport] = []

        def on_report(self, report: KpmReport, now_us: int) -> None:
            self.reports.append(report)

        def estimate_bps(self, ue_id: int) -> float | None:
            return None

    p = _write_synthetic(tmp_path)  # 12 Mbit/s, then 2 Mbit/s (a packet every 6 ms), outage
    src = Reports()
    sc = Scenario(
        name="la", duration_s=1.3, ran=RanSpec(n_prb=100),
        ues=[UeSpec(channel=ChannelSpec("mahimahi", path=str(p)),
                    flows=[FlowSpec(scheme="occ")])],
    )  # fmt: skip
    eng = Engine(sc, seed=1, abw_source=src)
    eng.run()
    bits = np.concatenate([r.bits_per_prb_dl[:, 0] for r in src.reports])  # per ms, per PRB
    per_ms = read_mahimahi(p).bytes_per_ms * 8 / 100  # what the trace delivers per PRB
    assert (per_ms[540:1000] == 0).mean() > 0.8  # most ms of the 2 Mbit/s part hold no packet
    # 2 Mbit/s part, after one whole CSI period in it: the period's mean, never zero
    assert np.allclose(bits[540:1000], 2e6 / 1000 / 100, rtol=0.25)
    assert bits[40:480] == pytest.approx(12e6 / 1000 / 100)
    # the outage (1000-1300 ms): zero from the period after the first empty one
    assert (bits[1040:1300] == 0).all()
    # csi_period_ms 0: each ms's own deliveries, as before
    sc.ues[0].channel.csi_period_ms = 0
    src0 = Reports()
    Engine(sc, seed=1, abw_source=src0).run()
    bits0 = np.concatenate([r.bits_per_prb_dl[:, 0] for r in src0.reports])
    assert np.array_equal(bits0, per_ms[: bits0.size])
