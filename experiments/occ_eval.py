"""``octoric eval occ``: the OCC paper's comparison (issue #7) on the offline simulator.

For every Mahimahi trace of a folder (``*.down``, one UE replaying it) and a built-in
multi-UE contention case (the simulator's ``multi-ue``: 8 UEs at 8-26 dB on one 51-PRB PF
cell, every flow using the scheme under test), each scheme runs once with the same seed:
``occ`` (the OCC xApp's engine in-process, ABW source ``occ-engine``, with the modelled E2
delay), ``gcc`` and ``pbe``. Frame latency percentiles and the stall rate are over the frames
of every flow of the case; bitrates are the mean per flow.

This is a tool, not an algorithm core: it is the one module under ``xapps/`` that imports
``octoric.sim`` (lazily, inside the functions).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from octoric.errors import OctoricError
from octoric.experiments.claims import RULE_MD, ClaimResult, claims_table
from octoric.experiments.experiment import Case, Experiment, RunOptions, percentile, register

# ``occ`` is OCC as the paper specifies it (Eq. 5 exactly: the extensions below off);
# ``occ-ext`` is the xApp's default configuration with the project's extensions on
# (``outage_fallback``, ``probe_bypasses_min``: docs/occ.md), reported as an ablation
SCHEMES = ("occ", "gcc", "pbe", "occ-ext")
OCC_SCHEMES = ("occ", "occ-ext")
PAPER_OCC = (("outage_fallback", False), ("probe_bypasses_min", False))
CONTENTION = "multi-ue-contention"
STALL_MS = 150.0
# the OCC paper's three over-the-air routes (§6.1, Fig. 12) as the simulator models them
ROUTES = ("good", "blockage", "poor")
# §6.1's videos: 25 fps, average bitrates 13.9 (2K HDR) and 7.6 Mbit/s (1080p lecture): the
# content caps what the encoder can produce
CONTENT_MBPS = {"hdr": 13.9, "lecture": 7.6}
PAPER_FPS = 25.0
PLOT_PREFIX = "occ-eval"  # docs/occ-eval-*.png
# how a Mahimahi trace reaches OCC (``ChannelSpec.report``, sim/channels/gnb_view.py): "gnb",
# an MCS and PRB process carrying each CSI period's bytes, gaps as noValue and others' PRBs;
# "capacity", each period's capacity as the MCS on every PRB (zero in a gap): the mapping of
# the reports before issue #46, kept as an ablation
MAPPINGS = {"gnb": "gNB-like input", "capacity": "capacity mapping"}


class EvalError(OctoricError):
    """Bad input to ``octoric eval`` (no traces, bad duration, ...)."""


@dataclass
class Latency:
    p50: float | None
    p95: float | None
    p99: float | None


@dataclass
class EvalResult:
    """One (trace, scheme) row of ``OUT``; the first six keys are issue #7's schema."""

    trace: str
    scheme: str
    frame_latency_ms: Latency
    stall_rate: float | None
    valid_bitrate_kbps: float
    frame_bitrate_kbps: float
    # issue #20: the paper's headline metric (one-way network latency of every packet that
    # arrived, sender pacer -> receiver) and the share of the channel's capacity delivered
    network_latency_ms: Latency = field(default_factory=lambda: Latency(None, None, None))
    utilization: float | None = None
    seed: int = 1
    # context for reading the row (not part of the required schema)
    flows: int = 1
    frames_decoded: int = 0
    capacity_kbps: float = 0.0  # mean per UE: what its channel offered (equal PRB share)
    # encode -> last packet out of the sender's pacer: the part of frame latency spent at
    # the sender (the rest is the wired path and the gNB's queue and air interface)
    sender_queue_ms: Latency = field(default_factory=lambda: Latency(None, None, None))
    abw_source: str | None = None
    # the paper's bitrate metric (§6.1: "the frame bitrate arriving at the client"): payload
    # of the messages whose every packet arrived; None in rows stored before issue #46
    received_frame_bitrate_kbps: float | None = None
    sim_seconds: float = 0.0
    wall_seconds: float = 0.0
    latencies_ms: list[float] = field(default_factory=list, repr=False)

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        del d["latencies_ms"]
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> EvalResult:
        """A stored row (without the frame latencies, which only the plots read)."""
        keys = ("frame_latency_ms", "network_latency_ms", "sender_queue_ms")
        lat: dict[str, Latency] = {k: Latency(**d[k]) for k in keys if k in d}
        return cls(**{**d, **lat})


@dataclass
class EvalCase:
    name: str
    trace: Path | None  # None: a built-in scenario (``scenario``)
    scenario: str = "multi-ue"  # the simulator's built-in scenario when ``trace`` is None
    mapping: str | None = None  # a trace's mapping for an ablation case (None: the run's)

    @property
    def group(self) -> str:
        """How the claims table groups cases: Mahimahi traces (an ablation's mapping apart),
        PHY routes, contention."""
        if self.trace is not None:
            return "traces" if self.mapping is None else f"traces-{self.mapping}"
        return "routes" if self.scenario.startswith("route:") else "contention"


def ablation_name(trace: str, mapping: str) -> str:
    return f"{trace} ({MAPPINGS[mapping]})"


def ablation_case(case: EvalCase, headline: str) -> EvalCase:
    """``case`` (a trace) with the other mapping than ``headline``."""
    other = next(m for m in MAPPINGS if m != headline)
    return EvalCase(ablation_name(case.name, other), case.trace, mapping=other)


def find_cases(
    traces: Path | None, contention: bool = True, routes: tuple[str, ...] = ()
) -> list[EvalCase]:
    """The traces of a folder (None: none), the contention cell, then the PHY routes."""
    cases: list[EvalCase] = []
    if traces is not None:
        cases = _trace_cases(traces)
    if contention:
        cases.append(EvalCase(CONTENTION, None))
    from octoric.sim.channels.route import ROUTES as KNOWN

    for r in routes:
        if r not in KNOWN:
            raise EvalError(f"--routes: unknown route {r!r} (known: {', '.join(KNOWN)})")
        cases.append(EvalCase(f"route-{r}", None, f"route:{r}"))
    return cases


