"""One shape for every paper reproduction (issue #40): an ``Experiment`` lists its **cases**
(one simulator run each), **runs** one case, gathers the runs into its **results** (the JSON
document of ``results.json``), judges its **claims** on them, writes its **report** (Markdown)
and its **plots** (PNGs). ``EXPERIMENTS`` is the registry ``octoric eval NAME`` is built from,
one subcommand per entry with the same options; ``octoric eval report DIR`` rebuilds a report
from ``results.json`` alone, since the report and the claims depend on nothing else.

A new paper is one module with an ``Experiment`` subclass and a ``register(...)`` call, plus
its import line in ``experiments/registry.py``.
"""

from __future__ import annotations

import json
import os
import sys
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from octoric.errors import OctoricError
from octoric.experiments.claims import ClaimResult

# ../shared beside the repository (docs/occ.md); the public Mahimahi traces otherwise
DEFAULT_TRACES = "../shared/traces/mahimahi"
RESULTS, REPORT = "results.json", "report.md"


def percentile(values: Sequence[float] | np.ndarray, q: float,
               digits: int | None = 3) -> float | None:  # fmt: skip
    """The ``q``-th percentile of ``values`` rounded to ``digits`` (None: not rounded), None
    when there are none: the one percentile helper of the harness (reports and benchmarks)."""
    if len(values) == 0:
        return None
    x = float(np.percentile(np.asarray(values, dtype=np.float64), q))
    return x if digits is None else round(x, digits)


@dataclass(frozen=True)
class RunOptions:
    """The options every ``octoric eval NAME`` takes, and the experiment's own (``extra``:
    its ``add_arguments`` options by name)."""

    out: Path
    quick: bool = False
    seeds: int | None = None  # None: the experiment's default (1 with --quick)
    traces: str | None = None  # None: $OCTORIC_TRACES, else ../shared/traces/mahimahi
    plots: bool = True
    extra: dict[str, Any] = field(default_factory=dict)

    def seeds_or(self, default: int) -> int:
        """``--seeds``, else 1 for a quick run, else the experiment's ``default``."""
        if self.seeds is not None:
            return self.seeds
        return 1 if self.quick else default

    @property
    def traces_path(self) -> Path:
        """The trace folder, unchecked (an experiment that needs it says what is missing)."""
        return Path(self.traces or os.environ.get("OCTORIC_TRACES") or DEFAULT_TRACES)


@dataclass(frozen=True)
class Case:
    """One simulator run of an experiment: ``part`` names the table it lands in, ``row`` the
    trace, profile or mobility, then the scheme and the seed; ``label`` is its progress line."""

    part: str
    row: str
    scheme: str
    seed: int
    label: str = ""

    @property
    def what(self) -> str:
        return self.label or f"{self.row} {self.scheme} seed {self.seed}"


def grid(part: str, rows: Sequence[str], schemes: Sequence[str], seeds: Sequence[int],
         prefix: str = "") -> list[Case]:  # fmt: skip
    """Every row x scheme x seed, in that order (the order the reports were always run in)."""
    return [Case(part, r, s, seed, f"{prefix}{r} {s} seed {seed}")
            for r in rows for s in schemes for seed in seeds]  # fmt: skip


def nest(cases: Sequence[Case], outputs: Sequence[Any], part: str) -> dict[str, Any]:
    """The outputs of ``part``'s cases as ``runs[row][scheme][i]``, seeds in order."""
    out: dict[str, dict[str, list[Any]]] = {}
    for c, o in zip(cases, outputs, strict=True):
        if c.part == part:
            out.setdefault(c.row, {}).setdefault(c.scheme, []).append(o)
    return out


