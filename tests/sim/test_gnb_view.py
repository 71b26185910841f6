"""A delivery trace reported as a gNB would report it (``ChannelSpec.report = "gnb"``, issue
#46): an MCS and PRB process carrying each CSI period's bytes, noValue without a grant, other
UEs' PRBs in a gap; and the OCC engine taking a UE's last MCS across a report without one."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from octoric.sim.channels import gnb_view
from octoric.sim.engine import Engine
from octoric.sim.errors import ScenarioError
from octoric.sim.mcs import McsMapper
from octoric.sim.measurements import KpmReport
from octoric.sim.runner import run_offline
from octoric.sim.scenario import (
    ChannelSpec,
    FlowSpec,
    RanSpec,
    Scenario,
    UeSpec,
    validate,
)

pytestmark = pytest.mark.unit
TABLE = np.asarray(McsMapper("qam256").bits)
N_PRB = 106


def _periods(rates_mbps: list[float], period_ms: int = 20) -> np.ndarray:
    """Bits per ms: each rate held for one period."""
    return np.repeat(np.asarray(rates_mbps) * 1000.0, period_ms)


def test_plan_carries_each_periods_bits_at_the_mcs_that_bracket_its_rate() -> None:
    whole = N_PRB * TABLE  # bits per ms at 1 ms slots on every PRB
    rates = [whole[5] / 1000 * 1.0, (whole[9] + whole[10]) / 2000, whole[0] / 1000 * 0.4, 0.0]
    c = _periods(rates)
    p = gnb_view.plan(c, 20, N_PRB, TABLE, 1000)
    per_period = p.delivered_bits.reshape(-1, 20)
    # each period's bits kept within one MCS step of one ms (or one PRB), unbiased
    assert np.allclose(per_period.sum(axis=1), c.reshape(-1, 20).sum(axis=1),
                       atol=whole[10] - whole[9])  # fmt: skip
    mcs = p.mcs.reshape(-1, 20)
    prbs = p.prbs.reshape(-1, 20)
    assert set(mcs[0]) <= {4, 5} and (prbs[0] == N_PRB).all()
    # between two table entries: every PRB, the MCS alternating between them, half each
    assert set(mcs[1]) == {9, 10} and (mcs[1] == 10).sum() == 10 and (prbs[1] == N_PRB).all()
    # below MCS 0 on every PRB: MCS 0 on 40 % of them, others hold the rest
    assert (mcs[2] == 0).all() and abs(prbs[2].mean() - 0.4 * N_PRB) <= 0.05 * N_PRB
    # a period without deliveries: no PRBs, no MCS (noValue)
    assert (mcs[3] == -1).all() and (prbs[3] == 0).all() and np.isnan(p.bits_per_prb[60:]).all()
    assert set(p.layers.tolist()) == {0, 1}


def test_plan_uses_more_layers_and_refuses_a_period_no_cell_carries() -> None:
    whole = N_PRB * TABLE  # one layer
    c = _periods([whole[-1] / 1000 * 1.5])  # 1.5x the top MCS on one layer
    with pytest.raises(ScenarioError, match="more than 106 PRBs carry"):
        gnb_view.plan(c, 20, N_PRB, TABLE, 1000)
    p = gnb_view.plan(c, 20, N_PRB, TABLE, 1000, max_layers=2)
    assert set(p.layers.tolist()) == {2} and (p.prbs == N_PRB).all()
    assert abs(p.delivered_bits.sum() - c.sum()) < whole[-1]


def test_apply_reports_own_prbs_others_and_no_value_without_a_grant() -> None:
    n = 4
    rep = KpmReport(
        start_slot=0, slot_us=1000, ue_ids=[1000], cell_ids=[0],
        ue_cell=np.zeros((n, 1), dtype=np.int32), prb_used_dl=np.full((n, 1), 7, np.int32),
        mcs_dl=np.zeros((n, 1), np.int16), bits_per_prb_dl=np.full((n, 1), 99.0),
        dl_buffer_bytes=np.zeros((n, 1), np.int64), dl_arrived_bytes=np.zeros((n, 1), np.int64),
        # bytes sent per slot: 0, 1000, 200, 0
        ue_thp_dl_kbps=np.array([[0.0], [8000.0], [1600.0], [0.0]]),
        prb_avail_dl=np.full((n, 1), 50, np.int32), active_ues_dl=np.ones((n, 1), np.int32),
    )  # fmt: skip
    mcs = np.array([3, 3, 0, -1], np.int16)
    bits = np.array([TABLE[3], TABLE[3], TABLE[0], np.nan])
    prbs = np.array([N_PRB, N_PRB, 60, 0], np.int32)
    out = gnb_view.apply(rep, 0, N_PRB, mcs, bits, prbs)
    own = np.ceil(np.array([8000 / TABLE[3], 1600 / TABLE[0]]))
    assert out.prb_used_dl[:, 0].tolist() == [0, own[0], own[1], 0]
    # noValue where the UE had no PDSCH, the MCS used where it had
    assert np.isnan(out.bits_per_prb_dl[[0, 3], 0]).all()
    assert out.bits_per_prb_dl[[1, 2], 0].tolist() == [TABLE[3], TABLE[0]]
    assert out.mcs_dl[:, 0].tolist() == [-1, 3, 0, -1]
    # alone in the cell its unused PRBs are idle; with others on it, none are (they take
    # them), and they count as active UEs, as many as leave the UE its share
    assert out.prb_avail_dl[:, 0].tolist() == [N_PRB, N_PRB - own[0], 0, 0]
    # (60 of 106 PRBs: one other UE leaves it that share; none: 106 others, a PRB each)
    assert out.active_ues_dl[:, 0].tolist() == [1, 1, 2, 1 + N_PRB]
    assert rep.prb_used_dl[0, 0] == 7  # the engine's own report is left as it was


def _trace(tmp_path: Path) -> Path:
    """12 Mbit/s for 400 ms, nothing for 100 ms, 3 Mbit/s for 500 ms (1500-B packets)."""
    lines = [str(ms) for ms in range(1, 1001) if ms <= 400 or (ms > 500 and ms % 4 == 0)]
    p = tmp_path / "gaps.down"
    p.write_text("\n".join(lines) + "\n")
    return p


def _scenario(path: Path, report: str, flow: FlowSpec, seconds: float = 3.0) -> Scenario:
    ch = ChannelSpec("mahimahi", path=str(path), report=report)  # type: ignore[arg-type]
    return Scenario(name="gnb-view", duration_s=seconds, ran=RanSpec(n_prb=N_PRB),
                    ues=[UeSpec(channel=ch, flows=[flow])])  # fmt: skip


@pytest.mark.parametrize("report", ["capacity", "gnb"])
def test_backlogged_ue_gets_the_traces_bytes_either_way(tmp_path: Path, report: str) -> None:
    p = _trace(tmp_path)
    s = run_offline(_scenario(p, report, FlowSpec(traffic="backlogged"), 5.0), seed=1).summary
    ue = s["ues"][0]
    expected = 5 * (400 + 125) * 1500  # five periods of the trace
    assert abs(ue["delivered_bytes"] - expected) / expected < 0.01, ue
    assert abs(ue["capacity_bytes"] - expected) / expected < 0.01, ue


def test_what_occ_sees_in_a_gap(tmp_path: Path) -> None:
    """In the 100 ms gap the capacity mapping reports an MCS of zero; the gNB-like report
    has no MCS, no own PRBs, no idle ones and another UE on the cell."""
    p = _trace(tmp_path)
    got: dict[str, list[KpmReport]] = {}
    for report in ("capacity", "gnb"):
        sc = _scenario(p, report, FlowSpec(traffic="backlogged"), 1.0)
        eng = Engine(sc, 1)
        reps: list[KpmReport] = []

        class Sink:
            def on_report(self, rep: KpmReport, now_us: int, out: list[KpmReport] = reps) -> None:
                out.append(rep)

        eng.add_kpm_sink(Sink())
        eng.run()
        got[report] = reps

    def col(report: str, name: str) -> np.ndarray:
        """Per slot from slot 0 (NaN before the first report)."""
        reps = got[report]
        out = np.full(reps[-1].start_slot + reps[-1].n_slots, np.nan)
        for r in reps:
            out[r.start_slot : r.start_slot + r.n_slots] = getattr(r, name)[:, 0]
        return out

    gap = slice(440, 500)  # inside the gap (the capacity mapping lags one CSI period)
    assert (col("capacity", "bits_per_prb_dl")[gap] == 0).all()
    assert np.isnan(col("gnb", "bits_per_prb_dl")[gap]).all()
    assert (col("gnb", "prb_used_dl")[gap] == 0).all()
    assert (col("gnb", "prb_avail_dl")[gap] == 0).all()
    assert (col("gnb", "active_ues_dl")[gap] >= N_PRB).all()
    # served at 12 Mbit/s: the UE's own PRBs at a real MCS, every PRB its own
    busy = slice(100, 380)
    assert (col("gnb", "mcs_dl")[busy] >= 0).all()
    assert not np.isnan(col("gnb", "bits_per_prb_dl")[busy]).any()
    assert (col("gnb", "prb_used_dl")[busy] + col("gnb", "prb_avail_dl")[busy] == N_PRB).all()


def test_gnb_report_needs_one_ue_alone_on_a_downlink_cell(tmp_path: Path) -> None:
    p = _trace(tmp_path)
    sc = _scenario(p, "gnb", FlowSpec(traffic="backlogged"))
    validate(sc)
    sc.ues[0].count = 2
    with pytest.raises(ScenarioError, match="alone"):
        validate(sc)
    sc.ues[0].count = 1
    sc.ran.tdd = "DDDSU"
    with pytest.raises(ScenarioError, match="alone"):
        validate(sc)
    sc.ran.tdd = "D"
    sc.ues[0].channel.csi_period_ms = 0
    with pytest.raises(ScenarioError, match="CSI period"):
        validate(sc)
    sc.ues[0].channel = ChannelSpec("fading", report="gnb")
    with pytest.raises(ScenarioError, match="mahimahi"):
        validate(sc)
