"""The verdict rule of every `octoric eval` report (issue #46, experiments/claims.py): the paper's
effect widened by 30 % at each end, the mean and its 95 % interval over seeds inside it, the
direction on every run; a stronger effect is "exceeds the paper", never a hold; joint claims
per run."""

from __future__ import annotations

import math

import pytest

from octoric.experiments import claims as c

pytestmark = pytest.mark.unit


def seeds(*values: float) -> list[tuple[int, float]]:
    """One run per seed."""
    return [(i + 1, v) for i, v in enumerate(values)]


OCC_BITRATE = c.ratio(1.2, 3.5, "1.2-3.5x (OCC §6.2, line 314)")
OCC_LATENCY = c.ratio(0.32, 0.87, "0.32-0.87x (-13..-68 %, OCC §6.2, line 314)")


def test_accepted_ranges_widen_the_papers_effect_by_30_percent() -> None:
    # a ratio above 1: the gain (ratio - 1) from 0.7x the paper's lowest to 1.3x its highest
    assert c.ratio(1.2, 3.5).accepted() == pytest.approx((1.14, 4.25))
    # lower is better: the factor baseline / ours, 2-10x lower -> 1.7-12.7x lower
    assert c.ratio(0.1, 0.5).accepted() == pytest.approx((1 / 12.7, 1 / 1.7))
    # a point is +-30 % of its effect, never the other side of 1
    assert c.ratio(2.41).accepted() == pytest.approx((1 + 0.7 * 1.41, 1 + 1.3 * 1.41))
    assert c.ratio(1.07).accepted()[0] > 1
    assert c.diff(1.5, None, "dB", "").accepted() == pytest.approx((1.05, 1.95))
    assert c.diff(-100, None, "ms", "").accepted() == pytest.approx((-130, -70))
    assert c.ratio(0.96, kind="at least").accepted() == pytest.approx((1 - 1.3 * 0.04, math.inf))
    with pytest.raises(ValueError):
        c.ratio(0.8, 1.2)  # a range across no change says no direction


def test_t_interval_over_seeds() -> None:
    assert c.t95(4) == pytest.approx(2.776, abs=1e-3)
    assert c.t95(35) == pytest.approx(2.042, abs=0.02)  # between rows: the conservative one
    lo, hi = c.interval([1.0, 2.0, 3.0, 4.0, 5.0]) or (0, 0)
    half = 2.776 * math.sqrt(2.5) / math.sqrt(5)
    assert (lo, hi) == pytest.approx((3 - half, 3 + half), abs=1e-2)
    assert c.interval([2.0]) is None


def test_in_range_holds() -> None:
    r = c.judge("bitrate", OCC_BITRATE, seeds(2.0, 2.2, 2.4, 2.1, 2.3))
    assert r.verdict == c.HOLDS and r.runs_in_direction == 5 and r.seeds == 5
    assert r.mean == pytest.approx(2.2) and r.ci95 is not None
    assert 2.0 < r.ci95[0] < 2.2 < r.ci95[1] < 2.4


def test_a_range_claim_at_the_papers_lower_bound_holds() -> None:
    # OCC's 1.197x under contention against the paper's 1.2-3.5x
    r = c.judge("contention bitrate", OCC_BITRATE, seeds(1.184, 1.197, 1.209, 1.19, 1.205))
    assert r.verdict == c.HOLDS, r.reason


def test_within_30_percent_of_a_point_holds_and_beyond_it_does_not() -> None:
    paper = c.diff(1.5, None, "dB", "+1.5 dB PSNR (Dumbo thesis line 650)")
    assert c.judge("psnr", paper, seeds(1.2, 1.3, 1.25, 1.35, 1.3)).verdict == c.HOLDS  # -17 %
    short = c.judge("psnr", paper, seeds(0.9, 0.95, 1.0, 0.92, 0.98))  # -37 %
    assert short.verdict == c.FAILS and "under" in short.reason


def test_an_effect_far_beyond_the_paper_exceeds_and_is_not_a_hold() -> None:
    # OCC's 4.87x bitrate on the unseen traces against 1.2-3.5x
    r = c.judge("unseen bitrate", OCC_BITRATE, seeds(4.5, 4.9, 5.2, 4.8, 4.95))
    assert r.verdict == c.EXCEEDS and "check the baseline" in r.reason
    dumbo = c.judge("psnr", c.diff(1.5, None, "dB", ""), seeds(5.8, 5.2, 6.1, 5.5, 6.0))
    assert dumbo.verdict == c.EXCEEDS
    # lower is better: 20x lower latency against the paper's 2-10x lower
    assert c.judge("lat", c.ratio(0.1, 0.5), seeds(0.05, 0.04, 0.06)).verdict == c.EXCEEDS
    assert c.tally([r, dumbo]) == {c.HOLDS: 0, c.EXCEEDS: 2, c.FAILS: 0}


def test_the_opposite_direction_in_one_run_does_not_hold() -> None:
    r = c.judge("latency", OCC_LATENCY, seeds(0.5, 0.6, 1.16, 0.4, 0.55))
    assert r.verdict == c.FAILS and r.runs_in_direction == 4 and "1 of 5" in r.reason
    assert c.judge("latency", OCC_LATENCY, seeds(1.3, 1.2, 1.4)).verdict == c.FAILS


