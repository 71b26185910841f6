"""``octoric eval dumbo``: the Dumbo thesis's convergence experiment (Rahmanian, MIT 2023,
§6.2.1) and its claims, measured in the simulator.

The link: 3 Mbit/s for 40 s, 500 kbit/s for 40 s, 3 Mbit/s again (160 s in the thesis, 120 s
here: one step down and one step up), a 50 ms RTT, no drops (a 4 MB queue). The sender: one
video flow from 0.5 Mbit/s whose encoder follows its target with a 2 s lag (the thesis's
Fig. 3-8 shows VP8 taking ~3 s). Schemes: RoCC and Copa with and without Dumbo's padding,
and GCC (libwebrtc's, with probing), each with its own paper's parameters.

Metrics. The convergence time after the step up is the thesis's (line 570): "the time it
takes to achieve 90% utilization of the max utilization it achieves after the transition for
the first time". Here, on the delivered rate in 250 ms bins: the end of the first bin after the
step up whose rate reaches 90 % of the highest bin rate the scheme reaches from the step up to
the run's end (40 s later); the claims use it. The peak is a bin's, not a smoothed rate's; it
is the link's 3 Mbit/s on every run here, and a 1 s mean's peak (2.99-3 Mbit/s) gave the same
convergence on all 25 runs (2026-11-29), so the choice moves no number. The definition reads a
standing queue's drain (the link rate delivered while a queue built in the low phase empties)
as convergence, so the report gives each scheme's queue at the step up. GCC's model once held
seconds of queue there, and this report then measured 90 % of the link held for 2 s instead.
Now no run holds more than 72 ms of it at 0.5 Mbit/s (GCC 47 ms; 12 and 8 ms at 3 Mbit/s,
under a bin; 5 seeds, 2026-11-29) and GCC's first bins after the step are under 0.6 Mbit/s,
so the thesis's definition reads each scheme's own ramp. The former metric, 90 % of the link
(2.7 Mbit/s) in the bin and on average over the 2 s from it, stays in the scheme table as an
ablation, not in the claims. The steady-state utilization is the mean delivered rate over the
last 20 s of the high phase.
Every claim gets the thesis's figure (with its line in shared/papers), the measured mean and
its 95 % interval over the seeds, the runs in direction and a verdict (experiments/claims.py).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from octoric.errors import OctoricError
from octoric.experiments import dumbo_cellular as cell
from octoric.experiments.claims import RULE_MD, ClaimResult, Paper, claims_table, judge, ratio
from octoric.experiments.experiment import Case, Experiment, RunOptions, grid, nest, register
from octoric.sim.engine import Engine
from octoric.sim.scenario import ChannelSpec, FlowSpec, Scenario, UeSpec
from octoric.sim.summary import build_summary
from octoric.sim.video import VideoConfig, WiredPathConfig

SCHEMES = ("rocc", "rocc+dumbo", "copa", "copa+dumbo", "gcc")
HIGH_BPS, LOW_BPS, PHASE_S = 3e6, 0.5e6, 40.0
DURATION_S = 3 * PHASE_S
UP_AT_S = 2 * PHASE_S
BIN_MS = 250.0
ENCODER_LAG_MS = 2000.0
SEEDS = 5  # issue #46: at least 5 seeds wherever a paper's number is compared
SUSTAIN_S = 2.0  # the ablation: 90 % of the link held this long (see the docstring)
PEAK_SHARE = 0.9  # the thesis: 90 % of the max after the transition (line 570)


@dataclass
class Run:
    scheme: str
    seed: int
    convergence_s: float  # after the step up, the thesis's definition (``converged_s``)
    convergence_link_s: float  # the ablation (``held_link_s``); inf if never
    peak_after_up_bps: float  # the highest bin rate after the step up
    steady_bps: float  # the last 20 s of the high phase
    padding_share: float | None
    frame_latency_p95_ms: float | None
    latency_at_up_ms: float  # frames encoded in the 5 s before the step up: their median latency
    queue_at_up_bytes: int  # the bottleneck queue at the step up: its drain reads as convergence
    t_s: list[float] = field(default_factory=list)  # the delivered rate, per bin
    rate_bps: list[float] = field(default_factory=list)


def run_one(scheme: str, seed: int) -> Run:
    video = VideoConfig(lag_ms=ENCODER_LAG_MS)
    flow = FlowSpec(traffic="video", scheme=scheme, start_mbps=0.5, video=video,
                    path=WiredPathConfig(rtt_ms=50.0))  # fmt: skip
    ch = ChannelSpec("pulse", high_mbps=HIGH_BPS / 1e6, low_mbps=LOW_BPS / 1e6, switch_s=PHASE_S)
    ue = UeSpec(channel=ch, flows=[flow])
    eng = Engine(Scenario(name="dumbo-eval", duration_s=DURATION_S, ues=[ue],
                          timeseries_ms=BIN_MS), seed)  # fmt: skip
    # in two legs, to read the queue at the step up (the same run as one ``eng.run()``)
    t0 = time.monotonic()
    eng.run_until(round(UP_AT_S * 1e6 / eng.slot_us))
    queue_at_up = eng.ues[0].queue.bytes
    eng.run_until(eng.end_slot)
    f = build_summary(eng, time.monotonic() - t0)["flows"][0]
    bins = np.asarray(eng._ts_bins)
    delivered = np.asarray([x[0] for x in eng.ts_ue_delivered], dtype=float)
    t, rate = bins[1:], np.diff(delivered) * 8 / np.diff(bins)  # t: each bin's end
    conv, peak = converged_s(t, rate)
    steady = float(rate[t > DURATION_S - 20.0].mean())
    assert eng.flows[0].sender is not None and eng.flows[0].receiver is not None
    enc = eng.flows[0].sender.frames.enc_us
    before = [(d - enc[fi]) / 1000 for fi, d in eng.flows[0].receiver.frame_decoded_at
              if UP_AT_S - 5 <= enc[fi] / 1e6 < UP_AT_S]  # fmt: skip
    at_up = float(np.median(before)) if before else float("inf")
    return Run(scheme, seed, conv, held_link_s(t, rate), peak, steady, f.get("padding_share"),
               f["frame_latency_ms"]["p95"], at_up, queue_at_up, t.tolist(),
               rate.tolist())  # fmt: skip


def converged_s(t: np.ndarray, rate: np.ndarray) -> tuple[float, float]:
    """The thesis's convergence after the step up and the peak it is measured against: the end
    of the first bin after ``UP_AT_S`` reaching ``PEAK_SHARE`` of the highest bin rate from
    there to the run's end (``t``: each bin's end). Never inf: the peak's own bin reaches it."""
    after = t > UP_AT_S
    peak = float(rate[after].max())
    first = int(np.argmax(rate[after] >= PEAK_SHARE * peak))
    return float(t[after][first] - UP_AT_S), peak