def _trace_cases(traces: Path) -> list[EvalCase]:
    if not traces.is_dir():
        raise EvalError(f"--traces {traces}: not a folder")
    cases = [EvalCase(p.name.removesuffix(".down"), p) for p in sorted(traces.glob("*.down"))]
    if not cases:
        raise EvalError(f"--traces {traces}: no Mahimahi traces (*.down) in it")
    return cases


@dataclass(frozen=True)
class EvalOptions:
    """How a Mahimahi trace becomes the channel (the same for every scheme), and the OCC
    engine's settings.

    ``csi_period_ms``: the gNB reports the trace's capacity over the previous CSI period as
    the UE's MCS (0: each ms's delivered bytes, i.e. an MCS of zero between packets).
    ``smooth_ms``: deliveries too are spread evenly over blocks of this many ms (0: the
    trace's own delivery times). ``occ_overrides``: ``OccConfig`` fields for `occ` runs."""

    csi_period_ms: int = 20
    smooth_ms: int = 0
    occ_overrides: tuple[tuple[str, Any], ...] = ()
    # the sender's video: "webrtc" (the paper's: WebRTC with x264 in a 4-frame VBV, key frames
    # every 3000 frames, 25 fps, the content's bitrate as the encoder's cap) or "lag" (issue
    # #7's first model: 30 fps, 100 ms lag, an I-frame every 10 s, no cap)
    video: str = "webrtc"
    content: str = "hdr"
    mapping: str = "gnb"  # MAPPINGS: how the trace reaches OCC

    def __post_init__(self) -> None:
        if self.mapping not in MAPPINGS:
            raise EvalError(f"--mapping {self.mapping!r}: want {' or '.join(MAPPINGS)}")
        if self.video not in ("webrtc", "lag"):
            raise EvalError(f"--video {self.video!r}: want webrtc or lag")
        if self.content not in CONTENT_MBPS:
            raise EvalError(f"--content {self.content!r}: want {' or '.join(CONTENT_MBPS)}")
        if self.csi_period_ms < 0:
            raise EvalError("--csi-period-ms must be >= 0")
        if self.csi_period_ms == 0 and self.mapping == "gnb":
            raise EvalError("--csi-period-ms 0 (an MCS per ms) is the capacity mapping's: give "
                            "--mapping capacity")  # fmt: skip
        if self.smooth_ms < 0:
            raise EvalError("--smooth-ms must be >= 0")


def _reconfigure_occ(eng: Any, overrides: tuple[tuple[str, Any], ...]) -> None:
    """Apply ``OccConfig`` overrides to an engine's in-process OCC ABW source."""
    from octoric.experiments.occ_source import OccEngineAbw

    if not overrides:
        return
    if not isinstance(eng.abw, OccEngineAbw):
        raise EvalError(f"--occ-set: the simulator's ABW source is {eng.abw!r}, not OCC")
    eng.abw.reconfigure(**dict(overrides))


def parse_occ_set(items: list[str]) -> tuple[tuple[str, Any], ...]:
    """``KEY=VALUE`` strings -> typed ``OccConfig`` overrides (validated by OccConfig)."""
    from dataclasses import fields, replace

    from octoric.xapps.occ.config import OccConfig
    from octoric.xapps.occ.errors import OccConfigError

    types = {f.name: type(getattr(OccConfig(), f.name)) for f in fields(OccConfig)}
    out: list[tuple[str, Any]] = []
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or key not in types:
            known = ", ".join(sorted(types))
            raise EvalError(f"--occ-set {item!r}: want KEY=VALUE with KEY one of {known}")
        t = types[key]
        try:
            if t is bool:
                if raw.lower() not in ("true", "false", "1", "0"):
                    raise ValueError(raw)
                val: Any = raw.lower() in ("true", "1")
            else:
                val = t(raw)
        except ValueError:
            raise EvalError(f"--occ-set {key}: {raw!r} is not a {t.__name__}") from None
        out.append((key, val))
    try:
        replace(OccConfig(), **dict(out))
    except OccConfigError as e:
        raise EvalError(f"--occ-set: {e}") from None
    return tuple(out)


def _scenario(case: EvalCase, scheme: str, duration_s: float, opts: EvalOptions) -> Any:
    from octoric.sim.scenario import load
    from octoric.sim.video import VideoConfig, webrtc_video

    sc = load(f"trace:{case.trace}" if case.trace is not None else case.scenario)
    sc.name = case.name
    sc.duration_s = duration_s
    sc.abw_source = "occ-engine"  # only `occ` flows read it: never the stand-in
    if case.trace is not None:
        fit_cell(sc, case.trace, opts.csi_period_ms)
    for ue in sc.ues:
        if ue.channel.kind == "mahimahi":
            ue.channel.csi_period_ms = opts.csi_period_ms
            ue.channel.report = "gnb" if (case.mapping or opts.mapping) == "gnb" else "capacity"
        for f in ue.flows:
            f.traffic = "video"
            f.scheme = "occ" if scheme in OCC_SCHEMES else scheme
            f.video = (
                webrtc_video(fps=PAPER_FPS, max_bps=CONTENT_MBPS[opts.content] * 1e6)
                if opts.video == "webrtc" else VideoConfig()
            )  # fmt: skip
    return sc


@functools.lru_cache(maxsize=64)
def _peak_bits(trace: str, csi_period_ms: int) -> float:
    """A trace's busiest CSI period, bits per ms (read once per worker, not once per run)."""
    from octoric.sim.channels.gnb_view import peak_period_bits
    from octoric.sim.channels.traces import read_mahimahi

    return peak_period_bits(read_mahimahi(trace).bytes_per_ms * 8.0, csi_period_ms)


