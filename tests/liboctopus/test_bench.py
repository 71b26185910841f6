"""``octoric bench octopus``'s figures (issue #13 done-when 3): the keys it prints and how it
reads srsRAN's DU-high benchmark. Speed itself is judged in ``make bench``, not here."""

from __future__ import annotations

import pytest

from octoric.xapps.octopus import bench

DU_HIGH_OUT = """\
Stats: #slots=2000, #PDSCHs=1998, #PDSCHs-per-slot=0.999, dl_bitrate=71.9 Mbps, #PUSCHs=0
{"octopus": "on", "ues": 1, "slots": 2000, "mean_slot_ns": 55241.5, "dl_grants": 1998, \
"dl_bytes": 17982000, "dropped_sdus": 0, "dropped_msgs_by_message": 0, \
"dropped_msgs_by_bitrate": 0, "malformed_headers": 0, "lost_arrivals": 0}
==========================================================================================
"DU-High" performance for 2000 repetitions. All values are in nanoseconds.
 Percentiles:     |  50th  |  75th  |  90th  |  99th  | 99.9th |99.99th | Worst  |
 DL, 1 UEs, RLC UM| 48382.0| 69173.0|103925.0|138056.0|153259.0|287849.0|287849.0|
"""


def test_the_liboctopus_figures_are_the_ones_done_when_3_names(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(bench.SRSRAN_BUILD_ENV, raising=False)
    f = bench.cli_json(quick=True)
    for key in ("dropper_ns_per_pkt", "fifo_ns_per_pkt", "ratio", "mpps", "parse_only_ratio"):
        assert f[key] > 0, key
    assert f["ratio"] == pytest.approx(f["dropper_ns_per_pkt"] / f["fifo_ns_per_pkt"], rel=1e-2)
    assert f["mpps"] == pytest.approx(1e3 / f["dropper_ns_per_pkt"], rel=1e-2)
    assert f["drops"] == 0  # the schedule is like for like: nothing dropped, the same bytes
    assert "srsran_rlc_um" not in f and "srsran_du_high" not in f


def test_a_du_high_run_is_read_from_its_table_and_json_line() -> None:
    fig = bench.parse_du_high(DU_HIGH_OUT)
    assert fig["octopus"] == "on"
    assert (fig["p50_ns"], fig["p99_ns"], fig["p999_ns"]) == (48382.0, 138056.0, 153259.0)
    assert fig["mean_slot_ns"] == 55241.5 and fig["dropped_sdus"] == 0


def test_a_du_high_output_without_the_octopus_line_is_refused_clearly() -> None:
    plain = "\n".join(ln for ln in DU_HIGH_OUT.splitlines() if not ln.startswith("{"))
    with pytest.raises(ValueError, match="patch 0010"):
        bench.parse_du_high(plain)


def test_the_du_high_row_compares_the_dropper_on_and_off_within_each_run() -> None:
    base = bench.parse_du_high(DU_HIGH_OUT)
    alt = {
        "octopus": "alternate", "alt_period_slots": 500, "alt_pairs": 40,
        "alt_off_p99_ns": 100.0, "alt_on_p99_ns": 101.0, "alt_off_mean_ns": 50.0,
        "alt_on_mean_ns": 50.5,
    }  # fmt: skip
    runs = [
        dict(base, **alt, alt_off_p50_ns=off, alt_on_p50_ns=on)
        for off, on in ((50000.0, 50500.0), (60000.0, 59400.0), (40000.0, 40800.0))
    ]
    check = dict(base, octopus="drops", dropped_msgs_by_bitrate=862)
    fig = bench.du_high_figures(check, runs)
    assert fig["ratio_p50_ns_runs"] == [0.99, 1.01, 1.02]
    assert fig["ratio_p50_ns"] == pytest.approx(1.01)
    assert (fig["off_p50_ns"], fig["on_p50_ns"]) == (50000.0, 50500.0)
    assert fig["ratio_p99_ns"] == pytest.approx(1.01)
    assert fig["ratio_mean_ns"] == pytest.approx(1.01)
    assert fig["runs"] == 3 and fig["pairs"] == 120 and fig["slots"] == 2000
    (row,) = bench._du_high_results(fig)
    assert row.value == 50500.0 and row.baseline_value == 50000.0 and row.target_met
    assert "862 messages" in row.note and "0.990-1.020" in row.note
