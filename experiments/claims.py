"""A paper's claim against the simulator's measurement: the one verdict rule of every
``octoric eval`` report (issue #46; it replaces issue #20's "direction on every seed and half
the paper's effect", which had no upper bound).

What a paper states (``Paper``) is a ratio ours / baseline (unit ``x``) or a difference ours -
baseline (any other unit: dB, ms), as a range ``lo``-``hi`` or a point (``lo == hi``). Its
*effect* is how far it is from no change, on the claim's side:

- a ratio above 1 ("1.2-3.5x the bitrate"): effect = ratio - 1;
- a ratio below 1, lower is better ("0.1-0.5x the latency", i.e. 2-10x lower): the claim is
  read as the factor baseline / ours, effect = 1 / ratio - 1, so that "4.9x lower" and "4.9x
  higher" weigh the same and a ratio near 0 is not capped;
- a difference: effect = |difference| on the claim's side (+1.5 dB: 1.5; -100 ms: 100).

"Widened by 30 % at each end": the paper's effects [e_lo, e_hi] become [0.7 e_lo, 1.3 e_hi],
mapped back to the measured unit (the *accepted range*). A point is the range [e, e], so it is
±30 % of the paper's effect: 2.41x accepts 1.99-2.83x, +1.5 dB accepts +1.05..+1.95 dB,
0.25x (4x lower) accepts 0.204-0.323x. (±30 % of a raw ratio would accept the opposite side of 1
for any ratio under 1.43x.) Examples: 1.2-3.5x accepts 1.14-4.25x; 0.32-0.87x accepts
0.266-0.906x; 0.1-0.5x accepts 0.079-0.588x.

The verdict, from the runs (one value per run; a run is a case x seed) and the seeds:

- the measured mean is the mean over seeds of each seed's mean over its runs (cases), and its
  95 % interval is Student's t over those per-seed means (``t95``: scipy if installed, else
  the table below); one seed has no interval;
- "does not hold" when any run is on the wrong side of no change (of the floor, for ``at
  least``), or the mean falls short of the accepted range, or the interval reaches outside it
  (one seed: no interval, so never "holds");
- "exceeds the paper" when every run is on the paper's side and the mean is beyond the accepted
  range's far end: an effect stronger than the paper's, a prompt to check the baseline; it is
  never counted as a hold;
- "holds" when every run is on the paper's side and the mean and its interval lie in the
  accepted range.

Two other kinds: ``direction`` (the paper names a side, no figure: the accepted range is that
whole side; no "exceeds") and ``at least`` (a floor on a ratio, "only 4 % lower": the shortfall
widened by 30 %, 0.96x -> 0.948x; every run at or above it; no "exceeds", since doing better is
within the words). A joint claim ("lower latency *and* higher bitrate", ``judge_joint``) is
judged per run: a run is in direction only when every part is; it holds when every run is and
every part holds, exceeds when a part exceeds and none fails, else does not hold.

Infinite values (a side that never converged within the run) count for the direction but not
for the mean or the interval; NaN (a run without the metric) is left out.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

WIDEN = 0.30
HOLDS, EXCEEDS, FAILS = "holds", "exceeds the paper", "does not hold"
VERDICTS = (HOLDS, EXCEEDS, FAILS)
BEYOND = "the mean effect is beyond the paper's range widened by 30 %: check the baseline"

# Student's t, two-sided 95 % (0.975 quantile), by degrees of freedom; between rows the smaller
# df's (larger, so conservative) value is used
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
       9: 2.262, 10: 2.228, 11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131, 16: 2.120,
       17: 2.110, 18: 2.101, 19: 2.093, 20: 2.086, 21: 2.080, 22: 2.074, 23: 2.069, 24: 2.064,
       25: 2.060, 26: 2.056, 27: 2.052, 28: 2.048, 29: 2.045, 30: 2.042, 40: 2.021, 60: 2.000,
       120: 1.980}  # fmt: skip

RULE_MD = (
    'Verdict rule (experiments/README.md, "Verdicts"): the paper\'s effect (ratio - 1; for a '
    "lower-is-better ratio, 1/ratio - 1; a difference's size) widened by 30 % at each end is "
    "the accepted range; a claim holds when every run is on the paper's side and the mean and "
    "its 95 % interval over seeds (Student's t) lie in that range; a mean beyond its far end "
    'is "exceeds the paper" (check the baseline), never a hold; one seed gives no interval.'
)


def t95(df: int) -> float:
    """The 0.975 quantile of Student's t with ``df`` degrees of freedom."""
    try:
        from scipy.stats import t  # type: ignore[import-not-found, import-untyped, unused-ignore]

        return float(t.ppf(0.975, df))
    except ImportError:
        pass
    if df > 120:
        return 1.960
    return T95[max(k for k in T95 if k <= df)]


