"""``octoric bench octopus``: liboctopus in an RLC-like transmit queue against the same queue
without it (``srsran_agent/liboctopus/tools/octopus_bench.cpp``: one schedule, interleaved
runs, medians; docs/octopus.md says what the schedule is).

Targets (issue #13): ratio <= 1.05 (SEC'23: +1.7 % processing delay) and >= 5 M packets/s
per core through enqueue + dequeue.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from statistics import median_high
from typing import Any

from octoric import liboctopus
from octoric.bench import Benchmark, BenchResult

TARGET_RATIO = 1.05
TARGET_MPPS = 5.0


SRSRAN_BUILD_ENV = "OCTORIC_SRSRAN_BUILD"
SRSRAN_BENCH = "tests/benchmarks/rlc/rlc_um_tx_benchmark"
SRSRAN_DU_HIGH = "tests/benchmarks/du_high/du_high_benchmark"
# DU-high: slots per run (-O alternate: the dropper switched on and off every 500 slots of one
# run, so both sides share the process; separate processes differed by up to +-25 % from one
# run to the next, their threads' placement and memory layout), and runs.
DU_HIGH_SLOTS = 40000
DU_HIGH_RUNS = 5


def srsran_rlc(quick: bool) -> dict[str, Any] | None:
    """srsRAN's own RLC UM TX entity with the dropper off and on (patch 0007's benchmark), when
    ``$OCTORIC_SRSRAN_BUILD`` names a build of the patched srsRAN (srsran_agent/build.sh): the
    like-for-like figure, the same SDUs and grants through the real gNB queue. None without."""
    build = os.environ.get(SRSRAN_BUILD_ENV)
    if not build:
        return None
    exe = Path(build) / SRSRAN_BENCH
    if not exe.is_file():
        raise FileNotFoundError(
            f"${SRSRAN_BUILD_ENV}={build} has no {SRSRAN_BENCH}: build it with "
            "srsran_agent/build.sh (patch 0007)"
        )
    args = [str(exe), *(["-R", "300"] if quick else [])]
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    figures: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return figures


def _du_high_run(exe: Path, mode: str, slots: int) -> dict[str, Any]:
    """One du_high_benchmark run (patch 0010's ``-O``): its slot-latency percentiles (the table
    srsRAN prints, ns) and its JSON line (mean, grants, the droppers' counters)."""
    out = subprocess.run(
        [str(exe), "-R", str(slots), "-O", mode], capture_output=True, text=True, check=True
    ).stdout
    return parse_du_high(out)


def parse_du_high(out: str) -> dict[str, Any]:
    """The figures of one du_high_benchmark output: its JSON line, and the percentiles of the
    "RLC UM" row of the table srsRAN prints (50th, 75th, 90th, 99th, 99.9th, in ns)."""
    lines = out.strip().splitlines()
    rows = [ln for ln in lines if "RLC UM" in ln and ln.count("|") >= 7]
    found = [ln for ln in lines if ln.startswith('{"octopus"')]
    if len(rows) != 1 or len(found) != 1:
        raise ValueError(
            "du_high_benchmark printed no single 'RLC UM' percentile row and JSON line: "
            "run one scenario (one -U value) of a build with patch 0010 (-O)"
        )
    p50, p75, p90, p99, p999 = (float(x) for x in rows[0].split("|")[1:6])
    fig: dict[str, Any] = json.loads(found[0])
    fig.update(p50_ns=p50, p75_ns=p75, p90_ns=p90, p99_ns=p99, p999_ns=p999)
    return fig


def srsran_du_high(quick: bool) -> dict[str, Any] | None:
    """The processing delay SEC'23 §5 reports (+1.7 %), on srsRAN's DU-high (MAC scheduler, RLC,
    F1-U; release_25_10 + octoric's patches, patch 0010's ``-O``): the time to process a slot
    with DL video traffic carrying Octopus headers, the dropper switched off and on in turns
    within each run (``alternate``, no drop due); a ``drops`` run first checks that the PDUs
    reach the dropper through this path. None without ``$OCTORIC_SRSRAN_BUILD`` or without the
    benchmark."""
    build = os.environ.get(SRSRAN_BUILD_ENV)
    if not build:
        return None
    exe = Path(build) / SRSRAN_DU_HIGH
    if not exe.is_file():
        return None
    slots, runs = (4000, 1) if quick else (DU_HIGH_SLOTS, DU_HIGH_RUNS)
    check = _du_high_run(exe, "drops", 1000)  # srsRAN's throughput checks start above 1000
    return du_high_figures(check, [_du_high_run(exe, "alternate", slots) for _ in range(runs)])


def du_high_figures(check: dict[str, Any], runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The DU-high row's figures from its ``alternate`` runs (``parse_du_high`` of each): per run,
    the dropper-on slots against the dropper-off ones (median, p99, mean); over runs, their
    medians and ranges."""
    fig: dict[str, Any] = {
        "slots": runs[0]["slots"], "runs": len(runs), "period": runs[0]["alt_period_slots"],
        "pairs": sum(r["alt_pairs"] for r in runs),
    }  # fmt: skip
    for key in ("p50_ns", "p99_ns", "mean_ns"):
        ratios = sorted(r[f"alt_on_{key}"] / r[f"alt_off_{key}"] for r in runs)
        fig[f"off_{key}"] = median_high([r[f"alt_off_{key}"] for r in runs])
        fig[f"on_{key}"] = median_high([r[f"alt_on_{key}"] for r in runs])
        fig[f"ratio_{key}"] = median_high(ratios)
        fig[f"ratio_{key}_runs"] = [round(x, 4) for x in ratios]
    fig["dl_grants_per_slot"] = median_high([r["dl_grants"] / r["slots"] for r in runs])
    fig["check_dropped_msgs_by_bitrate"] = check["dropped_msgs_by_bitrate"]
    fig["on_dropped_sdus"] = sum(r["dropped_sdus"] for r in runs)
    return fig


def cli_json(quick: bool) -> dict[str, Any]:
    exe = liboctopus.tool("octopus_bench")
    out = subprocess.run(
        [str(exe), "3" if quick else "9"], capture_output=True, text=True, check=True
    ).stdout
    figures: dict[str, Any] = json.loads(out)
    srsran = srsran_rlc(quick)
    if srsran is not None:
        figures["srsran_rlc_um"] = srsran
    du_high = srsran_du_high(quick)
    if du_high is not None:
        figures["srsran_du_high"] = du_high
    return figures


def _run(quick: bool) -> list[BenchResult]:
    f = cli_json(quick)
    n = int(f["repeats"])
    sched = (
        f"{f['packets']:,} packets, 4 streams, every message a dropper with a bitrate "
        "threshold, no drop due; dequeue copies each packet into the transport block"
    )
    return [
        BenchResult(
            name="liboctopus enqueue+dequeue cost", value=f["dropper_ns_per_pkt"], unit="ns/pkt",
            higher_is_better=False, baseline_name="the same FIFO without Octopus",
            baseline_value=f["fifo_ns_per_pkt"], target=f"cost ours / baseline <= {TARGET_RATIO}",
            target_met=f["ratio"] <= TARGET_RATIO, samples=n,
            note=f"{sched}; ratio {f['ratio']:.2f} (ours / FIFO)",
        ),
        BenchResult(
            name="liboctopus throughput", value=f["mpps"], unit="Mpkt/s",
            target=f">= {TARGET_MPPS} Mpkt/s per core", target_met=f["mpps"] >= TARGET_MPPS,
            samples=n,
        ),
        BenchResult(
            name="the same FIFO parsing each arrival's Octopus header (no Algorithm 1)",
            value=f["parse_only_ns_per_pkt"], unit="ns/pkt", higher_is_better=False,
            baseline_name="the same FIFO without Octopus", baseline_value=f["fifo_ns_per_pkt"],
            samples=n,
            note=f"ratio {f['parse_only_ratio']:.2f}: reading the header, before Algorithm 1",
        ),
        BenchResult(
            name="liboctopus cost, descriptor-only queue (no payload copy)",
            value=f["bare_dropper_ns_per_pkt"], unit="ns/pkt", higher_is_better=False,
            baseline_name="the same FIFO without Octopus",
            baseline_value=f["bare_fifo_ns_per_pkt"], samples=n,
            note=f"ratio {f['bare_ratio']:.1f}: the worst case, a queue that does nothing else",
        ),
        *_srsran_results(f.get("srsran_rlc_um")),
        *_du_high_results(f.get("srsran_du_high")),
    ]  # fmt: skip


def _srsran_results(g: dict[str, Any] | None) -> list[BenchResult]:
    if g is None:
        return []
    note = (
        f"srsRAN release_25_10 + octoric's patches (0007's benchmark): {g['sdus']} SDUs of "
        f"~{g['sdu_bytes_mean']:.0f} B per repetition, the same grants and bytes out; paired "
        f"ratio median {g['ratio_paired_median']:.2f} (p10 {g['ratio_paired_p10']:.2f}, "
        f"p90 {g['ratio_paired_p90']:.2f})"
    )
    return [
        _dropper_on_vs_off(
            "srsRAN RLC UM TX cost per SDU, Octopus dropper on (no drop due)", "ns/SDU",
            "the same srsRAN RLC UM TX entity, dropper off", g["on_ns_per_sdu"],
            g["off_ns_per_sdu"], g["ratio"], int(g["repetitions"]), note, "cost",
        ),
    ]  # fmt: skip


def _dropper_on_vs_off(
    name: str, unit: str, baseline: str, on: float, off: float, ratio: float, samples: int,
    note: str, measure: str,
) -> BenchResult:  # fmt: skip
    """A row of srsRAN with the dropper on against the same srsRAN with it off (lower is
    better), judged by issue #13's ratio; ``measure`` names what the ratio is of."""
    return BenchResult(
        name=name, value=on, unit=unit, higher_is_better=False, baseline_name=baseline,
        baseline_value=off, target=f"{measure} ours / baseline <= {TARGET_RATIO}",
        target_met=ratio <= TARGET_RATIO, samples=samples, note=note,
    )  # fmt: skip


def _du_high_results(g: dict[str, Any] | None) -> list[BenchResult]:
    if g is None:
        return []
    runs = g["ratio_p50_ns_runs"]
    note = (
        f"SEC'23 §5's processing delay, on srsRAN's DU-high (release_25_10 + octoric's patches, "
        f"patch 0010's -O alternate): time to process a slot, 1 UE, DL video traffic with "
        f"Octopus headers ({g['dl_grants_per_slot']:.2f} PDSCH per slot), the dropper switched "
        f"on and off every {g['period']} slots within each of {g['runs']} runs of {g['slots']} "
        f"slots; on/off median per run {runs[0]:.3f}-{runs[-1]:.3f}, p99 "
        f"{g['ratio_p99_ns']:.3f}, mean {g['ratio_mean_ns']:.3f} (medians over runs); the "
        f"dropper dropped nothing, and in a check run with drops due "
        f"{g['check_dropped_msgs_by_bitrate']} messages"
    )
    return [
        _dropper_on_vs_off(
            "srsRAN DU-high slot processing, Octopus dropper on (no drop due), median", "ns/slot",
            "the same DU-high run, dropper off", g["on_p50_ns"], g["off_p50_ns"],
            g["ratio_p50_ns"], int(g["runs"]), note, "SEC'23 §5 processing delay:",
        ),
    ]  # fmt: skip


BENCHMARKS = [
    Benchmark(
        "octopus",
        "octopus",
        _run,
        "liboctopus (SEC'23 Algorithm 1) in an RLC-like queue vs the same queue without it",
    )
]
