"""The runs of an ``octoric eval`` report: every row (a trace, a mobility profile) x scheme x
seed, run in order, with a progress line each."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

Runs = dict[str, dict[str, list[dict[str, Any]]]]


def run_grid(rows: Iterable[str], schemes: Iterable[str], seeds: int,
             run: Callable[[str, str, int], dict[str, Any]],
             progress: Callable[[str], None] | None = None, label: str = "") -> Runs:  # fmt: skip
    """``run(row, scheme, seed)`` for seeds 1..``seeds``: results as runs[row][scheme][i]."""
    out: Runs = {}
    schemes = list(schemes)
    for row in rows:
        out[row] = {}
        for s in schemes:
            out[row][s] = []
            for seed in range(1, seeds + 1):
                if progress:
                    progress(f"{label}{row} {s} seed {seed}")
                out[row][s].append(run(row, s, seed))
    return out