def held_link_s(t: np.ndarray, rate: np.ndarray) -> float:
    """The ablation (this report's metric before issue #46): the first bin after the step up
    whose rate and whose mean over the ``SUSTAIN_S`` from it reach 90 % of the link; inf if
    none."""
    # the bin's own rate and the mean ahead: a standing queue's drain lasts well under SUSTAIN_S
    k = round(SUSTAIN_S * 1000 / BIN_MS)
    held = np.convolve(rate, np.ones(k) / k, mode="full")[k - 1 : k - 1 + rate.size]
    ahead = np.concatenate([held[k - 1 :], np.zeros(k - 1)])  # mean of bins i..i+k-1
    ok = (rate >= 0.9 * HIGH_BPS) & (ahead >= 0.9 * HIGH_BPS)
    up = np.nonzero((t > UP_AT_S) & ok & (t <= DURATION_S - SUSTAIN_S))[0]
    return float(t[up[0]] - UP_AT_S) if up.size else float("inf")


@dataclass
class Claim:
    text: str
    paper: Paper  # a ratio > 1: the claim's direction
    ratio: Callable[[dict[str, list[Run]]], list[tuple[int, float]]]


def _ratios(a: str, b: str, key: str) -> Callable[[dict[str, list[Run]]], list[tuple[int, float]]]:
    """Per seed: how many times faster (convergence) or higher (utilization) a is than b."""

    def f(by: dict[str, list[Run]]) -> list[tuple[int, float]]:
        out = []
        for ra, rb in zip(by[a], by[b], strict=True):
            va, vb = getattr(ra, key), getattr(rb, key)
            if key == "convergence_s":
                out.append((ra.seed, vb / max(va, BIN_MS / 1000)))
            else:
                out.append((ra.seed, va / vb if vb > 0 else float("inf")))
        return out

    return f