@dataclass(frozen=True)
class Paper:
    """What the paper states, in the report's measured unit. ``ref``: its words and where
    (figure, table, section and the line of shared/papers/*.txt)."""

    lo: float
    hi: float
    ref: str
    unit: str = "x"  # "x": a ratio ours / baseline; else a difference ours - baseline
    kind: str = "effect"  # "effect" (range or point), "direction", "at least"

    def __post_init__(self) -> None:
        n = self.neutral
        if self.lo > self.hi:
            raise ValueError(f"{self.ref}: lo {self.lo} > hi {self.hi}")
        if self.kind == "at least":
            if self.unit != "x" or not 0 < self.lo < 1:
                raise ValueError(f"{self.ref}: an 'at least' claim is a ratio floor below 1")
        elif self.kind in ("effect", "direction"):
            if not (self.lo > n or self.hi < n):
                raise ValueError(f"{self.ref}: the range {self.lo}-{self.hi} straddles {n}")
        else:
            raise ValueError(f"{self.ref}: unknown kind {self.kind!r}")

    @property
    def neutral(self) -> float:
        return 1.0 if self.unit == "x" else 0.0

    @property
    def up(self) -> bool:
        """The claim's side: above no change (or at least a floor)."""
        return self.kind == "at least" or self.lo > self.neutral

    def effect(self, x: float) -> float:
        if self.unit != "x":
            return x if self.up else -x
        if self.up:
            return x - 1
        return 1 / x - 1 if x > 0 else math.inf

    def from_effect(self, e: float) -> float:
        if self.unit != "x":
            return e if self.up else -e
        return 1 + e if self.up else 1 / (1 + e)

    def accepted(self) -> tuple[float, float]:
        """The range a measured mean and its interval must lie in, in the measured unit."""
        n = self.neutral
        if self.kind == "direction":
            return (n, math.inf) if self.up else ((0.0 if self.unit == "x" else -math.inf), n)
        if self.kind == "at least":
            return (1 - (1 + WIDEN) * (1 - self.lo), math.inf)
        e1, e2 = sorted((self.effect(self.lo), self.effect(self.hi)))
        a, b = self.from_effect((1 - WIDEN) * e1), self.from_effect((1 + WIDEN) * e2)
        return (min(a, b), max(a, b))

    def in_direction(self, x: float) -> bool:
        if self.kind == "at least":
            return x >= self.accepted()[0]
        return x > self.neutral if self.up else x < self.neutral


def ratio(lo: float, hi: float | None = None, ref: str = "", kind: str = "effect") -> Paper:
    """A ratio claim, ours / baseline: a range ``lo``-``hi`` or a point ``lo``."""
    return Paper(lo, lo if hi is None else hi, ref, "x", kind)


def diff(lo: float, hi: float | None, unit: str, ref: str) -> Paper:
    """A difference claim, ours - baseline, in ``unit``."""
    return Paper(lo, lo if hi is None else hi, ref, unit)


# a run's value, tagged with its seed: the interval is over seeds, the direction over runs
Runs = Sequence[tuple[int, float]]


