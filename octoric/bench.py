"""Benchmark harness behind ``make bench`` / ``octoric bench``.

An area contributes benchmarks with a module ``octoric.<area>.bench`` (or
``octoric.xapps.<name>.bench``) defining ``BENCHMARKS: list[Benchmark]``. Each benchmark
measures our code *and its baseline in the same run* and returns ``BenchResult`` rows; the
report gives medians and our/baseline ratios, never figures from another run.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import platform
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BENCH_MODULES = [
    "octoric.rmr.bench",
    "octoric.e2sm.bench",
    "octoric.ric.bench",
    "octoric.sim.bench",
    "octoric.sim.realue_bench",
    "octoric.xapps.occ.bench",
    "octoric.xapps.octopus.bench",
    "octoric.experiments.bench",
    "octoric.experiments.loop_bench",
    "octoric.experiments.soak",
]

# Options of one benchmark from the command line (e.g. ``--minutes`` of the soak); set by
# ``main`` before any benchmark runs.
options: dict[str, Any] = {}


@dataclass
class BenchResult:
    """One measured figure. ``higher_is_better`` orients the ratio's reading."""

    name: str  # e.g. "rmr one-way throughput, 1 KB"
    value: float
    unit: str  # e.g. "msg/s", "us", "UE-samples/s"
    higher_is_better: bool = True
    baseline_name: str | None = None  # e.g. "asn1tools 0.169"; None when there is none
    baseline_value: float | None = None
    target: str | None = None  # e.g. ">= 100000 msg/s" (from the issue)
    target_met: bool | None = None
    samples: int = 1  # how many repetitions the median is over
    note: str = ""

    @property
    def ratio(self) -> float | None:
        if self.baseline_value in (None, 0) or self.value == 0:
            return None
        assert self.baseline_value is not None
        if self.higher_is_better:
            return self.value / self.baseline_value
        return self.baseline_value / self.value


@dataclass
class Benchmark:
    name: str
    area: str
    run: Callable[[bool], list[BenchResult]]  # run(quick) -> results
    description: str = ""
    skip_reason: Callable[[], str | None] = field(default=lambda: None)
    # runs only when named (``octoric bench soak``), never in ``make bench``'s all-of-them run
    explicit_only: bool = False


def median_of(fn: Callable[[], float], repeats: int) -> float:
    """Run ``fn`` ``repeats`` times and return the median of what it returns."""
    return statistics.median(fn() for _ in range(max(1, repeats)))


def discover() -> list[Benchmark]:
    found: list[Benchmark] = []
    for module in BENCH_MODULES:
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as e:
            if e.name is not None and module.startswith(e.name):
                continue  # that area has no benchmarks yet
            raise
        found.extend(getattr(mod, "BENCHMARKS", []))
    return found


def _cli_json(name: str, quick: bool) -> Any:
    """The figures of ``octoric bench NAME --json`` when NAME is one area whose bench module
    defines ``cli_json(quick)`` (e.g. occ: ``{"ue_samples_per_s": ...}``; loop: one row per
    configuration); None when it defines none."""
    for module in BENCH_MODULES:
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as e:
            if e.name is not None and module.startswith(e.name):
                continue
            raise
        fn = getattr(mod, "cli_json", None)
        if fn is not None and any(b.area == name for b in getattr(mod, "BENCHMARKS", [])):
            return fn(quick)
    return None


def _fmt(v: float | None) -> str:
    if v is None:
        return "—"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    if abs(v) >= 10:
        return f"{v:.1f}"
    return f"{v:.3g}"


def _sections(markdown: str) -> dict[str, str]:
    """The '## name' sections of an earlier report (header line included)."""
    out: dict[str, str] = {}
    parts = ("\n" + markdown).split("\n## ")[1:]
    for part in parts:
        title = part.split("\n", 1)[0].strip()
        out[title] = "## " + part.rstrip() + "\n"
    return out