# the thesis's figures (shared/papers/dumbo-thesis-2023-backlogged-video-cc.txt, §6.2.1)
CLAIMS = (
    Claim("RoCC+Dumbo converges faster than RoCC after the link steps up",
          ratio(21.1 / 0.7, ref="30x (0.7 s vs 21.1 s; Fig. 6-3, lines 574-576)"),
          _ratios("rocc+dumbo", "rocc", "convergence_s")),
    Claim("RoCC+Dumbo's steady-state utilization is higher than RoCC's",
          ratio(2.0, ref="2x (3 vs 1.5 Mbit/s; Fig. 6-3, lines 574-576)"),
          _ratios("rocc+dumbo", "rocc", "steady_bps")),
    Claim("Copa+Dumbo converges faster than Copa after the link steps up",
          ratio(2.8 / 0.25, ref="11x (0.25 s vs 2.8 s; Fig. 6-6, lines 578-580)"),
          _ratios("copa+dumbo", "copa", "convergence_s")),
    Claim("RoCC+Dumbo converges faster than GCC after the link steps up",
          ratio(16.6 / 0.7, ref="24x (0.7 s, line 574, vs GCC's 16.6 s, Fig. 6-9, line 600)"),
          _ratios("rocc+dumbo", "gcc", "convergence_s")),
    Claim("RoCC+Dumbo's steady-state utilization is higher than GCC's",
          ratio(3 / 2.8, ref="1.07x (3 Mbit/s, line 574, vs GCC's 2.8, line 600)"),
          _ratios("rocc+dumbo", "gcc", "steady_bps")),
)  # fmt: skip


def by_scheme(runs: list[Run]) -> dict[str, list[Run]]:
    out: dict[str, list[Run]] = {s: [] for s in SCHEMES}
    for r in runs:
        out[r.scheme].append(r)
    return out


def claims(runs: list[Run]) -> list[ClaimResult]:
    by = by_scheme(runs)
    return [judge(c.text, c.paper, c.ratio(by)) for c in CLAIMS]


def claims_json(runs: list[Run]) -> list[dict[str, Any]]:
    return [c.to_json() for c in claims(runs)]


def runs_json(runs: list[Run]) -> list[dict[str, Any]]:
    """Every run without its time series: enough to re-render the claims (``from_json``)."""
    return [{k: v for k, v in asdict(r).items() if k not in ("t_s", "rate_bps")} for r in runs]


def from_json(rows: list[dict[str, Any]]) -> list[Run]:
    inf = ("convergence_s", "convergence_link_s")  # JSON's Infinity back to a float
    return [Run(**{**r, **{k: float(r[k]) for k in inf}}) for r in rows]


# the thesis's convergence after the step up, per scheme (lines 574, 578, 600)
THESIS_CONVERGENCE_S = {"rocc": 21.1, "rocc+dumbo": 0.7, "copa": 2.8, "copa+dumbo": 0.25,
                        "gcc": 16.6}  # fmt: skip