@dataclass(frozen=True)
class ClaimResult:
    claim: str
    paper: str  # the paper's figure and where
    unit: str
    kind: str  # "effect", "direction", "at least", "joint"
    accepted: tuple[float, float] | None  # the paper's range widened by 30 % (measured unit)
    mean: float | None  # over seeds (None: no finite value)
    ci95: tuple[float, float] | None  # Student's t over seeds (None: fewer than 2 seeds)
    seeds: int
    runs: int
    runs_in_direction: int
    verdict: str
    reason: str = ""  # why, when it does not hold or exceeds
    counted: bool = True  # False: an ablation or extra baseline outside the claims count
    note: str = ""
    values: tuple[float, ...] = ()  # every run's value, in order
    parts: tuple[ClaimResult, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["parts"] = [p.to_json() for p in self.parts]
        finite = [x for x in self.values if math.isfinite(x)]
        # the previous rule's keys, kept for readers of older JSON
        d["measured_mean"] = None if self.mean is None else round(self.mean, 4)
        d["measured_min"] = round(min(finite), 4) if finite else None
        d["measured_max"] = round(max(finite), 4) if finite else None
        return d


def _per_seed(runs: Runs) -> list[float]:
    by: dict[int, list[float]] = {}
    for seed, x in runs:
        if math.isfinite(x):
            by.setdefault(seed, []).append(x)
    return [statistics.fmean(v) for _, v in sorted(by.items())]


def interval(per_seed: Sequence[float]) -> tuple[float, float] | None:
    """The 95 % interval of the mean of ``per_seed`` (Student's t); None below 2 values."""
    n = len(per_seed)
    if n < 2:
        return None
    m = statistics.fmean(per_seed)
    h = t95(n - 1) * statistics.stdev(per_seed) / math.sqrt(n)
    return (m - h, m + h)


def judge(claim: str, paper: Paper, runs: Runs, counted: bool = True,
          note: str = "") -> ClaimResult:  # fmt: skip
    """The verdict of one claim on its runs (``(seed, value)`` per run; see the docstring)."""
    runs = [(s, x) for s, x in runs if not math.isnan(x)]
    per_seed = _per_seed(runs)
    mean = statistics.fmean(per_seed) if per_seed else None
    ci = interval(per_seed)
    lo, hi = paper.accepted()
    in_dir = sum(paper.in_direction(x) for _, x in runs)
    verdict, reason = _verdict(paper, len(runs), in_dir, mean, ci, (lo, hi))
    return ClaimResult(claim, paper.ref, paper.unit, paper.kind, (lo, hi), mean, ci,
                       len(per_seed), len(runs), in_dir, verdict, reason, counted, note,
                       tuple(x for _, x in runs))  # fmt: skip


def _verdict(
    p: Paper,
    n: int,
    in_dir: int,
    mean: float | None,
    ci: tuple[float, float] | None,
    acc: tuple[float, float],
) -> tuple[str, str]:
    lo, hi = acc
    side = "below the floor" if p.kind == "at least" else "on the other side of no change"
    if n == 0:
        return FAILS, "no measurement"
    if in_dir < n:
        return FAILS, f"{n - in_dir} of {n} runs {side}"
    if mean is None:
        return FAILS, "no finite value (one side never converged in any run)"
    # the far end is where the effect is stronger than the paper's
    beyond = mean > hi if p.up else mean < lo
    short = mean < lo if p.up else mean > hi
    if beyond and p.kind == "effect":
        return EXCEEDS, BEYOND
    if short:
        return FAILS, "the mean effect is under the paper's range widened by 30 %"
    if ci is None:
        return FAILS, "one seed: no 95 % interval"
    if ci[0] < lo or ci[1] > hi:
        return FAILS, "the 95 % interval reaches outside the paper's range widened by 30 %"
    return HOLDS, ""


def judge_joint(claim: str, parts: Sequence[tuple[str, Paper, Runs]], counted: bool = True,
                note: str = "") -> ClaimResult:  # fmt: skip
    """A claim of several parts over the same runs (each part's runs in the same order): a run
    counts only when every part is on the paper's side in it."""
    if not parts:
        raise ValueError(f"{claim}: a joint claim needs parts")
    n = len(parts[0][2])
    if any(len(r) != n for _, _, r in parts):
        raise ValueError(f"{claim}: the parts have different runs")
    # a run where any part has no value (NaN) is left out of every part
    keep = [i for i in range(n) if not any(math.isnan(r[i][1]) for _, _, r in parts)]
    parts = [(name, p, [r[i] for i in keep]) for name, p, r in parts]
    results = tuple(judge(name, p, r) for name, p, r in parts)
    n = len(keep)
    in_dir = sum(all(p.in_direction(r[i][1]) for _, p, r in parts) for i in range(n))
    failed = [r for r in results if r.verdict == FAILS]
    if n == 0:
        verdict, reason = FAILS, "no measurement"
    elif in_dir < n:
        verdict, reason = FAILS, f"{n - in_dir} of {n} runs with a part on the other side"
    elif failed:
        verdict, reason = FAILS, "; ".join(f"{r.claim}: {r.reason}" for r in failed)
    elif any(r.verdict == EXCEEDS for r in results):
        verdict = EXCEEDS
        reason = "; ".join(f"{r.claim}: {r.reason}" for r in results if r.verdict == EXCEEDS)
    else:
        verdict, reason = HOLDS, ""
    seeds = min(r.seeds for r in results)
    return ClaimResult(claim, " and ".join(r.paper for r in results), "", "joint", None, None,
                       None, seeds, n, in_dir, verdict, reason, counted, note, (),
                       results)  # fmt: skip


def tally(results: Iterable[ClaimResult]) -> dict[str, int]:
    """Counted claims by verdict (joint claims once, their parts not; extras not)."""
    out = dict.fromkeys(VERDICTS, 0)
    for r in results:
        if r.counted:
            out[r.verdict] += 1
    return out


def summary_line(results: Sequence[ClaimResult]) -> str:
    t = tally(results)
    n, extra = sum(t.values()), sum(not r.counted for r in results)
    more = f" ({extra} extra row{'s' * (extra != 1)}, not counted)" if extra else ""
    return (f"{n} claim{'s' * (n != 1)}: {t[HOLDS]} hold{'s' * (t[HOLDS] == 1)}, {t[EXCEEDS]} "
            f"exceed{'s' * (t[EXCEEDS] == 1)} the paper, {t[FAILS]} "
            f"do{'es' * (t[FAILS] == 1)} not hold{more}")  # fmt: skip


def num(x: float, unit: str = "x", sign: bool = False) -> str:
    """A measured value for a table: 3 significant figures, ``x`` after ratios."""
    if math.isinf(x):
        s = ("-" if x < 0 else "") + "∞"
    elif abs(x) >= 100:
        s = f"{x:{'+' if sign else ''}.0f}"
    elif abs(x) >= 10:
        s = f"{x:{'+' if sign else ''}.1f}"
    elif x == 0 or abs(x) >= 0.1:
        s = f"{x:{'+' if sign else ''}.2f}"
    else:
        s = f"{x:{'+' if sign else ''}.3g}"
    return s + ("x" if unit == "x" else f" {unit}")


def _cells(r: ClaimResult) -> tuple[str, str]:
    """The accepted range and the measured mean [95 % interval] of a row."""
    if r.kind == "joint":
        return "each part's", "see the parts"
    sign = r.unit != "x"
    assert r.accepted is not None
    lo, hi = r.accepted
    if r.kind == "direction":  # a side only: (n, inf) above, (0 or -inf, n) below
        acc = f"> {num(lo, r.unit, sign)}" if math.isinf(hi) else f"< {num(hi, r.unit, sign)}"
    elif r.kind == "at least":
        acc = f">= {num(lo, r.unit, sign)}"
    else:
        acc = f"{num(lo, r.unit, sign)} to {num(hi, r.unit, sign)}"
    if r.mean is None:
        return acc, "—"
    ci = ("no interval (1 seed)" if r.ci95 is None
          else f"[{num(r.ci95[0], r.unit, sign)}, {num(r.ci95[1], r.unit, sign)}]")  # fmt: skip
    inf = sum(math.isinf(x) for x in r.values)
    extra = f"; {inf} run(s) infinite" if inf else ""
    return acc, f"{num(r.mean, r.unit, sign)} {ci}{extra}"


def claims_table(results: Sequence[ClaimResult]) -> list[str]:
    """The Markdown claims table of a report, a joint claim's parts as rows below it, and the
    count of verdicts."""
    lines = ["| claim | paper | accepted (±30 % of the effect) | measured: mean [95 % interval] "
             "| runs in direction | verdict |", "|---|---|---|---|---|---|"]  # fmt: skip
    for r in results:
        lines.append(_row(r, r.claim))
        for p in r.parts:
            lines.append(_row(p, f"↳ {p.claim}", part=True))
    lines += ["", summary_line(results) + "."]
    return lines


def _row(r: ClaimResult, claim: str, part: bool = False) -> str:
    acc, measured = _cells(r)
    if r.note:
        measured += f"; {r.note}"
    verdict = f"**{r.verdict}**" if not part else f"part: {r.verdict}"
    if r.reason:
        verdict += f" ({r.reason})"
    if not r.counted:
        verdict += "; extra row, not counted"
    return (f"| {claim} | {r.paper} | {acc} | {measured} | {r.runs_in_direction} of {r.runs} "
            f"| {verdict} |")  # fmt: skip
