"""The handover check (``experiments.handover_check``): the xApp's events against the
simulator's ground truth; and the ground-truth log itself, written by the engine's mobility
sink exactly as the handovers happened."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from octoric.experiments.handover_check import check, ground_truth
from octoric.sim import ground_truth as gt
from octoric.sim.engine import Engine
from octoric.sim.scenario import load

pytestmark = pytest.mark.unit
A, B = "gnb_a", "gnb_b"
T0 = 1_800_000_000_000.0


def truth(ue: int, start: float, dur: float, src: str = A, dst: str = B, failed: bool = False,
          ) -> list[dict[str, Any]]:  # fmt: skip
    common = {"ue": ue, "source_meid": src, "target_meid": dst, "failed": failed}
    return [
        {"event": "start", "unix_ms": T0 + start, "sim_s": start / 1000, **common},
        {"event": "end", "unix_ms": T0 + start + dur, "sim_s": (start + dur) / 1000, **common},
    ]


def ev(ue: int, kind: str, t: float, src: str = A, dst: str | None = B, **kw: Any,
       ) -> dict[str, Any]:  # fmt: skip
    return {"ue": ue, "event": kind, "t_ms": T0 + t, "source_meid": src, "target_meid": dst,
            "path": "rc", **kw}  # fmt: skip


END = truth(99, 60_000, 10)  # a late record: the log runs to 60 s


def test_a_perfect_run_passes_and_every_fault_is_counted() -> None:
    gtr = truth(1, 20_000, 90) + truth(2, 30_000, 1100, failed=True) + END
    good = [ev(1, "start", 20_002, dst=None), ev(1, "complete", 20_093, interruption_ms=90.0),
            ev(2, "start", 30_001, dst=None), ev(2, "failure", 31_102)]  # fmt: skip
    r = check(gtr, good, warmup_until_ms=T0 + 10_000)
    assert r.ok and (r.handovers, r.missed, r.spurious) == (2, 0, 0)
    assert r.start_delay_ms["p50"] == pytest.approx(1.5) and r.paths == {"rc": 2}
    assert r.interruption_error_ms["max"] == 0.0
    # a missed end, a spurious event, a wrong target node, a complete for a failed one
    assert check(gtr, good[:3], T0 + 10_000).missed_ends == 1
    extra = check(gtr, [*good, ev(3, "start", 40_000)], T0 + 10_000)
    assert extra.spurious == 1 and not extra.ok
    wrong = [*good[:1], ev(1, "complete", 20_093, dst="gnb_c"), *good[2:]]
    assert check(gtr, wrong, T0 + 10_000).wrong_nodes == 1
    kind = [*good[:3], ev(2, "complete", 31_102)]
    assert check(gtr, kind, T0 + 10_000).kind_mismatches == 1
    # the kpm path cannot tell a failure: counted apart, not an error
    kpm = [*good[:3], ev(2, "complete", 31_102, path="kpm")]
    r = check(gtr, kpm, T0 + 10_000)
    assert r.ok and r.kpm_failures_as_complete == 1
    # an event far too late is no match: missed, and spurious
    late = [*good[:1], ev(1, "complete", 21_500), *good[2:]]
    r = check(gtr, late, T0 + 10_000)
    assert r.missed_ends == 1 and r.spurious == 1


def test_warm_up_tail_and_runs_in_progress_are_not_judged() -> None:
    gtr = truth(1, 5_000, 90) + truth(2, 59_500, 90) + END + [
        {"event": "start", "ue": 3, "unix_ms": T0 + 59_900, "sim_s": 59.9, "source_meid": A,
         "target_meid": B, "failed": False}]  # fmt: skip
    evs = [ev(1, "start", 5_001), ev(3, "start", 59_901)]  # ue 2's events never came
    r = check(gtr, evs, T0 + 10_000)
    assert (r.handovers, r.excluded, r.spurious, r.missed) == (0, 4, 0, 0) and not r.ok
    hos, last = ground_truth(gtr)
    assert last == T0 + 60_010 and [h.ue for h in hos if h.end_ms == float("inf")] == [3]


def test_the_ground_truth_log_is_what_the_engine_did(tmp_path: Path) -> None:
    sc = load("hsr")
    sc.duration_s = 40.0
    eng = Engine(sc, seed=3)
    log = gt.HandoverLog(tmp_path / "h.jsonl", eng, ["g0", "g1", "g2"], {0: 0x10, 1: 0x20, 2: 0x30})
    eng.add_mobility_sink(log)
    eng.run()
    log.close()
    recs = gt.read(tmp_path / "h.jsonl")
    starts = [r for r in recs if r["event"] == "start"]
    assert len(starts) == len(eng.handovers) > 5
    for r, h in zip(starts, eng.handovers, strict=True):
        assert (r["ue"], r["failed"], r["pingpong"]) == (h.amf_ue_ngap_id, h.failed, h.pingpong)
        assert r["sim_s"] == pytest.approx(h.start_s, abs=1e-6)
        assert r["source_nci"] == f"{(h.source_cell + 1) * 16:x}"
    ends = [r for r in recs if r["event"] == "end"]
    assert all(r["interruption_ms"] > 0 for r in ends) and len(ends) >= len(starts) - 4
    (tmp_path / "torn.jsonl").write_text(json.dumps(recs[0]) + '\n{"event": ')
    assert gt.read(tmp_path / "torn.jsonl") == recs[:1]