def _mean_range(xs: list[float]) -> str:
    """Over the seeds: the mean (min-max); the runs that never converged named apart."""
    ok = [x for x in xs if np.isfinite(x)]
    never = len(xs) - len(ok)
    text = (f"{statistics.fmean(ok):.2f} ({min(ok):.2f}-{max(ok):.2f})" if len(ok) > 1
            else f"{ok[0]:.2f}" if ok else "never")  # fmt: skip
    return f"{text if ok else '—'} ({never} of {len(xs)} never within the run)" if never else text


def queue_ms(r: Run) -> float:
    """The queue at the step up as time at the low phase's link rate (how it built up)."""
    return r.queue_at_up_bytes * 8 / LOW_BPS * 1000


def scheme_table(runs: list[Run]) -> list[dict[str, Any]]:
    rows = []
    for s, rs in by_scheme(runs).items():
        rows.append({
            "scheme": s,
            "convergence_s": _mean_range([r.convergence_s for r in rs]),
            "thesis_convergence_s": THESIS_CONVERGENCE_S[s],
            "peak_after_up_mbps": round(statistics.fmean(r.peak_after_up_bps for r in rs) / 1e6, 2),
            "convergence_link_held_s": _mean_range([r.convergence_link_s for r in rs]),
            "steady_mbps": round(statistics.fmean(r.steady_bps for r in rs) / 1e6, 2),
            "padding_share": (round(statistics.fmean(r.padding_share or 0.0 for r in rs), 3)
                              if any(r.padding_share is not None for r in rs) else None),
            "frame_latency_p95_ms": round(statistics.fmean(
                r.frame_latency_p95_ms or 0.0 for r in rs), 1),
            "latency_at_step_up_ms": round(statistics.fmean(r.latency_at_up_ms for r in rs), 1),
            "queue_at_step_up_ms": f"{statistics.fmean(queue_ms(r) for r in rs):.0f} "
                                   f"({max(queue_ms(r) for r in rs):.0f})",
        })  # fmt: skip
    return rows


def drain_note(runs: list[Run]) -> str:
    """What the queue at the step up means for the thesis's definition, from the runs."""
    top = max(runs, key=lambda r: r.queue_at_up_bytes)
    drain_s = top.queue_at_up_bytes * 8 / HIGH_BPS
    head = (
        f"The largest queue at the step up ({top.scheme}, seed {top.seed}) holds "
        f"{queue_ms(top):.0f} ms at 0.5 Mbit/s, {drain_s * 1000:.0f} ms at 3 Mbit/s"
    )
    if drain_s < BIN_MS / 1000:
        return (
            head + ": less than a bin, so no convergence here is a standing queue's drain "
            "read as the scheme's rate."
        )
    slow = sorted({r.scheme for r in runs if r.queue_at_up_bytes * 8 / HIGH_BPS >= BIN_MS / 1000})
    return (
        head + f": {', '.join(f'`{x}`' for x in slow)} can deliver the link rate for a bin "
        "or more from their queue alone, which the thesis's definition reads as convergence "
        "(compare the ablation column)."
    )


