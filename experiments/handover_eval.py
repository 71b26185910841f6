"""``octoric eval handover``: ``octoric run`` on high-speed rail across several simulated
gNBs, then the handover xApp's events against the simulator's ground truth
(``experiments.handover_check``), for the RC path, the KPM-only path, or both (issue #12,
done-when 1).

Each run is a real ``octoric run`` (embedded RIC, simulated gNBs over E2, the OCC and handover
xApps, Redis) in a child process, on the default ports, writing its run folder under
``out_dir/<detection>/``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from octoric.errors import OctoricError
from octoric.experiments.handover_check import CheckResult, check_run


class HandoverEvalError(OctoricError):
    pass


@dataclass
class HandoverEvalOptions:
    duration_s: float = 300.0
    cells: int = 4  # one per gNB: every handover crosses E2 nodes
    ues: int = 8
    seed: int = 1
    warmup_s: float = 10.0
    max_delay_ms: float = 1000.0


def run_argv(detection: str, opts: HandoverEvalOptions, report_dir: Path) -> list[str]:
    sets = {
        "sim.scenario": "hsr",
        "sim.cells": str(opts.cells),
        "sim.cells_per_gnb": "1",
        "sim.ues": str(opts.ues),
        "sim.seed": str(opts.seed),
        "xapps.enabled": "[occ, handover]",
        "xapps.controls.handover.detection": detection,
        "report_dir": str(report_dir),
    }
    argv = [sys.executable, "-m", "octoric.cli", "run", "--no-live",
            "--duration", str(opts.duration_s)]  # fmt: skip
    for k, v in sets.items():
        argv += ["--set", f"{k}={v}"]
    return argv


def run_one(detection: str, opts: HandoverEvalOptions, out_dir: Path) -> tuple[Path, CheckResult]:
    """One ``octoric run`` with ``controls.detection`` = ``detection``; its run folder and
    the check of its events."""
    report_dir = out_dir / detection
    before = set(report_dir.glob("*")) if report_dir.is_dir() else set()
    log = out_dir / f"{detection}-run.log"
    out_dir.mkdir(parents=True, exist_ok=True)
    print(f"[eval handover] {detection}: octoric run, {opts.duration_s:.0f} s, log {log}",
          file=sys.stderr, flush=True)  # fmt: skip
    with log.open("w") as f:
        rc = subprocess.call(run_argv(detection, opts, report_dir), stdout=f, stderr=f)
    new = sorted(p for p in set(report_dir.glob("*")) - before if p.is_dir())
    if rc != 0 or not new:
        raise HandoverEvalError(f"octoric run ({detection}) failed (exit {rc}); see {log}")
    run_dir = new[-1]
    try:
        return run_dir, check_run(run_dir, opts.warmup_s, opts.max_delay_ms)
    except (OSError, ValueError, KeyError) as e:
        raise HandoverEvalError(f"{run_dir}: cannot check the run: {e}") from None


def table(results: dict[str, CheckResult]) -> str:
    rows = ["| path | handovers | missed | spurious | wrong nodes | start delay p50/p99 ms "
            "| end delay p50/p99 ms | interruption error p50 ms | ping-pongs truth/events |",
            "|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for name, r in results.items():
        rows.append(
            f"| {name} | {r.handovers} | {r.missed} | {r.spurious} | {r.wrong_nodes} "
            f"| {r.start_delay_ms['p50']}/{r.start_delay_ms['p99']} "
            f"| {r.end_delay_ms['p50']}/{r.end_delay_ms['p99']} "
            f"| {r.interruption_error_ms['p50']} | {r.ping_pongs_truth}/{r.ping_pong_events} |"
        )
    return "\n".join(rows) + "\n"


def run_eval(detections: list[str], opts: HandoverEvalOptions, out_dir: Path) -> dict[str, Any]:
    t0 = time.monotonic()
    results: dict[str, CheckResult] = {}
    runs: dict[str, str] = {}
    for d in detections:
        run_dir, results[d] = run_one(d, opts, out_dir)
        runs[d] = str(run_dir)
    doc = {
        "options": opts.__dict__,
        "runs": runs,
        "results": {k: v.to_json() for k, v in results.items()},
        "ok": all(r.ok for r in results.values()),
        "wall_seconds": round(time.monotonic() - t0, 1),
    }
    (out_dir / "results.json").write_text(json.dumps(doc, indent=1))
    (out_dir / "results.md").write_text(table(results))
    return doc