def test_an_interval_reaching_outside_the_range_does_not_hold() -> None:
    # the mean (1.9x) in range, but the seeds spread far past 4.25x
    r = c.judge("bitrate", OCC_BITRATE, seeds(1.15, 1.2, 1.25, 1.3, 4.5))
    assert r.verdict == c.FAILS and "interval" in r.reason


def test_one_seed_has_no_interval_and_cannot_hold() -> None:
    r = c.judge("bitrate", OCC_BITRATE, [(1, 2.0), (1, 2.2)])  # two cases, one seed
    assert r.seeds == 1 and r.ci95 is None and r.verdict == c.FAILS
    assert "no 95 % interval" in r.reason


def test_interval_is_over_seeds_direction_over_runs() -> None:
    # two traces per seed: per-seed means 2.0, 2.2, 2.4; the direction over all six runs
    runs = [(1, 1.5), (1, 2.5), (2, 1.7), (2, 2.7), (3, 1.9), (3, 2.9)]
    r = c.judge("bitrate", OCC_BITRATE, runs)
    assert r.seeds == 3 and r.runs == 6 and r.mean == pytest.approx(2.2)
    assert r.ci95 == pytest.approx(c.interval([2.0, 2.2, 2.4]))


def test_joint_claim_with_one_part_failing_does_not_hold() -> None:
    # latency in range on every run, but the bitrate below GCC's on most (OCC's known traces)
    lat = seeds(0.45, 0.5, 0.48, 0.52, 0.47)
    rate = seeds(0.61, 0.9, 1.22, 0.8, 0.77)
    r = c.judge_joint("OCC lowers latency and raises bitrate",
                      [("latency", OCC_LATENCY, lat), ("bitrate", OCC_BITRATE, rate)])  # fmt: skip
    assert r.verdict == c.FAILS and r.runs_in_direction == 1  # only the 1.22x run has both
    assert [p.verdict for p in r.parts] == [c.HOLDS, c.FAILS]
    assert c.tally([r]) == {c.HOLDS: 0, c.EXCEEDS: 0, c.FAILS: 1}  # parts are not counted


def test_joint_claim_judged_per_run() -> None:
    # each part in direction on 4 of 5 runs, but never in the same run: no run counts
    lat = seeds(0.3, 0.3, 0.3, 0.3, 1.1)
    rate = seeds(0.9, 2.0, 2.0, 2.0, 2.0)
    r = c.judge_joint("both", [("latency", OCC_LATENCY, lat), ("bitrate", OCC_BITRATE, rate)])
    assert r.runs_in_direction == 3 and r.verdict == c.FAILS
    both = c.judge_joint("both", [("latency", OCC_LATENCY, seeds(0.45, 0.5, 0.48)),
                                  ("bitrate", OCC_BITRATE, seeds(2.0, 2.2, 2.1))])  # fmt: skip
    assert both.verdict == c.HOLDS and both.runs_in_direction == 3
    over = c.judge_joint("both", [("latency", OCC_LATENCY, seeds(0.45, 0.5, 0.48)),
                                  ("bitrate", OCC_BITRATE, seeds(4.8, 4.9, 5.0))])  # fmt: skip
    assert over.verdict == c.EXCEEDS


def test_direction_and_floor_claims() -> None:
    below = c.ratio(0.9, ref="< 1", kind="direction")
    assert c.judge("pbe", below, seeds(0.4, 0.5, 0.45)).verdict == c.HOLDS
    assert c.judge("pbe", below, seeds(0.05, 0.06, 0.04)).verdict == c.HOLDS  # no "exceeds"
    assert c.judge("pbe", below, seeds(0.9, 1.1, 0.5)).verdict == c.FAILS
    floor = c.ratio(0.96, ref="only 4 % lower", kind="at least")
    assert c.judge("q", floor, seeds(0.99, 1.02, 1.0)).verdict == c.HOLDS
    assert c.judge("q", floor, seeds(0.73, 0.8, 0.7)).verdict == c.FAILS
    # in every run, but an interval too wide to say the mean is above the floor
    assert c.judge("q", floor, seeds(0.97, 1.05, 1.2)).verdict == c.FAILS


def test_infinite_runs_count_for_the_direction_only() -> None:
    paper = c.ratio(30, ref="30x faster convergence")
    r = c.judge("conv", paper, seeds(25.0, math.inf, 28.0, 31.0, 27.0))
    assert r.runs_in_direction == 5 and r.seeds == 4 and r.mean == pytest.approx(27.75)


def test_report_rows_show_paper_mean_interval_runs_and_verdict() -> None:
    r = c.judge("contention: frame bitrate", OCC_BITRATE, seeds(1.184, 1.197, 1.209))
    j = c.judge_joint("joint", [("latency", OCC_LATENCY, seeds(0.45, 0.5, 0.48)),
                                ("bitrate", OCC_BITRATE, seeds(4.8, 4.9, 5.0))],
                      counted=False)  # fmt: skip
    lines = c.claims_table([r, j])
    row = lines[2]
    assert "line 314" in row and "1.20x [" in row and "3 of 3" in row and "holds" in row
    assert "1.14x to 4.25x" in row
    assert any(x.startswith("| ↳ bitrate") for x in lines)
    assert "not counted" in lines[3]
    assert (
        lines[-1]
        == "1 claim: 1 holds, 0 exceed the paper, 0 do not hold (1 extra row, not counted)."
    )
    d = r.to_json()
    assert d["verdict"] == c.HOLDS and d["runs_in_direction"] == 3 and len(d["ci95"]) == 2