def markdown(runs: list[Run], seeds: int, plot: str | None,
             cellular: bool = False) -> str:  # fmt: skip
    lines = [
        "# Dumbo thesis (MIT 2023) §6.2.1: convergence on a pulse link"
        + (", and §6.2 against GCC on cellular traces" if cellular else "")
        + ", in the simulator",
        "",
        "Written by `octoric eval dumbo` (experiments/dumbo_eval.py, whose docstring gives the "
        f"setup). {seeds} seed(s); measured: the per-seed ratio; a seed where one side never "
        "converged counts as infinitely slow for it (the direction only). " + RULE_MD,
        "",
        "Convergence after the step up is the thesis's (line 570): the time until the delivered "
        "rate first reaches 90 % of the highest rate the scheme reaches after the step up "
        f"(here {BIN_MS:.0f} ms bins, the time at the bin's end; the claims use it).",
        "",
        *claims_table(claims(runs)),
    ]
    lines += ["", "| scheme | convergence after the step up (s): mean (min-max) | the thesis's (s) "
              "| peak after the step up (Mbit/s) | ablation, not in the claims: 90 % of the link "
              f"held {SUSTAIN_S:.0f} s (s) | steady state (Mbit/s) | padding share | frame latency "
              "p95 (ms) | frame latency before the step up (ms) | queue at the step up (ms at "
              "0.5 Mbit/s): mean (max) |",
              "|---|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for r in scheme_table(runs):
        lines.append(f"| `{r['scheme']}` | {r['convergence_s']} | {r['thesis_convergence_s']} | "
                     f"{r['peak_after_up_mbps']} | {r['convergence_link_held_s']} | "
                     f"{r['steady_mbps']} | "
                     f"{r['padding_share'] if r['padding_share'] is not None else '—'} | "
                     f"{r['frame_latency_p95_ms']} | {r['latency_at_step_up_ms']} | "
                     f"{r['queue_at_step_up_ms']} |")  # fmt: skip
    lines += [
        "",
        "The ablation is this report's metric before issue #46: the first bin reaching 90 % of "
        f"the link ({0.9 * HIGH_BPS / 1e6:.1f} Mbit/s) in the bin and on average over the "
        f"{SUSTAIN_S:.0f} s from it. It was chosen when GCC's model held seconds of queue at "
        "the step up, whose drain at the link rate the thesis's definition reads as "
        "convergence. " + drain_note(runs),
    ]
    if plot:
        lines += ["", f"![delivered rate per scheme, seed 1]({plot})"]
    lines += [
        "",
        "Differences from the thesis: the encoder is a model with a 2 s lag, not VP8. "
        "GCC is octoric's libwebrtc model with probing (docs/sim.md, GCC).",
        "",
    ]
    return "\n".join(lines)


def plot(runs: list[Run], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 4))
    for r in runs:
        if r.seed == 1:
            ax.plot(r.t_s, np.asarray(r.rate_bps) / 1e6, label=r.scheme, lw=1)
    t = np.arange(0, DURATION_S, 0.25)
    link = np.where((t // PHASE_S) % 2 == 0, HIGH_BPS, LOW_BPS) / 1e6
    ax.plot(t, link, "k--", lw=1, label="link")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("delivered (Mbit/s)")
    ax.set_title("Dumbo §6.2.1 pulse link: delivered rate per scheme (seed 1)")
    ax.legend(fontsize=8, ncol=3)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


class Dumbo(Experiment):
    """The pulse link (``pulse`` cases) and §6.2 on the cellular traces (``cellular``)."""

    name = "dumbo"
    help = ("the Dumbo thesis: pulse-link convergence (RoCC/Copa with and without Dumbo, GCC) "
            "and the comparison with GCC on cellular traces; claims tables and plots")  # fmt: skip
    quick_help = "one seed (default: five) and one trace for 20 s"
    traces_help = "Mahimahi cellular traces for §6.2's comparison with GCC"

    def add_arguments(self, p: Any) -> None:
        p.add_argument("--no-cellular", action="store_true",
                       help="only the pulse-link experiment (no traces needed)")  # fmt: skip

    def _cellular(self, opts: RunOptions) -> list[str] | None:
        """The traces of §6.2's runs (None: --no-cellular)."""
        if opts.extra.get("no_cellular"):
            return None
        return cell.find_traces(opts.traces_path)[: 1 if opts.quick else None]

    def check(self, opts: RunOptions) -> None:
        if self._cellular(opts) == []:
            raise OctoricError(f"no Mahimahi traces (*.down) in {opts.traces_path}: give "
                               "--traces DIR, or --no-cellular for the pulse-link experiment "
                               "only")  # fmt: skip

    def cases(self, opts: RunOptions) -> list[Case]:
        out = [Case("pulse", "pulse", s, seed, f"{s} seed {seed}")
               for seed in range(1, opts.seeds_or(SEEDS) + 1) for s in SCHEMES]  # fmt: skip
        traces = self._cellular(opts)
        if traces is not None:
            seeds = range(1, opts.seeds_or(cell.SEEDS) + 1)
            out += grid("cellular", traces, cell.SCHEMES, seeds, "cellular ")
        return out

    def run_case(self, case: Case, opts: RunOptions) -> Any:
        if case.part == "pulse":
            return run_one(case.scheme, case.seed)
        duration = 20.0 if opts.quick else cell.DURATION_S
        return cell.run_one(opts.traces_path, case.row, case.scheme, case.seed, duration,
                            ENCODER_LAG_MS)  # fmt: skip

    def encode(self, output: Any) -> Any:
        return asdict(output) if isinstance(output, Run) else output

    def decode(self, case: Case, data: Any) -> Any:
        return Run(**data) if case.part == "pulse" else data

    def results(self, opts: RunOptions, cases: list[Case], outputs: list[Any]) -> dict[str, Any]:
        runs = [o for c, o in zip(cases, outputs, strict=True) if c.part == "pulse"]
        out: dict[str, Any] = {"schemes": scheme_table(runs), "seeds": opts.seeds_or(SEEDS),
                               "runs": runs_json(runs)}  # fmt: skip
        if not opts.extra.get("no_cellular"):
            # the traces as the cases name them: `octoric eval report` rebuilds this from
            # runs.jsonl without the trace folder
            traces = list(dict.fromkeys(c.row for c in cases if c.part == "cellular"))
            out["cellular"] = {"runs": nest(cases, outputs, "cellular"),
                               "seeds": opts.seeds_or(cell.SEEDS),
                               "duration_s": 20.0 if opts.quick else cell.DURATION_S,
                               "traces": traces}  # fmt: skip
        return out

    def claims(self, results: dict[str, Any]) -> list[ClaimResult]:
        found = claims(from_json(results["runs"]))
        if results.get("cellular") is not None:
            found += cell.claims(results["cellular"])
        return found

    def document(self, results: dict[str, Any]) -> dict[str, Any]:
        """The pulse link's claims at the top, §6.2's inside ``cellular`` (as before #40)."""
        doc = {
            "experiment": self.name,
            "claims": claims_json(from_json(results["runs"])),
            **{k: v for k, v in results.items() if k not in ("claims", "experiment")},
        }
        if doc.get("cellular") is not None:
            c = {k: v for k, v in doc["cellular"].items() if k != "claims"}
            doc["cellular"] = {**c, "claims": [x.to_json() for x in cell.claims(c)]}
        return doc

    def plot_names(self, results: dict[str, Any]) -> list[str]:
        names = [f"eval-{self.name}.png"]
        if results.get("cellular") is not None:
            names.append(f"eval-{self.name}-cellular.png")
        return names

    def report(self, results: dict[str, Any]) -> str:
        pngs = self.plot_names(results)
        cellular = results.get("cellular")
        text = markdown(from_json(results["runs"]), int(results["seeds"]), pngs[0],
                        cellular=cellular is not None)  # fmt: skip
        if cellular is None:
            return text
        extra = cell.markdown(cellular)
        extra += ["", f"![network delay against SSIM per run]({pngs[1]})", ""]
        return text + "\n".join(extra)

    def plots(self, results: dict[str, Any], outputs: list[Any], folder: Path,
              opts: RunOptions) -> list[Path]:  # fmt: skip
        pngs = [folder / n for n in self.plot_names(results)]
        plot([o for o in outputs if isinstance(o, Run)], pngs[0])
        if len(pngs) > 1:
            cell.plot(results["cellular"], pngs[1])
        return pngs


register(Dumbo())