def fit_cell(sc: Any, trace: Path, csi_period_ms: int) -> None:
    """Give the trace scenario's cell (106 PRBs, one layer) the layers (up to 4), then the PRBs
    (up to 275), that the trace's busiest CSI period needs at the top MCS: the gNB-like input
    carries each period on an MCS and PRB process (a 5G download peaks at ~530 Mbit/s over
    20 ms), and both mappings run on the same cell."""
    from octoric.sim.mcs import McsMapper

    if csi_period_ms <= 0:
        return
    ran = sc.ran
    peak = _peak_bits(str(trace), csi_period_ms)
    top = McsMapper(ran.mcs_table).bits[-1] * (1000.0 / (ran.slot_ms * 1000.0))  # bits/ms/PRB
    need = peak / (ran.n_prb * top)
    if need > 4:
        prbs = int(np.ceil(peak / (4 * top)))
        if prbs > 275:
            raise EvalError(f"{trace.name}: peaks at {peak / 1000:.0f} Mbit/s over "
                            f"{csi_period_ms} ms, more than a 275-PRB cell carries")  # fmt: skip
        ran.layers, ran.n_prb = 4, prbs
    elif need > ran.layers:
        ran.layers = int(np.ceil(need))


def block_mean(per_ms: np.ndarray, block_ms: int) -> np.ndarray:
    """``per_ms`` with each run of ``block_ms`` values replaced by its mean (bytes per block
    kept exactly; the last, shorter block too)."""
    out = np.asarray(per_ms, dtype=np.float64).copy()
    for i in range(0, out.size, block_ms):
        out[i : i + block_ms] = out[i : i + block_ms].mean()
    return out


def smooth_traces(eng: Any, block_ms: int) -> None:
    """Spread each Mahimahi channel's capacity evenly over blocks of ``block_ms``.

    A Mahimahi trace lists delivery opportunities of 1500-byte packets, so at 5 Mbit/s a
    millisecond carries one packet or none (70-75 % of the ms of the three LTE traces are
    empty). The simulator turns each ms into bits per PRB, so the "MCS" the gNB reports
    (``OCC.BitsPerPrbDl``) is zero most of the time; a real gNB reports its link-adaptation
    MCS. This variant (the same channel for every scheme) removes that packet quantisation
    while keeping every block's bytes and the trace's genuine outages longer than a block.
    """
    from octoric.sim.channels import MahimahiChannel

    for ch in eng.channels:
        if isinstance(ch, MahimahiChannel):
            ch.set_deliveries(block_mean(ch.bits_per_ms, block_ms))


def _engine(case: EvalCase, scheme: str, duration_s: float, seed: int, opts: EvalOptions) -> Any:
    """The simulator set up for one run (not started)."""
    from octoric.sim.engine import Engine

    eng = Engine(_scenario(case, scheme, duration_s, opts), seed)
    if scheme == "occ":
        _reconfigure_occ(eng, PAPER_OCC + opts.occ_overrides)
    elif scheme == "occ-ext":
        _reconfigure_occ(eng, opts.occ_overrides)
    if opts.smooth_ms > 1:
        smooth_traces(eng, opts.smooth_ms)
    return eng


def run_case(
    case: EvalCase,
    scheme: str,
    duration_s: float,
    seed: int = 1,
    opts: EvalOptions = EvalOptions(),
) -> EvalResult:
    from octoric.sim.runner import RunResult
    from octoric.sim.summary import build_summary

    eng = _engine(case, scheme, duration_s, seed, opts)
    wall = eng.run()
    res = RunResult(eng, build_summary(eng, wall), wall)
    flows = [f for f in res.summary["flows"] if f.get("scheme") is not None]
    if not flows:
        raise EvalError(f"{case.name}: the scenario has no video flows")
    lat: list[float] = []
    net: list[float] = []
    queued: list[np.ndarray] = []
    for f in eng.flows:
        if f.receiver is not None:
            lat.extend(f.receiver.frame_latency_ms)
            net.extend(f.receiver.net_latency_ms)
        if f.sender is not None:
            sent = np.asarray(f.sender.frames.sent_us, dtype=np.float64)
            enc = np.asarray(f.sender.frames.enc_us, dtype=np.float64)
            queued.append((sent - enc)[sent >= 0] / 1000.0)
    a = np.asarray(lat, dtype=np.float64)
    n = np.asarray(net, dtype=np.float64)
    q = np.concatenate(queued) if queued else np.zeros(0)
    utils = [u["utilization"] for u in res.summary["ues"] if u.get("utilization") is not None]
    sim_s = float(res.summary["sim_seconds"])
    caps = [u["capacity_bytes"] * 8 / sim_s / 1000.0 for u in res.summary["ues"]]
    src = {f.get("abw_source") for f in flows}
    if scheme in OCC_SCHEMES and src != {"occ-engine"}:
        raise EvalError(f"{case.name}: occ flows did not use the OCC engine ({src})")
    return EvalResult(
        trace=case.name,
        scheme=scheme,
        frame_latency_ms=Latency(percentile(a, 50), percentile(a, 95), percentile(a, 99)),
        stall_rate=round(float((a > STALL_MS).mean()), 4) if a.size else None,
        valid_bitrate_kbps=round(float(np.mean([f["valid_bitrate_kbps"] for f in flows])), 1),
        frame_bitrate_kbps=round(float(np.mean([f["frame_bitrate_kbps"] for f in flows])), 1),
        network_latency_ms=Latency(percentile(n, 50), percentile(n, 95), percentile(n, 99)),
        utilization=round(float(np.mean(utils)), 4) if utils else None,
        seed=seed,
        flows=len(flows),
        frames_decoded=int(a.size),
        capacity_kbps=round(float(np.mean(caps)), 1),
        sender_queue_ms=Latency(percentile(q, 50), percentile(q, 95), percentile(q, 99)),
        abw_source=src.pop() if len(src) == 1 else None,
        received_frame_bitrate_kbps=round(
            float(np.mean([f["received_frame_bitrate_kbps"] for f in flows])), 1
        ),
        sim_seconds=sim_s,
        wall_seconds=round(res.wall_seconds, 2),
        latencies_ms=lat,
    )


