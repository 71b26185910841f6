"""``octoric bench octopus``: liboctopus in an RLC-like transmit queue against the same queue
without it (``srsran_agent/liboctopus/tools/octopus_bench.cpp``: one schedule, interleaved
runs, medians; docs/octopus.md says what the schedule is).

Targets (issue #13): ratio <= 1.05 (SEC'23: +1.7 % processing delay) and >= 5 M packets/s
per core through enqueue + dequeue.
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

from octoric import liboctopus
from octoric.bench import Benchmark, BenchResult

TARGET_RATIO = 1.05
TARGET_MPPS = 5.0


def cli_json(quick: bool) -> dict[str, Any]:
    exe = liboctopus.tool("octopus_bench")
    out = subprocess.run(
        [str(exe), "3" if quick else "9"], capture_output=True, text=True, check=True
    ).stdout
    figures: dict[str, Any] = json.loads(out)
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
            baseline_value=f["fifo_ns_per_pkt"], target=f"ratio <= {TARGET_RATIO}",
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
    ]  # fmt: skip


BENCHMARKS = [
    Benchmark(
        "octopus",
        "octopus",
        _run,
        "liboctopus (SEC'23 Algorithm 1) in an RLC-like queue vs the same queue without it",
    )
]
