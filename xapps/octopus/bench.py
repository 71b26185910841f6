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
from typing import Any

from octoric import liboctopus
from octoric.bench import Benchmark, BenchResult

TARGET_RATIO = 1.05
TARGET_MPPS = 5.0


SRSRAN_BUILD_ENV = "OCTORIC_SRSRAN_BUILD"
SRSRAN_BENCH = "tests/benchmarks/rlc/rlc_um_tx_benchmark"


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


def cli_json(quick: bool) -> dict[str, Any]:
    exe = liboctopus.tool("octopus_bench")
    out = subprocess.run(
        [str(exe), "3" if quick else "9"], capture_output=True, text=True, check=True
    ).stdout
    figures: dict[str, Any] = json.loads(out)
    srsran = srsran_rlc(quick)
    if srsran is not None:
        figures["srsran_rlc_um"] = srsran
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
            name="liboctopus cost, descriptor-only queue (no payload copy)",
            value=f["bare_dropper_ns_per_pkt"], unit="ns/pkt", higher_is_better=False,
            baseline_name="the same FIFO without Octopus",
            baseline_value=f["bare_fifo_ns_per_pkt"], samples=n,
            note=f"ratio {f['bare_ratio']:.1f}: the worst case, a queue that does nothing else",
        ),
        *_srsran_results(f.get("srsran_rlc_um")),
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
        BenchResult(
            name="srsRAN RLC UM TX cost per SDU, Octopus dropper on (no drop due)",
            value=g["on_ns_per_sdu"], unit="ns/SDU", higher_is_better=False,
            baseline_name="the same srsRAN RLC UM TX entity, dropper off",
            baseline_value=g["off_ns_per_sdu"], target=f"cost ours / baseline <= {TARGET_RATIO}",
            target_met=g["ratio"] <= TARGET_RATIO, samples=int(g["repetitions"]), note=note,
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