def _f(v: float | None, nd: int = 1) -> str:
    return "—" if v is None else f"{v:.{nd}f}"


def markdown_table(results: list[EvalResult]) -> str:
    lines = [
        "| trace | scheme | seed | net p50 ms | net p99 ms | frame p50 ms | frame p95 ms | "
        "frame p99 ms | stall rate | valid kbit/s | frame kbit/s | received kbit/s | "
        "capacity kbit/s | utilization | at sender p95 ms |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        lat, net = r.frame_latency_ms, r.network_latency_ms
        util = "—" if r.utilization is None else f"{100 * r.utilization:.0f}%"
        lines.append(
            f"| {r.trace} | {r.scheme} | {r.seed} | {_f(net.p50)} | {_f(net.p99)} | "
            f"{_f(lat.p50)} | {_f(lat.p95)} | {_f(lat.p99)} | "
            f"{_f(None if r.stall_rate is None else 100 * r.stall_rate)}% | "
            f"{r.valid_bitrate_kbps:.0f} | {r.frame_bitrate_kbps:.0f} | "
            f"{_f(r.received_frame_bitrate_kbps, 0)} | {r.capacity_kbps:.0f} | "
            f"{util} | {_f(r.sender_queue_ms.p95)} |"
        )
    return "\n".join(lines) + "\n"


def mean_table(results: list[EvalResult]) -> str:
    """Per case and scheme, the mean over seeds of the paper's metrics."""
    groups: dict[tuple[str, str], list[EvalResult]] = {}
    for r in results:
        groups.setdefault((r.trace, r.scheme), []).append(r)
    lines = [
        "| case | scheme | seeds | net p50 ms | net p99 ms | frame p99 ms | stall rate | "
        "frame kbit/s | received kbit/s | valid kbit/s | capacity kbit/s | utilization |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]

    def mean(vals: list[float | None]) -> float | None:
        xs = [v for v in vals if v is not None]
        return float(np.mean(xs)) if xs else None

    for (case, scheme), rs in groups.items():
        stall = mean([r.stall_rate for r in rs])
        util = mean([r.utilization for r in rs])
        lines.append(
            f"| {case} | {scheme} | {len(rs)} "
            f"| {_f(mean([r.network_latency_ms.p50 for r in rs]))} "
            f"| {_f(mean([r.network_latency_ms.p99 for r in rs]), 0)} "
            f"| {_f(mean([r.frame_latency_ms.p99 for r in rs]), 0)} "
            f"| {_f(None if stall is None else 100 * stall)}% "
            f"| {_f(mean([r.frame_bitrate_kbps for r in rs]), 0)} "
            f"| {_f(mean([r.received_frame_bitrate_kbps for r in rs]), 0)} "
            f"| {_f(mean([r.valid_bitrate_kbps for r in rs]), 0)} "
            f"| {_f(mean([r.capacity_kbps for r in rs]), 0)} "
            f"| {'—' if util is None else f'{100 * util:.0f}%'} |"
        )
    return "\n".join(lines) + "\n"


# OCC §6.2 / Fig. 13 (shared/papers/occ-2026-physical-layer-assisted-cc.txt, line 314): "the
# latency is reduced by 13% to 68%, while the bitrate increases by 1.2x to 3.5x across all
# scenarios": one joint claim, judged per run (experiments/claims.py)
PAPER_LATENCY = (0.32, 0.87)
PAPER_BITRATE = (1.2, 3.5)


def claims(results: list[EvalResult], cases: list[EvalCase]) -> list[ClaimResult]:
    """The OCC paper's headline claims per group of cases (routes, traces, contention): the
    ratios per (case, seed) of OCC to GCC (and to PBE-CC) on the paper's metrics."""
    from octoric.experiments.claims import judge, judge_joint, ratio

    group = {c.name: c.group for c in cases}
    by: dict[tuple[str, int], dict[str, EvalResult]] = {}
    for r in results:
        by.setdefault((r.trace, r.seed), {})[r.scheme] = r

    def p99(r: EvalResult) -> float | None:
        return r.network_latency_ms.p99 or None

    def bitrate(r: EvalResult) -> float | None:
        return r.received_frame_bitrate_kbps or None

    def ratios(g: str, a: str, b: str, f: Callable[[EvalResult], float | None]
               ) -> list[tuple[int, float]]:  # fmt: skip
        """a / b of ``f`` per (case, seed) of group ``g`` where both ran (NaN where either
        is missing or zero, so that a joint claim's parts keep the same runs)."""
        out = []
        for (trace, seed), rs in by.items():
            if group.get(trace) == g and a in rs and b in rs:
                x, y = f(rs[a]), f(rs[b])
                out.append((seed, x / y if x and y else float("nan")))
        return out

    lat = ratio(*PAPER_LATENCY, ref="0.32-0.87x (-13..-68 %; §6.2, Fig. 13, line 314)")
    rate = ratio(*PAPER_BITRATE, ref="1.2-3.5x (§6.2, Fig. 13, line 314)")
    pbe = ratio(0.99, ref="< 1 (PBE-CC between GCC and OCC; Fig. 13)", kind="direction")
    rows: list[ClaimResult] = []

    def used(g: str) -> str:
        """The schemes' mean utilization over the group's runs, for every latency claim."""
        parts = []
        for scheme, label in (("occ", "OCC"), ("gcc", "GCC"), ("pbe", "PBE-CC")):
            u = [
                r.utilization
                for r in results
                if group.get(r.trace) == g and r.scheme == scheme and r.utilization is not None
            ]
            if u:
                parts.append(f"{label} {100 * sum(u) / len(u):.0f} %")
        return "utilization " + ", ".join(parts) if parts else ""

    ablations = sorted({c.group for c in cases if c.mapping is not None})
    for g in ("routes", "traces", *ablations, "contention"):
        title = g
        if g.startswith("traces-"):  # a mapping's ablation: shown, never counted
            title = f"traces, {MAPPINGS[g.removeprefix('traces-')]} (ablation)"
        for who, counted in (("occ", True), ("occ-ext", False)):
            lr, br = ratios(g, who, "gcc", p99), ratios(g, who, "gcc", bitrate)
            if not lr:
                continue
            name = "OCC" if who == "occ" else "OCC with extensions (ablation)"
            rows.append(judge_joint(
                f"{title}: {name} lowers the p99 network latency and raises the frame bitrate "
                "against GCC", [("p99 network latency, / GCC", lat, lr),
                                ("frame bitrate at the client, / GCC", rate, br)],
                counted=counted and g == title, note=used(g)))  # fmt: skip
        pr = ratios(g, "occ", "pbe", p99)
        if pr:
            rows.append(judge(f"{title}: p99 network latency, OCC / PBE-CC", pbe, pr,
                              counted=g == title, note=used(g)))  # fmt: skip
    return rows


def write_plots(results: list[EvalResult], folder: Path, prefix: str = "occ-eval") -> list[Path]:
    """One latency CDF per trace, and one bar chart (p95/p99, valid bitrate) per scheme, of
    the first seed's runs."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    folder.mkdir(parents=True, exist_ok=True)
    written: list[Path] = [write_tradeoff_plot(results, folder, prefix)]
    first = min((r.seed for r in results), default=1)
    results = [r for r in results if r.seed == first]  # one run per case and scheme
    traces = list(dict.fromkeys(r.trace for r in results))
    schemes = list(dict.fromkeys(r.scheme for r in results))
    colors = {"occ": "tab:green", "gcc": "tab:blue", "pbe": "tab:orange",
              "occ-ext": "tab:olive"}  # fmt: skip
    for tr in (t for t in traces if " (" not in t):  # an ablation's case: in the trade-off plot
        fig, ax = plt.subplots(figsize=(5.5, 3.6))
        for r in (r for r in results if r.trace == tr):
            a = np.sort(np.asarray(r.latencies_ms))
            if a.size:
                used = "" if r.utilization is None else f" ({r.utilization:.0%} of capacity)"
                ax.plot(a, np.arange(1, a.size + 1) / a.size, label=f"{r.scheme}{used}",
                        color=colors.get(r.scheme))  # fmt: skip
        ax.axvline(STALL_MS, color="grey", ls=":", lw=0.8)
        ax.set_xscale("log")
        ax.set_xlabel("frame latency (ms)")
        ax.set_ylabel("CDF")
        ax.set_title(tr, fontsize=9)
        ax.legend(fontsize=8)
        fig.tight_layout()
        p = folder / f"{prefix}-cdf-{tr}.png"
        fig.savefig(p, dpi=80)
        plt.close(fig)
        written.append(p)

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.8))
    x = np.arange(len(traces))
    w = 0.8 / max(1, len(schemes))
    for k, s in enumerate(schemes):
        rows = {r.trace: r for r in results if r.scheme == s}
        p95 = [rows[t].frame_latency_ms.p95 or 0.0 if t in rows else 0.0 for t in traces]
        p99 = [rows[t].frame_latency_ms.p99 or 0.0 if t in rows else 0.0 for t in traces]
        vb = [rows[t].valid_bitrate_kbps / 1000 if t in rows else 0.0 for t in traces]
        c = colors.get(s)
        ax1.bar(x + k * w, p99, w, color=c, alpha=0.45, label=f"{s} p99")
        ax1.bar(x + k * w, p95, w, color=c, label=f"{s} p95")
        ax2.bar(x + k * w, vb, w, color=c, label=s)
    for ax in (ax1, ax2):
        ax.set_xticks(x + w * (len(schemes) - 1) / 2)
        ax.set_xticklabels([t.replace("-", "-\n", 1) for t in traces], fontsize=7)
    ax1.set_yscale("log")
    ax1.set_ylabel("frame latency (ms): p95 solid, p99 light")
    ax1.axhline(STALL_MS, color="grey", ls=":", lw=0.8)
    ax1.legend(fontsize=6, ncol=len(schemes))
    ax2.set_ylabel("valid bitrate (Mbit/s, mean per flow)")
    ax2.legend(fontsize=7)
    fig.tight_layout()
    p = folder / f"{prefix}-bars.png"
    fig.savefig(p, dpi=80)
    plt.close(fig)
    written.append(p)
    return written


def write_tradeoff_plot(results: list[EvalResult], folder: Path, prefix: str) -> Path:
    """The paper's trade-off (Fig. 13) per case: p99 network latency against the frame bitrate
    arriving at the client, one marker per scheme at the mean over seeds, bars spanning the
    seeds' min-max."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colors = {"occ": "tab:green", "gcc": "tab:blue", "pbe": "tab:orange", "occ-ext": "tab:olive"}
    cases = list(dict.fromkeys(r.trace for r in results))
    cols = min(4, len(cases))
    rows = (len(cases) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(3.2 * cols, 2.7 * rows), squeeze=False)
    for ax, case in zip(axes.flat, cases, strict=False):
        for scheme in dict.fromkeys(r.scheme for r in results):
            rs = [r for r in results if r.trace == case and r.scheme == scheme
                  and r.network_latency_ms.p99 is not None]  # fmt: skip
            if not rs:
                continue
            x = np.array([(r.received_frame_bitrate_kbps or 0.0) / 1000 for r in rs])
            y = np.array([float(r.network_latency_ms.p99 or 0.0) for r in rs])
            ax.errorbar(x.mean(), y.mean(), xerr=[[x.mean() - x.min()], [x.max() - x.mean()]],
                        yerr=[[y.mean() - y.min()], [y.max() - y.mean()]], fmt="o", ms=5,
                        color=colors.get(scheme), label=scheme, capsize=2, lw=0.8)  # fmt: skip
        ax.set_yscale("log")
        ax.set_title(case, fontsize=8)
        ax.tick_params(labelsize=7)
    for ax in axes.flat[len(cases) :]:
        ax.axis("off")
    for ax in axes[:, 0]:
        ax.set_ylabel("p99 network latency (ms)", fontsize=7)
    for ax in axes[-1, :]:
        ax.set_xlabel("frame bitrate at the client (Mbit/s)", fontsize=7)
    axes.flat[0].legend(fontsize=7)
    fig.suptitle("lower right is better: each scheme's mean over seeds, bars min-max", fontsize=8)
    fig.tight_layout()
    p = folder / f"{prefix}-tradeoff.png"
    fig.savefig(p, dpi=80)
    plt.close(fig)
    return p


@dataclass(frozen=True)
class OccVariant:
    label: str
    overrides: tuple[tuple[str, Any], ...] = ()
    mapping: str | None = None  # MAPPINGS (None: the run's)


_EXT = (("outage_fallback", True), ("probe_bypasses_min", True))
TIMESERIES_VARIANTS = (
    OccVariant("OCC as the paper, gNB-like input", (), "gnb"),
    OccVariant("OCC as the paper, capacity mapping (ablation)", (), "capacity"),
    OccVariant("OCC with the extensions, gNB-like input", _EXT, "gnb"),
)  # fmt: skip


def write_timeseries_plot(
    case: EvalCase,
    folder: Path,
    prefix: str = "occ-eval",
    duration_s: float = 60.0,
    seed: int = 1,
    opts: EvalOptions = EvalOptions(),
    variants: tuple[OccVariant, ...] = TIMESERIES_VARIANTS,
) -> Path:
    """One trace, OCC variants over time (each mapping's input): the trace's capacity (100 ms
    means), its gaps (CSI periods with no delivery), each variant's target and its frame
    latency."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from octoric.sim.channels import MahimahiChannel

    if case.trace is None:
        raise EvalError("--timeseries needs a trace, not the contention case")
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(10, 5.5), sharex=True)
    shaded = False
    for k, v in enumerate(variants):
        vopts = replace(opts, occ_overrides=opts.occ_overrides + v.overrides)
        eng = _engine(replace(case, mapping=v.mapping), "occ", duration_s, seed, vopts)
        eng.run()
        mc = eng.channels[0]
        if not shaded and isinstance(mc, MahimahiChannel):
            n_ms = int(duration_s * 1000)
            idx = (np.arange(n_ms) + mc.offset) % mc.trace.period_ms
            per_ms = mc.bits_per_ms[idx] * mc.ctx.n_prb  # bits delivered per ms
            bins = per_ms[: n_ms - n_ms % 100].reshape(-1, 100).mean(axis=1) / 1000.0
            ax1.step(np.arange(bins.size) / 10.0, bins, where="post", color="grey", lw=0.8,
                     label="trace capacity (100 ms means)")  # fmt: skip
            out = mc.reported_per_ms[idx] <= 0.0
            edges = np.flatnonzero(np.diff(np.concatenate([[0], out.astype(np.int8), [0]])))
            for a, b in zip(edges[::2], edges[1::2], strict=True):
                for ax in (ax1, ax2):
                    ax.axvspan(a / 1000.0, b / 1000.0, color="red", alpha=0.08, lw=0)
            shaded = True
        f = eng.flows[0]
        assert f.sender is not None and f.receiver is not None
        fr = f.sender.frames
        color = ("tab:green", "tab:purple", "tab:blue")[k % 3]
        ax1.plot(np.asarray(fr.enc_us) / 1e6, np.asarray(fr.target_bps) / 1e6, color=color,
                 lw=1.0, label=f"{v.label}: target")  # fmt: skip
        dec = f.receiver.frame_decoded_at
        t_enc = np.array([fr.enc_us[i] for i, _ in dec]) / 1e6
        lat = np.array([(t - fr.enc_us[i]) / 1000.0 for i, t in dec])
        ax2.plot(t_enc, lat, color=color, lw=0.8, label=v.label)
    ax1.set_ylabel("Mbit/s")
    ax1.set_yscale("log")
    ax1.legend(fontsize=7, loc="lower right")
    ax1.set_title(f"{case.name}: gaps (CSI periods without delivery) shaded", fontsize=9)
    ax2.set_yscale("log")
    ax2.set_ylabel("frame latency (ms)")
    ax2.axhline(STALL_MS, color="grey", ls=":", lw=0.8)
    ax2.set_xlabel("time (s)")
    ax2.legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    folder.mkdir(parents=True, exist_ok=True)
    p = folder / f"{prefix}-timeseries-{case.name}.png"
    fig.savefig(p, dpi=80)
    plt.close(fig)
    return p


class OccEval(Experiment):
    """``part`` of a case is its group (traces, contention, routes), ``row`` its name."""

    name = "occ"
    help = "OCC-fed (OCC engine) vs GCC vs PBE-CC-style senders on Mahimahi traces"
    quick_help = "a smoke run: the first trace (by name), the contention cell, one route; 10 s"
    traces_help = "folder of Mahimahi *.down"

    def add_arguments(self, p: Any) -> None:
        p.add_argument(
            "--duration",
            type=float,
            default=120.0,
            metavar="S",
            help="simulated seconds per run (default 120; --quick: 10 at most)",
        )
        p.add_argument("--seed", type=int, default=1, help="the first seed (default 1)")
        p.add_argument(
            "--only",
            action="append",
            metavar="NAME",
            help="only these traces (file name without .down; repeatable)",
        )
        p.add_argument(
            "--csi-period-ms",
            type=int,
            default=20,
            metavar="MS",
            help="the gNB reports each trace's capacity over the previous MS ms as the UE's "
            "MCS (a CSI period; default 20, srsRAN_Project's CSI-RS period; 0: the delivered "
            "bytes of each ms, an MCS of zero between packets)",
        )
        p.add_argument(
            "--mapping",
            choices=tuple(MAPPINGS),
            default="gnb",
            help="how a trace reaches OCC: gnb (default: what a gNB reports carrying each CSI "
            "period's bytes: an MCS and a PRB share, noValue and others' PRBs in a gap) or "
            "capacity (the period's capacity as the MCS on every PRB, zero in a gap; the "
            "reports before issue #46); the other runs too, as an ablation, unless "
            "--no-mapping-ablation",
        )
        p.add_argument(
            "--no-mapping-ablation",
            action="store_true",
            help="skip the traces' runs with the other --mapping",
        )
        p.add_argument(
            "--smooth-ms",
            type=int,
            default=0,
            metavar="MS",
            help="also spread each trace's deliveries evenly over blocks of MS ms, for every "
            "scheme (removes the traces' 1500-byte packet quantisation; default 0: as recorded)",
        )
        p.add_argument(
            "--occ-set",
            action="append",
            default=[],
            metavar="KEY=VALUE",
            help="change an OCC engine parameter for the occ runs (OccConfig field, e.g. "
            "outage_fallback=true; repeatable; occ runs start from the paper's configuration, "
            "occ-ext from the xApp's defaults)",
        )
        p.add_argument(
            "--timeseries",
            action="append",
            default=[],
            metavar="NAME",
            help="also plot OCC over time on this trace (target, capacity, outages, frame "
            "latency; default settings vs Eq. (5) as written; 60 s) (repeatable)",
        )
        p.add_argument(
            "--scheme",
            action="append",
            choices=SCHEMES,
            metavar="NAME",
            help="only these schemes (occ: OCC as the paper specifies it; gcc; pbe; occ-ext: "
            "OCC with the project's extensions, an ablation; repeatable; default all four)",
        )
        p.add_argument(
            "--no-contention", action="store_true", help="skip the multi-UE contention scenario"
        )
        p.add_argument(
            "--routes",
            nargs="*",
            default=None,
            metavar="ROUTE",
            help="the OCC paper's PHY routes to run on a 51-PRB cell (default: good blockage "
            "poor; none: --routes with no name)",
        )
        p.add_argument(
            "--video",
            choices=("webrtc", "lag"),
            default="webrtc",
            help="the senders' video: webrtc (the paper's: x264 in a 4-frame VBV, key frames "
            "every 3000 frames, 25 fps; default) or lag (issue #7's first model)",
        )
        p.add_argument(
            "--content", choices=tuple(CONTENT_MBPS), default="hdr",
            help="the paper's video: 2K HDR (13.9 Mbit/s, default) or lecture (7.6 Mbit/s): "
            "the encoder's cap (webrtc video only)")  # fmt: skip

    @staticmethod
    def _x(opts: RunOptions, key: str, default: Any = None) -> Any:
        v = opts.extra.get(key)
        return default if v is None else v

    def _options(self, opts: RunOptions) -> EvalOptions:
        return EvalOptions(
            csi_period_ms=self._x(opts, "csi_period_ms", 20),
            smooth_ms=self._x(opts, "smooth_ms", 0),
            occ_overrides=parse_occ_set(self._x(opts, "occ_set", [])),
            video=self._x(opts, "video", "webrtc"),
            content=self._x(opts, "content", "hdr"),
            mapping=self._x(opts, "mapping", "gnb"),
        )

    def _duration(self, opts: RunOptions) -> float:
        d = float(self._x(opts, "duration", 120.0))
        return min(d, 10.0) if opts.quick else d

    def _routes(self, opts: RunOptions) -> tuple[str, ...]:
        return tuple(ROUTES if opts.extra.get("routes") is None else opts.extra["routes"])

    def eval_cases(self, opts: RunOptions) -> list[EvalCase]:
        """The cases of this run: the traces (``--only``), the contention cell, the routes;
        ``--quick``: the first trace, the contention cell and the first route."""
        traces = opts.traces_path
        if not traces.is_dir():
            raise EvalError(f"no trace folder {traces}: give --traces DIR (the public Mahimahi "
                            "cellular traces, github.com/ravinet/mahimahi, folder traces/; "
                            "*.down files)")  # fmt: skip
        cases = find_cases(traces, contention=not opts.extra.get("no_contention"),
                           routes=self._routes(opts))  # fmt: skip
        only = opts.extra.get("only")
        if only:
            missing = sorted(set(only) - {c.name for c in cases})
            if missing:
                raise EvalError(f"--only: no trace {', '.join(missing)} in {traces}")
            cases = [c for c in cases if c.name in only or c.trace is None]
        if opts.quick:
            first = min((c.name for c in cases if c.trace is not None), default=None)
            route = next((c.name for c in cases if c.group == "routes"), None)
            cases = [c for c in cases if c.name in (first, CONTENTION, route)]
        if not opts.extra.get("no_mapping_ablation"):
            headline = self._x(opts, "mapping", "gnb")
            cases += [ablation_case(c, headline) for c in cases if c.trace is not None]
        return cases

    def check(self, opts: RunOptions) -> None:
        self._options(opts)  # EvalOptions and OccConfig check their fields
        if self._duration(opts) <= 0:
            raise EvalError("--duration must be > 0")
        cases = self.eval_cases(opts)
        if self._x(opts, "csi_period_ms", 20) == 0 and any(c.mapping for c in cases):
            raise EvalError("--csi-period-ms 0: the gNB-like input needs a CSI period; give "
                            "--no-mapping-ablation")  # fmt: skip
        series = self._x(opts, "timeseries", [])
        unknown = sorted(set(series) - {c.name for c in cases if c.trace is not None})
        if unknown:
            raise EvalError(f"--timeseries: no trace {', '.join(unknown)} in this run")
        if series and not opts.plots:
            raise EvalError("--timeseries needs plots (drop --no-plots)")

    def cases(self, opts: RunOptions) -> list[Case]:
        first = int(self._x(opts, "seed", 1))
        schemes = tuple(dict.fromkeys(opts.extra.get("scheme") or SCHEMES))
        return [Case(c.group, c.name, s, sd)
                for c in self.eval_cases(opts)
                for sd in range(first, first + opts.seeds_or(1))
                for s in schemes]  # fmt: skip

    def _case(self, case: Case, opts: RunOptions) -> EvalCase:
        if case.part == "traces":
            return EvalCase(case.row, opts.traces_path / f"{case.row}.down")
        if case.part.startswith("traces-"):
            mapping = case.part.removeprefix("traces-")
            trace = case.row.removesuffix(f" ({MAPPINGS[mapping]})")
            return EvalCase(case.row, opts.traces_path / f"{trace}.down", mapping=mapping)
        if case.part == "routes":
            return EvalCase(case.row, None, f"route:{case.row.removeprefix('route-')}")
        return EvalCase(case.row, None)

    def run_case(self, case: Case, opts: RunOptions) -> EvalResult:
        return run_case(self._case(case, opts), case.scheme, self._duration(opts), case.seed,
                        self._options(opts))  # fmt: skip

    def run_options(self, opts: RunOptions) -> dict[str, Any]:
        """Not the options that only pick the cases or the plots: a run of a 25-minute
        evaluation is reused when they change."""
        picks = ("only", "scheme", "routes", "no_contention", "seed", "timeseries",
                 "no_mapping_ablation")  # fmt: skip
        extra = {k: v for k, v in opts.extra.items() if k not in picks}
        return {**super().run_options(opts), "extra": extra}

    def encode(self, output: Any) -> Any:
        return asdict(output)  # with the frame latencies, which the CDF plots read

    def decode(self, case: Case, data: Any) -> Any:
        return EvalResult.from_json(data)

    def results(self, opts: RunOptions, cases: list[Case], outputs: list[Any]) -> dict[str, Any]:
        x = opts.extra
        meta = {
            "duration_s": self._duration(opts),
            "seed": self._x(opts, "seed", 1),
            "seeds": opts.seeds_or(1),
            "video": self._x(opts, "video", "webrtc"),
            "content": self._x(opts, "content", "hdr"),
            "routes": list(self._routes(opts)),
            "csi_period_ms": self._x(opts, "csi_period_ms", 20),
            "mapping": self._x(opts, "mapping", "gnb"),
            "smooth_ms": self._x(opts, "smooth_ms", 0),
            "occ_set": x.get("occ_set") or [],
            "traces_dir": str(opts.traces_path),
            "wall_seconds": round(sum(r.wall_seconds for r in outputs), 1),
            "aggregation": "latency and stall rate over every flow's frames; bitrates mean per "
            "flow",
            # the claims group the cases (traces, routes, contention): kept for `eval report`
            "groups": {c.row: c.part for c in cases},
        }
        return {"results": [r.to_json() for r in outputs], "meta": meta}

    def _rows(self, results: dict[str, Any]) -> tuple[list[EvalResult], list[EvalCase]]:
        rows = [EvalResult.from_json(r) for r in results["results"]]
        groups = results["meta"]["groups"]
        cases = [self._case(Case(g, name, "", 0), RunOptions(Path())) for name, g in groups.items()]
        return rows, cases

    def claims(self, results: dict[str, Any]) -> list[ClaimResult]:
        return claims(*self._rows(results))

    def document(self, results: dict[str, Any]) -> dict[str, Any]:
        """As before #40: the claims inside ``meta``."""
        meta = {**results["meta"], "claims": [c.to_json() for c in self.claims(results)]}
        return {"experiment": self.name, "results": results["results"], "meta": meta}

    def report(self, results: dict[str, Any]) -> str:
        rows, cases = self._rows(results)
        found = claims(rows, cases)
        mapping = results["meta"].get("mapping", "capacity")  # runs before #46: capacity
        other = [MAPPINGS[m] for m in MAPPINGS if m != mapping]
        head = (f"The traces reach OCC as the **{MAPPINGS[mapping]}** "
                "(sim/channels/gnb_view.py; `--mapping`)")  # fmt: skip
        if any(c.mapping is not None for c in cases):
            head += f"; rows marked ({other[0]}) are the same traces the other way, an ablation"
        table = (
            head
            + ".\n\n"
            + mean_table(rows)
            + (
                "\nBitrates, mean per flow: *frame* is what the encoder produced (at the sender), "
                "*received* the frames' payload that arrived at the client, every packet of it "
                "(OCC §6.1's \"frame bitrate arriving at the client\": the claims' metric), "
                "*valid* what was decoded within 150 ms.\n"
            )
        )
        if found:
            table += "\n" + RULE_MD + "\n\n" + "\n".join(claims_table(found)) + "\n"
        return table + "\nEvery run:\n\n" + markdown_table(rows)

    def plots(self, results: dict[str, Any], outputs: list[Any], folder: Path,
              opts: RunOptions) -> list[Path]:  # fmt: skip
        written = write_plots(outputs, folder, PLOT_PREFIX)
        by_name = {c.name: c for c in self.eval_cases(opts)}
        for name in self._x(opts, "timeseries", []):
            written.append(write_timeseries_plot(by_name[name], folder, PLOT_PREFIX,
                                                 seed=int(self._x(opts, "seed", 1)),
                                                 opts=self._options(opts)))  # fmt: skip
        return written


register(OccEval())
