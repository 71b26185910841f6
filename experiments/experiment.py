"""One shape for every paper reproduction (issue #40): an ``Experiment`` lists its **cases**
(one simulator run each), **runs** one case, gathers the runs into its **results** (the JSON
document of ``results.json``), judges its **claims** on them, writes its **report** (Markdown)
and its **plots** (PNGs). ``EXPERIMENTS`` is the registry ``octoric eval NAME`` is built from,
one subcommand per entry with the same options; ``octoric eval report DIR`` rebuilds a report
from the stored runs alone, since the report and the claims depend on nothing else. Where the
runs execute (one process, a process pool, Ray) is experiments/runner.py's: a run depends on
its case and ``run_options`` only.

A new paper is one module with an ``Experiment`` subclass and a ``register(...)`` call, plus
its import line in ``experiments/registry.py``.
"""

from __future__ import annotations

import json
import os
from abc import ABC, abstractmethod
from collections.abc import Sequence
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
    trace, profile or mobility, then the scheme and the seed; ``label`` is its progress line;
    ``alone``: the run needs the machine to itself (a live RIC, a browser: its timing would
    suffer beside other runs), so it never runs in parallel with another."""

    part: str
    row: str
    scheme: str
    seed: int
    label: str = ""
    alone: bool = False

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
    alone: ClassVar[bool] = False  # every run needs the machine to itself (see Case.alone)

    # optional hooks: most experiments have no options of their own or nothing to check
    def add_arguments(self, p: Any) -> None:  # noqa: B027
        """This experiment's own options, beyond the common ones."""

    def check(self, opts: RunOptions) -> None:  # noqa: B027
        """Refuse bad options before anything runs (raise ``OctoricError``)."""

    @abstractmethod
    def cases(self, opts: RunOptions) -> list[Case]: ...

    @abstractmethod
    def run_case(self, case: Case, opts: RunOptions) -> Any:
        """One run's output, a function of ``case`` and ``run_options(opts)`` alone (no
        module state, no unseeded randomness): it may run in another process or on another
        machine, and a re-run reuses it. The instance is pickled to the workers."""

    def run_options(self, opts: RunOptions) -> dict[str, Any]:
        """The options a run's output depends on (its key in runs.jsonl, so a changed one is
        not served a stale run): by default --quick, the trace folder and the experiment's own
        options; not --seeds (each case has its seed), --out or --no-plots."""
        return {"quick": opts.quick, "traces": str(opts.traces_path.resolve()),
                "extra": opts.extra}  # fmt: skip

    def encode(self, output: Any) -> Any:
        """``run_case``'s output as JSON (a run's record in runs.jsonl); outputs that are
        JSON already (numbers, dicts, lists) stay as they are."""
        return output

    def decode(self, case: Case, data: Any) -> Any:
        """``encode``'s inverse: what ``results`` and ``plots`` read."""
        return data

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


def validate(exp: Experiment, opts: RunOptions) -> None:
    """Refuse bad options before anything runs."""
    if opts.seeds is not None and opts.seeds < 1:
        raise OctoricError("--seeds must be >= 1")
    exp.check(opts)


def write_json(path: Path, doc: dict[str, Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(doc, indent=2, default=str) + "\n")
    tmp.replace(path)


def write_report(exp: Experiment, doc: dict[str, Any], out: Path) -> None:
    text = exp.report(doc)
    if doc.get("runner"):  # results stored before #45 say nothing of where they ran
        text = text.rstrip("\n") + f"\n\n{runner_line(doc['runner'])}\n"
    out.write_text(text)
    print(text)


def runner_line(runner: dict[str, Any]) -> str:
    """The report's last line: where its runs ran (experiments/runner.py's ``Backend``)."""
    kind, n, address = runner["backend"], runner["workers"], runner.get("address")
    where = {"serial": "in one process, one run at a time",
             "pool": f"on a local process pool of {n} worker{'s' if n != 1 else ''}",
             "ray": f"on {'a local Ray cluster' if address == 'local' else f'Ray at {address}'} "
                    f"with {n} CPUs"}[kind]  # fmt: skip
    resumed = f", {runner['resumed']} of them by an earlier command" if runner["resumed"] else ""
    return f"Ran by `octoric eval` {where}: {runner['runs']} runs{resumed}."


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
