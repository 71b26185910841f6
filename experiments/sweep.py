"""``octoric eval sweep``: many simulator runs, on a local process pool or a local Ray cluster,
with the same results for the same seeds (issue #20).

A sweep is a grid of runs (scenario x scheme x seed, in a fixed order); each run is a whole
offline simulation (``Engine``) whose result is its summary without the wall-clock fields,
plus a SHA-256 of that summary, so two sweeps compare run by run. The backends only decide
where a run executes (experiments/runner.py, as for every ``octoric eval NAME``): ``pool`` is a
local process pool; ``ray`` starts a local Ray cluster and runs each as a Ray task.
A run depends on its spec alone (the engine's random streams come from its seed), so the
results must be identical; ``--compare`` checks two sweeps' files against each other.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any, Literal

from octoric.errors import OctoricError
from octoric.experiments import runner
from octoric.sim.engine import Engine
from octoric.sim.scenario import load
from octoric.sim.summary import build_summary

SCENARIOS = ("static", "pulse", "route:good", "route:blockage", "multi-ue")
SCHEMES = ("gcc", "fixed", "pbe", "cubic", "bbr")
WALL_KEYS = ("wall_seconds",)  # fields that depend on the machine, not on the run
Backend = Literal["pool", "ray"]


@dataclass(frozen=True)
class RunSpec:
    run: int
    scenario: str
    scheme: str
    seed: int
    duration_s: float


def grid(n: int, duration_s: float) -> list[RunSpec]:
    """The first ``n`` runs of scenario x scheme, then the next seed, and so on."""
    combos = itertools.cycle(itertools.product(SCENARIOS, SCHEMES))
    per_seed = len(SCENARIOS) * len(SCHEMES)
    return [RunSpec(i, sc, scheme, 1 + i // per_seed, duration_s)
            for i, (sc, scheme) in zip(range(n), combos, strict=False)]  # fmt: skip


def _strip(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _strip(v) for k, v in obj.items() if k not in WALL_KEYS}
    if isinstance(obj, list):
        return [_strip(v) for v in obj]
    return obj


def run_spec(spec: RunSpec) -> dict[str, Any]:
    """One run: its summary (machine-independent fields) and the summary's SHA-256."""
    sc = load(spec.scenario)
    sc.duration_s = spec.duration_s
    for u in sc.ues:
        for f in u.flows:
            f.scheme = spec.scheme
            f.traffic = "bulk" if spec.scheme in ("cubic", "bbr") else "video"
    eng = Engine(sc, spec.seed)
    summary = _strip(build_summary(eng, eng.run()))
    blob = json.dumps(summary, sort_keys=True, default=str).encode()
    return {**asdict(spec), "sha256": hashlib.sha256(blob).hexdigest(), "summary": summary}


def sweep(specs: list[RunSpec], backend: Backend, workers: int,
          progress: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:  # fmt: skip
    """Every spec on ``backend`` (experiments/runner.py's; ``ray``: a local cluster), in the
    grid's order."""
    t0 = time.monotonic()
    where = runner.Backend(backend, workers, "local" if backend == "ray" else None)
    runs: list[dict[str, Any]] = [{} for _ in specs]
    for d in runner.execute(run_spec, [(s,) for s in specs], where):
        if d.error is not None:
            raise OctoricError(f"sweep run {specs[d.index].run}: {d.error}")
        runs[d.index] = d.value
        if progress:
            progress(d.value)
    return {"backend": backend, "workers": workers, "wall_seconds": time.monotonic() - t0,
            "runs": runs}  # fmt: skip


def compare(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """Where two sweeps differ (run by run); empty when identical."""
    out = []
    ra, rb = {r["run"]: r for r in a["runs"]}, {r["run"]: r for r in b["runs"]}
    for k in sorted(set(ra) | set(rb)):
        if k not in ra or k not in rb:
            out.append(f"run {k}: only in one sweep")
            continue
        x, y = ra[k], rb[k]
        spec = ("scenario", "scheme", "seed", "duration_s")
        if any(x[f] != y[f] for f in spec):
            out.append(f"run {k}: different specs")
        elif x["sha256"] != y["sha256"]:
            out.append(f"run {k} ({x['scenario']} {x['scheme']} seed {x['seed']}): results differ")
    return out
