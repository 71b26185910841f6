"""A paper's claim against the simulator's measurement: one verdict rule for every report of
``octoric eval`` (issue #20)."""

from __future__ import annotations

import math
import statistics
from typing import Any


def claim_row(text: str, paper: str, ratios: list[float], expected: float,
              direction_only: bool = False) -> dict[str, Any]:  # fmt: skip
    """``ratios``: the measured ratio per seed (ours / the baseline, as the claim reads);
    ``expected``: the paper's. The direction holds when every seed's ratio is on the paper's
    side of 1; the claim holds when the mean effect |ratio - 1| is also at least half the
    paper's. Infinite ratios (a side that never converged) count for the direction only.
    ``direction_only``: the paper states a direction, no figure (``expected`` gives the side)."""
    return _row(text, paper, ratios, 1.0, expected, direction_only)


def diff_row(text: str, paper: str, diffs: list[float], expected: float,
             unit: str) -> dict[str, Any]:  # fmt: skip
    """A claim stated as a difference (ours - the baseline, e.g. "+1.5 dB PSNR", "-100 ms"):
    the same rule as ``claim_row`` on the difference's side of 0 and its size."""
    return {**_row(text, paper, diffs, 0.0, expected), "unit": unit}


def _row(text: str, paper: str, values: list[float], neutral: float, expected: float,
         direction_only: bool = False) -> dict[str, Any]:  # fmt: skip
    """The one verdict rule, around ``neutral`` (1 for ratios, 0 for differences); no
    measurement at all does not hold."""
    up = expected > neutral
    direction = bool(values) and all((x > neutral) if up else (x < neutral) for x in values)
    finite = [x for x in values if math.isfinite(x)]
    mean = statistics.fmean(finite) if finite else math.inf
    big_enough = direction_only or abs(mean - neutral) >= 0.5 * abs(expected - neutral)
    verdict = ("holds" if direction and big_enough
               else "direction holds, the effect is under half the paper's" if direction
               else "does not hold")  # fmt: skip
    return {
        "claim": text, "paper": paper,
        "measured_mean": round(mean, 3) if finite else None,
        "measured_min": round(min(finite), 3) if finite else None,
        "measured_max": round(max(finite), 3) if finite else None,
        "seeds": len(values), "verdict": verdict,
    }  # fmt: skip


def claims_table(rows: list[dict[str, Any]]) -> list[str]:
    """The Markdown claims table of a report: the paper's figure, the measured ratio's mean
    (min-max over runs) and the verdict, one row per ``claim_row``."""
    lines = ["| claim | paper | measured | verdict |", "|---|---|---|---|"]
    for c in rows:
        if "unit" in c:  # a difference (``diff_row``)
            m = (f"{c['measured_mean']:+g} {c['unit']} ({c['measured_min']:+g} to "
                 f"{c['measured_max']:+g})")  # fmt: skip
        else:
            m = f"{c['measured_mean']}x ({c['measured_min']}-{c['measured_max']})"
        lines.append(f"| {c['claim']} | {c['paper']} | {m} | {c['verdict']} |")
    return lines