def render_markdown(
    results: dict[str, list[BenchResult]],
    skipped: dict[str, str],
    kept: dict[str, str] | None = None,
) -> str:
    """The report. ``kept``: sections of an earlier report for benchmarks not run this time."""
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    lines = [
        "# Benchmarks",
        "",
        "Written by `make bench` (`octoric bench --write docs/benchmarks.md`); "
        "do not edit by hand.",
        "",
        "## Method",
        "",
        "- Every figure is a median over repeated runs on this machine "
        "(2 cores, no other load from the suite).",
        "- Where a baseline exists it is measured **in the same run** on the same input; "
        "the ratio reads as 'how many times better ours is' (>1 is better, whatever the unit).",
        "- Targets come from the issues; a missed target is reported, not hidden.",
        "",
        f"Last written: {stamp}, Python {platform.python_version()}, {platform.machine()}. "
        "Each section says when it was measured (`octoric bench NAME --write` re-measures one "
        "and keeps the others).",
        "",
    ]
    lines += list((kept or {}).values())
    for bench_name, rows in results.items():
        lines += [f"## {bench_name}", "", f"_Measured {stamp}._", ""]
        lines += [
            "| figure | ours | unit | baseline | baseline value | ratio | target | met | n |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for r in rows:
            met = "—" if r.target_met is None else ("yes" if r.target_met else "**no**")
            lines.append(
                f"| {r.name} | {_fmt(r.value)} | {r.unit} | {r.baseline_name or '—'} | "
                f"{_fmt(r.baseline_value)} | {_fmt(r.ratio)} | {r.target or '—'} | {met} | "
                f"{r.samples} |"
            )
        notes = [f"- {r.name}: {r.note}" for r in rows if r.note]
        if notes:
            lines += ["", *notes]
        lines.append("")
    if skipped:
        lines += ["## Skipped", ""]
        lines += [f"- {n}: {why}" for n, why in skipped.items()]
        lines.append("")
    if not results and not skipped:
        lines += ["No benchmarks are registered yet.", ""]
    return "\n".join(lines)


def main(
    names: Sequence[str] = (),
    write: str | None = None,
    quick: bool = False,
    as_json: bool = False,
    minutes: float | None = None,
) -> int:
    if minutes is not None:
        if minutes <= 0:
            print("octoric bench: --minutes must be > 0", file=sys.stderr)
            return 2
        options["minutes"] = minutes
    if write:
        options["write"] = write  # where a benchmark may put its plots beside the report
    if as_json and len(names) == 1 and not write:
        figures = _cli_json(names[0], quick)
        if figures is not None:
            print(json.dumps(figures))
            return 0
    benches = discover()
    if names:
        benches = [b for b in benches if b.name in names or b.area in names]
        if not benches:
            print(f"octoric bench: no benchmark matches {list(names)}", file=sys.stderr)
            return 2
    else:
        benches = [b for b in benches if not b.explicit_only]
    results: dict[str, list[BenchResult]] = {}
    skipped: dict[str, str] = {}
    for b in benches:
        why = b.skip_reason()
        if why:
            skipped[b.name] = why
            print(f"[bench] {b.name}: skipped ({why})", file=sys.stderr)
            continue
        print(f"[bench] {b.name} ...", file=sys.stderr, flush=True)
        t0 = time.monotonic()
        results[b.name] = b.run(quick)
        print(f"[bench] {b.name} done in {time.monotonic() - t0:.1f} s", file=sys.stderr)
    kept: dict[str, str] = {}
    if write and names and Path(write).exists():
        kept = {
            t: text
            for t, text in _sections(Path(write).read_text()).items()
            if t not in results and t not in skipped and t not in ("Method", "Skipped")
        }
    report = render_markdown(results, skipped, kept)
    if write:
        Path(write).parent.mkdir(parents=True, exist_ok=True)
        Path(write).write_text(report)
        print(f"[bench] wrote {write}", file=sys.stderr)
    if as_json:
        out = {
            n: [dataclasses.asdict(r) | {"ratio": r.ratio} for r in rows]
            for n, rows in results.items()
        }
        print(json.dumps({"results": out, "skipped": skipped}, indent=2))
    elif not write:
        print(report)
    return 0