class Experiment(ABC):
    """A paper's reproduction (see the module docstring). Subclasses set the class
    attributes and implement the five steps; ``plot_names`` are the PNGs the report links."""

    name: ClassVar[str]
    help: ClassVar[str]
    quick_help: ClassVar[str]  # what --quick runs
    traces_help: ClassVar[str] = "Mahimahi traces (*.down)"  # what --traces is for here

    # optional hooks: most experiments have no options of their own or nothing to check
    def add_arguments(self, p: Any) -> None:  # noqa: B027
        """This experiment's own options, beyond the common ones."""

    def check(self, opts: RunOptions) -> None:  # noqa: B027
        """Refuse bad options before anything runs (raise ``OctoricError``)."""

    @abstractmethod
    def cases(self, opts: RunOptions) -> list[Case]: ...

    @abstractmethod
    def run_case(self, case: Case, opts: RunOptions) -> Any: ...

    @abstractmethod
    def results(self, opts: RunOptions, cases: list[Case], outputs: list[Any]) -> dict[str, Any]:
        """The runs as the JSON document the claims and the report are made from."""

    @abstractmethod
    def claims(self, results: dict[str, Any]) -> list[ClaimResult]: ...

    @abstractmethod
    def report(self, results: dict[str, Any]) -> str:
        """The Markdown report (linking ``plot_names``)."""

    def plot_names(self, results: dict[str, Any]) -> list[str]:
        return [f"eval-{self.name}.png"]

    def plots(self, results: dict[str, Any], outputs: list[Any], folder: Path,
              opts: RunOptions) -> list[Path]:  # fmt: skip
        """Draw the PNGs into ``folder`` (``outputs``: the runs in memory, for plots that need
        more than ``results`` keeps); by default the one PNG ``draw`` makes from ``results``."""
        png = folder / self.plot_names(results)[0]
        self.draw(results, png)
        return [png]

    def draw(self, results: dict[str, Any], png: Path) -> None:
        raise NotImplementedError(f"{self.name}: give draw() or override plots()")

    def document(self, results: dict[str, Any]) -> dict[str, Any]:
        """``results.json``: the results, the experiment's name and the claims judged on them
        (stored for readers; ``report`` judges them again)."""
        claims = [c.to_json() for c in self.claims(results)]
        return {"experiment": self.name, "claims": claims, **_without_claims(results)}


def _without_claims(results: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in results.items() if k not in ("claims", "experiment")}


EXPERIMENTS: dict[str, Experiment] = {}


def register(exp: Experiment) -> Experiment:
    if exp.name in EXPERIMENTS or exp.name == "report":
        raise ValueError(f"experiment {exp.name!r} registered twice (or reserved)")
    EXPERIMENTS[exp.name] = exp
    return exp


def counter(n: int) -> Callable[[str], None]:
    """A progress line per run on stderr: ``[eval] k/n what``."""
    done = [0]

    def progress(what: str) -> None:
        done[0] += 1
        print(f"[eval] {done[0]}/{n} {what}", file=sys.stderr, flush=True)

    return progress


def validate(exp: Experiment, opts: RunOptions) -> None:
    """Refuse bad options before anything runs."""
    if opts.seeds is not None and opts.seeds < 1:
        raise OctoricError("--seeds must be >= 1")
    exp.check(opts)


def run(exp: Experiment, opts: RunOptions) -> dict[str, Any]:
    """Every case, then ``--out DIR``'s report.md, results.json and PNGs; the document."""
    validate(exp, opts)
    cases = exp.cases(opts)
    progress = counter(len(cases))
    outputs = []
    for c in cases:
        progress(c.what)
        outputs.append(exp.run_case(c, opts))
    doc = exp.document(exp.results(opts, cases, outputs))
    opts.out.mkdir(parents=True, exist_ok=True)
    write_json(opts.out / RESULTS, doc)
    pngs = exp.plots(doc, outputs, opts.out, opts) if opts.plots else []
    write_report(exp, doc, opts.out / REPORT)
    written = ", ".join(str(p) for p in [opts.out / REPORT, opts.out / RESULTS, *pngs])
    print(f"[eval] wrote {written}", file=sys.stderr)
    return doc


def write_json(path: Path, doc: dict[str, Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(doc, indent=2, default=str) + "\n")
    tmp.replace(path)


def write_report(exp: Experiment, doc: dict[str, Any], out: Path) -> None:
    text = exp.report(doc)
    out.write_text(text)
    print(text)


def load(path: Path) -> tuple[Experiment, dict[str, Any]]:
    """A stored run (a ``--out`` folder, or its results JSON) and the experiment it is of."""
    file = path / RESULTS if path.is_dir() else path
    try:
        doc: dict[str, Any] = json.loads(file.read_text())
    except (OSError, ValueError) as e:
        raise OctoricError(f"{file}: {e}") from e
    name = doc.get("experiment")
    if name not in EXPERIMENTS:
        raise OctoricError(f"{file}: no known experiment named in it ({name!r}; known: "
                           f"{', '.join(EXPERIMENTS)})")  # fmt: skip
    return EXPERIMENTS[name], doc


def rebuild(path: Path, out: Path | None = None) -> Path:
    """``octoric eval report``: the report again from the stored results, no simulation (the
    claims judged again, e.g. after a change of the verdict rule; the PNGs stay as they are)."""
    exp, doc = load(path)
    if out is None:
        out = path / REPORT if path.is_dir() else path.with_suffix(".md")
    write_report(exp, doc, out)
    print(f"[eval] wrote {out}", file=sys.stderr)
    return out
