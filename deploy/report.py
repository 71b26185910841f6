"""The run report a person can read and publish: ``<run folder>/report.html``.

Written at the end of every ``octoric run``, and from any run folder with ``octoric report
RUN_DIR``. Self-contained: figures drawn with matplotlib, inlined as SVG with a PNG fallback
(each downloadable), from the files the run leaves:

- ``report.json`` (what stopped it, the configuration, each component's final state);
- ``sim-summary.json`` (per flow: throughput, frame and network latency, losses, stalls; the
  latency percentiles the CDFs are drawn from);
- ``sim-series.jsonl`` (every second, per UE its equal PRB share, delivered rate and OCC's
  ABW; per flow the sender's rate and the gNB's drops);
- ``sim-handovers.jsonl`` (the simulator's handovers) and ``handover-events.jsonl`` (what the
  handover xApp detected), checked against each other (``experiments.handover_check``);
- ``abw-reports.jsonl`` (the run's 30500 subscriber: delivery and age of OCC's reports).

A file that is missing leaves its section out. Every figure's data and the summary tables go
back into ``report.json`` (``analysis``), so a script reads the same numbers the page shows.
Every figure's time axis is simulated seconds (the simulator's clock; it runs in real time in
``octoric run``) and every UE is named by its AMF-UE-NGAP-ID, as in the dashboard.
"""

from __future__ import annotations

import base64
import html
import io
import json
import platform
import sys
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

REPORT_FILE = "report.html"
MAX_UES = 8  # per-UE panels drawn
MAX_POINTS = 1200  # per line in a figure (a long run is thinned; report.json keeps them all)
SCHEME_NAMES = {"occ": "OCC-fed", "gcc": "GCC", "gcc+octopus": "GCC + Octopus dropper"}
STYLE = {"occ": "-", "gcc": "--"}
# a UE's colour, as on the dashboard (dashboard.html's PALETTE)
PALETTE = ("#2563eb", "#dc2626", "#059669", "#d97706", "#7c3aed", "#db2777", "#0891b2", "#65a30d")
VERSIONS_OF = ("octoric", "ricxappframe", "numpy", "matplotlib", "aiohttp", "plotly")


# --- what the page shows, as data ------------------------------------------------------------
@dataclass
class Series:
    name: str
    x: list[float]
    y: list[Any]  # numbers (None: no value), or UE names in a categorical figure
    style: str = "-"  # matplotlib line style; "" for markers only
    color: str | None = None
    marker: str | None = None


@dataclass
class Panel:
    title: str
    series: list[Series]


@dataclass
class Figure:
    key: str
    title: str
    caption: str
    x_label: str
    y_label: str
    panels: list[Panel]
    x_log: bool = False
    categorical_y: bool = False


@dataclass
class FlowRow:
    """One video flow's summary line."""

    flow: int
    name: str  # "UE 1000"
    ue: int  # its AMF-UE-NGAP-ID
    scheme: str
    handovers: int
    throughput_mbps: float | None  # decoded video bitrate
    delivered_mbps: float | None  # every byte the cell delivered to the UE
    frame_p50_ms: float | None
    frame_p95_ms: float | None
    frame_p99_ms: float | None
    network_p50_ms: float | None
    network_p95_ms: float | None
    network_p99_ms: float | None
    frames_lost_pct: float | None  # sent but never decoded
    stall_pct: float | None  # frames later than 150 ms
    octopus_dropped_pkts: int
    queue_dropped_pkts: int
    other_lost_pkts: int  # HARQ and the wired path
    octopus: bool  # the gNB's Octopus dropper was on for the UE (an A1 policy)

    @property
    def group(self) -> str:
        """What the flow is compared as: its scheme, or e.g. ``gcc+octopus``."""
        return f"{self.scheme}+octopus" if self.octopus else self.scheme


@dataclass
class SchemeRow:
    """OCC-fed against GCC: the flows of one scheme together."""

    scheme: str
    flows: int
    throughput_mbps: float | None  # mean per flow
    frame_p50_ms: float | None  # median of the flows' values
    frame_p95_ms: float | None
    frame_p99_ms: float | None
    stall_pct: float | None  # mean per flow


@dataclass
class XappRow:
    xapp: str
    what: str
    value: str


@dataclass
class Analysis:
    flows: list[FlowRow] = field(default_factory=list)
    schemes: list[SchemeRow] = field(default_factory=list)
    xapps: list[XappRow] = field(default_factory=list)
    handover_check: dict[str, Any] | None = None
    figures: list[Figure] = field(default_factory=list)


# --- reading the run folder ------------------------------------------------------------------
def _lines(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue  # a torn last line
        if isinstance(row, dict):
            out.append(row)
    return out


def _json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _r(v: Any, nd: int = 2) -> float | None:
    return None if not isinstance(v, (int, float)) else round(float(v), nd)


def _median(values: list[float]) -> float | None:
    v = sorted(values)
    if not v:
        return None
    m = len(v) // 2
    return round(v[m] if len(v) % 2 else (v[m - 1] + v[m]) / 2, 2)


class Clock:
    """Wall clock (unix s) -> the simulator's seconds, from the series' pairs of both (the live
    simulator keeps them a constant offset apart, unless it fell behind)."""

    def __init__(self, series: list[dict[str, Any]], truth: list[dict[str, Any]]) -> None:
        pairs = [
            (r["updated_unix"], r["sim_seconds"])
            for r in series
            if isinstance(r.get("updated_unix"), (int, float))
            and isinstance(r.get("sim_seconds"), (int, float))
        ]
        pairs += [
            (r["unix_ms"] / 1e3, r["sim_s"])
            for r in truth
            if isinstance(r.get("unix_ms"), (int, float))
            and isinstance(r.get("sim_s"), (int, float))
        ]
        self.pairs = sorted(pairs)

    def sim_s(self, unix_s: float) -> float | None:
        if not self.pairs:
            return None
        # the offset of the nearest pair before (else the first)
        best = self.pairs[0]
        for p in self.pairs:
            if p[0] > unix_s:
                break
            best = p
        return round(float(unix_s - (best[0] - best[1])), 3)


def _ue_names(summary: dict[str, Any]) -> dict[int, int]:
    """Engine UE index -> AMF-UE-NGAP-ID."""
    return {int(u["ue"]): int(u.get("amf_ue_ngap_id", u["ue"])) for u in summary.get("ues") or []}


def _scheme_of_ue(summary: dict[str, Any]) -> dict[int, str]:
    amf = _ue_names(summary)
    out: dict[int, str] = {}
    for f in summary.get("flows") or []:
        ue = amf.get(int(f.get("ue", -1)), int(f.get("ue", -1)))
        out.setdefault(ue, str(f.get("scheme", "")))
    return out


def ue_colour(ue: int) -> str:
    return PALETTE[ue % len(PALETTE)]


def scheme_label(scheme: str) -> str:
    return SCHEME_NAMES.get(scheme, scheme)


# --- the tables --------------------------------------------------------------------------------
def flow_rows(summary: dict[str, Any]) -> list[FlowRow]:
    amf = _ue_names(summary)
    ues = {int(u["ue"]): u for u in summary.get("ues") or []}
    sim_s = float(summary.get("sim_seconds") or 0) or None
    per_ue: dict[int, int] = {}
    for f in summary.get("flows") or []:
        per_ue[int(f.get("ue", -1))] = per_ue.get(int(f.get("ue", -1)), 0) + 1
    out: list[FlowRow] = []
    for f in summary.get("flows") or []:
        if "frame_latency_ms" not in f:
            continue  # not a video flow
        i = int(f.get("ue", -1))
        u = ues.get(i, {})
        fl, nl = f.get("frame_latency_ms") or {}, f.get("network_latency_ms") or {}
        sent, dec = f.get("frames_sent") or 0, f.get("frames_decoded") or 0
        name = f"UE {amf.get(i, i)}" + (f" flow {f['flow']}" if per_ue.get(i, 0) > 1 else "")
        delivered = u.get("delivered_bytes")
        out.append(
            FlowRow(
                flow=int(f.get("flow", len(out))),
                ue=amf.get(i, i),
                name=name,
                scheme=str(f.get("scheme", "")),
                handovers=int(u.get("handovers") or 0),
                throughput_mbps=_r((f.get("decoded_bitrate_kbps") or 0) / 1e3, 3)
                if f.get("decoded_bitrate_kbps") is not None
                else None,
                delivered_mbps=_r(delivered * 8 / sim_s / 1e6, 3)
                if sim_s and isinstance(delivered, (int, float))
                else None,
                frame_p50_ms=_r(fl.get("p50"), 1),
                frame_p95_ms=_r(fl.get("p95"), 1),
                frame_p99_ms=_r(fl.get("p99"), 1),
                network_p50_ms=_r(nl.get("p50"), 1),
                network_p95_ms=_r(nl.get("p95"), 1),
                network_p99_ms=_r(nl.get("p99"), 1),
                frames_lost_pct=_r(100.0 * (sent - dec) / sent, 2) if sent else None,
                stall_pct=_r(100.0 * f["stall_rate"], 2)
                if f.get("stall_rate") is not None
                else None,
                octopus_dropped_pkts=int(f.get("dropped_packets") or 0),
                queue_dropped_pkts=int(f.get("tail_dropped_packets") or 0),
                other_lost_pkts=int(f.get("harq_lost_packets") or 0)
                + int(f.get("wired_lost_packets") or 0),
                octopus=bool(u.get("dropper")) or bool(f.get("dropped_packets")),
            )
        )
    return out


def scheme_rows(rows: list[FlowRow]) -> list[SchemeRow]:
    out = []
    for scheme in sorted({r.group for r in rows}, key=lambda s: (s != "occ", s != "gcc", s)):
        sel = [r for r in rows if r.group == scheme]

        def vals(key: str, sel: list[FlowRow] = sel) -> list[float]:
            return [v for r in sel if isinstance(v := getattr(r, key), (int, float))]

        thr, stall = vals("throughput_mbps"), vals("stall_pct")
        out.append(
            SchemeRow(
                scheme=scheme,
                flows=len(sel),
                throughput_mbps=_r(sum(thr) / len(thr), 3) if thr else None,
                frame_p50_ms=_median(vals("frame_p50_ms")),
                frame_p95_ms=_median(vals("frame_p95_ms")),
                frame_p99_ms=_median(vals("frame_p99_ms")),
                stall_pct=_r(sum(stall) / len(stall), 2) if stall else None,
            )
        )
    return out


def _fmt_spread(d: dict[str, Any] | None, unit: str = "ms") -> str:
    if not d or d.get("p50") is None:
        return "-"
    return f"p50 {d['p50']:.2f} {unit}, p99 {d['p99']:.2f} {unit}"


def xapp_rows(
    run_dir: Path, report: dict[str, Any], summary: dict[str, Any], hcheck: dict[str, Any] | None
) -> list[XappRow]:
    comps = report.get("components") or {}
    out: list[XappRow] = []
    occ = comps.get("xapp-occ")
    if isinstance(occ, dict):
        lat = occ.get("latency_ms") or {}
        if lat.get("0.5") is not None:
            out.append(
                XappRow(
                    "occ",
                    "indication in -> feedback out (xApp)",
                    f"p50 {lat['0.5']:.3f} ms, p99 {lat.get('0.99') or 0:.3f} ms",
                )
            )
        out.append(
            XappRow(
                "occ",
                "UEs / OCC-fed flows registered",
                f"{len(occ.get('ues') or [])} / {occ.get('flows')}",
            )
        )
        rows = _lines(run_dir / "abw-reports.jsonl")
        got = [r for r in rows if r.get("reports")]
        if got:
            n = sum(int(r["reports"]) for r in got)
            p50d = _median([r["delivery_ms"]["p50"] for r in got if r["delivery_ms"]["p50"]])
            p99d = max((r["delivery_ms"]["p99"] or 0 for r in got), default=0)
            p50a = _median([r["age_ms"]["p50"] for r in got if r["age_ms"]["p50"]])
            p99a = max((r["age_ms"]["p99"] or 0 for r in got), default=0)
            out.append(
                XappRow(
                    "occ", "30500 reports received by the run's subscriber", f"{n} in {len(got)} s"
                )
            )
            if p50d is not None:
                out.append(
                    XappRow(
                        "occ",
                        "30500 delivery, OCC's send -> subscriber",
                        f"median p50 {p50d:.2f} ms, worst p99 {p99d:.2f} ms",
                    )
                )
            if p50a is not None:
                out.append(
                    XappRow(
                        "occ",
                        "ABW age at the subscriber, KPM granule end -> received",
                        f"median p50 {p50a:.2f} ms, worst p99 {p99a:.2f} ms",
                    )
                )
    ho = comps.get("xapp-handover")
    if isinstance(ho, dict):
        ev = ho.get("ho_events") or {}
        out.append(
            XappRow(
                "handover",
                "events detected",
                ", ".join(f"{k} {v}" for k, v in ev.items()) or "none",
            )
        )
        lat = ho.get("latency_ms") or {}
        if isinstance(lat, dict) and lat.get("0.5") is not None:
            out.append(
                XappRow(
                    "handover",
                    "RC indication in -> 30501 sent (xApp)",
                    f"p50 {lat['0.5']:.3f} ms, p99 {lat.get('0.99') or 0:.3f} ms",
                )
            )
    if hcheck is not None:
        out.append(
            XappRow(
                "handover",
                "against the simulator's handovers (after the first 10 s)",
                f"{hcheck['handovers']} judged, {hcheck['missed']} missed "
                f"({hcheck['missed_starts']} starts, {hcheck['missed_ends']} ends), "
                f"{hcheck['spurious']} spurious, {hcheck['wrong_nodes']} wrong nodes",
            )
        )
        out.append(
            XappRow(
                "handover",
                "detection delay, gNB -> xApp: start / end",
                f"{_fmt_spread(hcheck.get('start_delay_ms'))} / "
                f"{_fmt_spread(hcheck.get('end_delay_ms'))}",
            )
        )
    octo = comps.get("xapp-octopus")
    if isinstance(octo, dict):
        pols = octo.get("policies") or []
        on = sum(1 for p in pols if p.get("state") == "enforced")
        out.append(XappRow("octopus", "A1 policies held / enforced", f"{len(pols)} / {on}"))
        amf = _ue_names(summary)
        drops = {
            f"UE {amf.get(int(u['ue']), u['ue'])}": u["dropper"]
            for u in summary.get("ues") or []
            if u.get("dropper")
        }
        for name, d in drops.items():
            out.append(
                XappRow(
                    "octopus",
                    f"gNB dropper on {name}",
                    f"{d.get('dropped_packets', 0)} packets dropped; messages: "
                    f"{d.get('dropped_msgs_by_msg', 0)} by priority, "
                    f"{d.get('dropped_msgs_by_bitrate', 0)} by bitrate",
                )
            )
        if not drops:
            out.append(XappRow("octopus", "gNB dropper", "on for no UE at the end"))
    return out


def _handover_check(run_dir: Path) -> dict[str, Any] | None:
    from octoric.deploy.handover_check import check_run

    try:
        return check_run(run_dir).to_json()
    except (FileNotFoundError, ValueError, KeyError):
        return None


# --- the figures, as data ----------------------------------------------------------------------
def _thin(x: list[float], ys: list[list[Any]]) -> tuple[list[float], list[list[Any]]]:
    step = max(1, len(x) // MAX_POINTS)
    return x[::step], [y[::step] for y in ys]


def rates_figure(series: list[dict[str, Any]], schemes: dict[int, str]) -> Figure | None:
    by_ue: dict[int, dict[str, list[Any]]] = {}
    for row in series:
        t = row.get("sim_seconds")
        targets = {int(f["ue"]): f.get("target_kbps") for f in row.get("flow_rates") or []}
        for u in row.get("ue_rates") or []:
            ue = int(u["ue"])
            d = by_ue.setdefault(ue, {"t": [], "cap": [], "thp": [], "abw": [], "tgt": []})
            d["t"].append(t)
            for key, v in (
                ("cap", u.get("capacity_kbps")),
                ("thp", u.get("throughput_kbps")),
                ("abw", u.get("abw_kbps")),
                ("tgt", targets.get(ue)),
            ):
                d[key].append(None if v is None else round(v / 1000, 3))
    if not by_ue:
        return None
    panels = []
    for ue in sorted(by_ue)[:MAX_UES]:
        d = by_ue[ue]
        scheme = schemes.get(ue, "")
        panels.append(
            Panel(
                f"UE {ue}" + (f" · {scheme_label(scheme)}" if scheme else ""),
                [
                    Series("equal PRB share", d["t"], d["cap"], color="0.6"),
                    Series("delivered", d["t"], d["thp"], color="tab:blue"),
                    Series("OCC ABW", d["t"], d["abw"], color="tab:red"),
                    Series("sender's rate", d["t"], d["tgt"], style=":", color="tab:green"),
                ],
            )
        )
    return Figure(
        "rates",
        "Per-UE rates: OCC's available bandwidth, the delivered rate, the sender's rate",
        "Every second, per UE: what the cell delivered (blue), what the OCC xApp told the UE's "
        "sender (red, OCC-fed flows only), the rate the sender aimed at (green), and the UE's "
        "equal share of its cell's PRBs at its current MCS (grey). The equal share is no "
        "capacity: the PF scheduler gives a UE more when the others' queues are empty, so "
        "delivered and ABW may sit above it.",
        "simulated s",
        "Mbit/s",
        panels,
    )


def cdf_figure(summary: dict[str, Any], which: str) -> Figure | None:
    lq = summary.get("latency_quantiles") or {}
    pct = lq.get("percentiles") or []
    rows = {r.flow: r for r in flow_rows(summary)}  # the summary table's names
    series = []
    for q in lq.get("flows") or []:
        vals = q.get(f"{which}_ms")
        r = rows.get(int(q["flow"]))
        if not vals or r is None:
            continue
        scheme = r.scheme
        series.append(
            Series(
                f"{r.name} · {scheme_label(r.group)}",
                list(vals),
                [p / 100 for p in pct],
                style=STYLE.get(scheme, "-."),
                color=ue_colour(r.ue),
            )
        )
    if not series:
        return None
    what, unit = {
        "frame": ("Frame latency (encoder to decoder)", "frame"),
        "network": ("Network latency (sender to receiver)", "packet"),
    }[which]
    return Figure(
        f"cdf_{which}",
        f"{what}: CDF per flow",
        f"{what} of every {unit} the flow's receiver got, per flow: solid OCC-fed, dashed GCC "
        "(log scale; from each flow's percentiles 0-100).",
        "ms",
        "fraction",
        [Panel("", series)],
        x_log=True,
    )


def handover_figure(
    truth: list[dict[str, Any]], events: list[dict[str, Any]], clock: Clock
) -> Figure | None:
    starts = [r for r in truth if r.get("event") == "start" and "sim_s" in r]
    if not starts and not events:
        return None
    series = [
        Series(
            "handover (simulator)",
            [round(r["sim_s"], 3) for r in starts],
            [f"UE {r['ue']}" for r in starts],
            style="",
            color="0.5",
            marker="|",
        )
    ]
    kinds = (
        ("start", "tab:orange", "4"),
        ("complete", "tab:green", "3"),
        ("failure", "tab:red", "x"),
        ("ping_pong", "tab:purple", "."),
    )
    for kind, color, mark in kinds:
        sel = [
            (clock.sim_s(e["t_ms"] / 1e3), e)
            for e in events
            if e.get("event") == kind and isinstance(e.get("t_ms"), (int, float))
        ]
        got = [(t, e) for t, e in sel if t is not None]
        if got:
            series.append(
                Series(
                    f"{kind} (xApp)",
                    [t for t, _ in got],
                    [f"UE {e['ue']}" for _, e in got],
                    style="",
                    color=color,
                    marker=mark,
                )
            )
    return Figure(
        "handovers",
        "Handovers: the simulator's and what the handover xApp detected",
        "Each handover the simulator made (grey tick) and the handover xApp's events for it "
        "(start, complete, failure, ping-pong), on the simulator's clock.",
        "simulated s",
        "",
        [Panel("", series)],
        categorical_y=True,
    )


def drops_figure(series: list[dict[str, Any]], schemes: dict[int, str]) -> Figure | None:
    by_flow: dict[int, dict[str, Any]] = {}
    for row in series:
        for f in row.get("flow_rates") or []:
            d = by_flow.setdefault(int(f["flow"]), {"ue": f["ue"], "t": [], "oct": [], "q": []})
            d["t"].append(row.get("sim_seconds"))
            d["oct"].append(f.get("dropped_pkts"))
            d["q"].append(f.get("tail_dropped_pkts"))
    out = []
    for d in by_flow.values():
        name = f"UE {d['ue']}"
        if any(v for v in d["oct"]):
            out.append(Series(f"{name} Octopus", d["t"], d["oct"], color=ue_colour(int(d["ue"]))))
        if any(v for v in d["q"]):
            out.append(
                Series(
                    f"{name} queue full", d["t"], d["q"], style=":", color=ue_colour(int(d["ue"]))
                )
            )
    if not out:
        return None
    return Figure(
        "drops",
        "Packets dropped at the gNB",
        "Cumulative, per flow: dropped by the Octopus dropper an A1 policy switched on (solid) "
        "and by a full queue (dotted).",
        "simulated s",
        "packets",
        [Panel("", out)],
    )


# --- drawing -----------------------------------------------------------------------------------
def _draw(fig_data: Figure) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = len(fig_data.panels)
    cols = 2 if n > 1 else 1
    rows = (n + cols - 1) // cols
    if fig_data.categorical_y:
        names = sorted(
            {str(y) for s in fig_data.panels[0].series for y in s.y}, key=lambda s: (len(s), s)
        )
        size = (10, 0.35 * len(names) + 1.4)
    else:
        names = []
        size = (6 * cols if n > 1 else 8, 2.3 * rows + 0.6 if n > 1 else 3.6)
    fig, axes = plt.subplots(rows, cols, figsize=size, squeeze=False, sharex=n > 1)
    for ax, panel in zip(axes.flat, fig_data.panels, strict=False):
        for s in panel.series:
            x, (y,) = _thin(s.x, [s.y])
            if fig_data.categorical_y:
                ax.scatter(
                    x,
                    [names.index(str(v)) for v in y],
                    marker=s.marker or "o",
                    # the simulator's tick tall, behind the xApp's events
                    s=500 if s.marker == "|" else 30,
                    zorder=1 if s.marker == "|" else 2,
                    color=s.color,
                    label=s.name,
                )
            else:
                yy = [float("nan") if v is None else v for v in y]
                ax.plot(x, yy, s.style or "-", color=s.color, lw=1.1, label=s.name, marker=s.marker)
        if panel.title:
            ax.set_title(panel.title, fontsize=9)
        ax.set_ylabel(fig_data.y_label, fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(True, lw=0.3, alpha=0.5)
        if fig_data.x_log:
            from matplotlib.ticker import FixedLocator, NullFormatter, ScalarFormatter

            ax.set_xscale("log")
            lo, hi = ax.get_xlim()
            ticks = [t for t in (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000)
                     if lo <= t <= hi]  # fmt: skip
            ax.xaxis.set_major_locator(FixedLocator(ticks))
            ax.xaxis.set_major_formatter(ScalarFormatter())
            ax.xaxis.set_minor_formatter(NullFormatter())
        if fig_data.categorical_y:
            ax.set_yticks(range(len(names)), names, fontsize=7)
            ax.set_ylim(-0.6, len(names) - 0.4)  # room for the tall ticks of the first and last
    for ax in list(axes.flat)[n:]:
        ax.set_visible(False)
    for c in range(cols):  # the lowest panel drawn in each column carries the x axis
        col = [ax for ax in axes[:, c] if ax.get_visible()]
        if col:
            col[-1].xaxis.set_tick_params(labelbottom=True)
            col[-1].set_xlabel(fig_data.x_label, fontsize=8)
    first = axes.flat[0]
    many = sum(len(p.series) for p in fig_data.panels[:1]) > 6
    if fig_data.categorical_y or many:
        leg = first.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
        if fig_data.categorical_y:  # the legend's markers at one size (the ticks are tall)
            for h in leg.legend_handles:
                if hasattr(h, "set_sizes"):
                    h.set_sizes([30])
    else:
        first.legend(fontsize=7, loc="best")
    fig.tight_layout()
    return fig


def _encode(fig: Any) -> tuple[str, str]:
    """(SVG text, PNG as base64)."""
    svg, png = io.StringIO(), io.BytesIO()
    fig.savefig(svg, format="svg", bbox_inches="tight")
    fig.savefig(png, format="png", dpi=100, bbox_inches="tight")
    return svg.getvalue(), base64.b64encode(png.getvalue()).decode()


def _figure_html(f: Figure) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = _draw(f)
    try:
        svg, png = _encode(fig)
    finally:
        plt.close(fig)
    svg_b64 = base64.b64encode(svg.encode()).decode()
    t = html.escape(f.title)
    return (
        f'<figure id="fig-{f.key}"><h3>{t}</h3>'
        f'<picture><source type="image/svg+xml" srcset="data:image/svg+xml;base64,{svg_b64}">'
        f'<img alt="{t}" src="data:image/png;base64,{png}"></picture>'
        f"<figcaption>{html.escape(f.caption)} "
        f'<a download="{f.key}.svg" href="data:image/svg+xml;base64,{svg_b64}">SVG</a> '
        f'<a download="{f.key}.png" href="data:image/png;base64,{png}">PNG</a> '
        f"(data: report.json, analysis.figures.{html.escape(f.key)})</figcaption></figure>"
    )


# --- the page ----------------------------------------------------------------------------------
def _cell(v: Any) -> str:
    if v is None:
        return "<td>-</td>"
    if isinstance(v, float):
        return f'<td class="n">{v:g}</td>'
    if isinstance(v, int):
        return f'<td class="n">{v}</td>'
    return f"<td>{html.escape(str(v))}</td>"


def _table(head: list[str], rows: list[list[Any]], cls: str) -> str:
    th = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(_cell(v) for v in r) + "</tr>" for r in rows)
    return f'<table class="{cls}"><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>'


def analyse(run_dir: Path) -> Analysis:
    report = _json(run_dir / "report.json") or {}
    summary = _json(run_dir / "sim-summary.json") or {}
    series = _lines(run_dir / "sim-series.jsonl")
    truth = _lines(run_dir / "sim-handovers.jsonl")
    events = _lines(run_dir / "handover-events.jsonl")
    schemes = _scheme_of_ue(summary)
    a = Analysis()
    a.flows = flow_rows(summary)
    a.schemes = scheme_rows(a.flows)
    a.handover_check = _handover_check(run_dir)
    a.xapps = xapp_rows(run_dir, report, summary, a.handover_check)
    figs = [
        rates_figure(series, schemes),
        cdf_figure(summary, "frame"),
        cdf_figure(summary, "network"),
        handover_figure(truth, events, Clock(series, truth)),
        drops_figure(series, schemes),
    ]
    a.figures = [f for f in figs if f is not None]
    return a


def versions() -> dict[str, str]:
    out = {"python": platform.python_version(), "platform": platform.platform()}
    for name in VERSIONS_OF:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    commit = _git_commit()
    if commit:
        out["octoric commit"] = commit
    return out


def _git_commit() -> str | None:
    """The source tree's commit when octoric runs from a checkout (make setup's editable
    install); None from a wheel."""
    import subprocess

    root = Path(__file__).resolve().parents[1]
    if not (root / ".git").exists():
        return None
    try:
        out = subprocess.run(
            ["git", "-C", str(root), "describe", "--always", "--dirty"],
            capture_output=True,
            text=True,
            timeout=5,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None


def build(run_dir: Path, analysis: Analysis | None = None) -> str:
    """The report's HTML for ``run_dir``."""
    import yaml

    report = _json(run_dir / "report.json") or {}
    a = analysis if analysis is not None else analyse(run_dir)
    parts: list[str] = []
    summary = _json(run_dir / "sim-summary.json") or {}
    cfg = report.get("config") or {}
    vers: dict[str, Any] = report.get("versions") or versions()
    scen = (cfg.get("sim") or {}).get("scenario") or summary.get("scenario")
    parts.append(
        f"<p>Run folder <code>{html.escape(str(run_dir))}</code>; ran "
        f"{report.get('seconds', '?')} s ({_r(summary.get('sim_seconds'), 1) or '?'} simulated), "
        f"stopped because: {html.escape(str(report.get('stopped_because', '?')))}"
        + (f"; scenario <code>{html.escape(str(scen))}</code>" if scen else "")
        + ".</p>"
    )
    if a.flows:
        head = [
            "flow",
            "scheme",
            "handovers",
            "throughput Mbit/s",
            "delivered Mbit/s",
            "frame p50 ms",
            "frame p95 ms",
            "frame p99 ms",
            "network p50 ms",
            "network p95 ms",
            "network p99 ms",
            "frames lost %",
            "stalls %",
            "Octopus drops (pkts)",
            "queue-full drops (pkts)",
            "HARQ + wired lost (pkts)",
        ]
        rows = [
            [
                r.name,
                scheme_label(r.group),
                r.handovers,
                r.throughput_mbps,
                r.delivered_mbps,
                r.frame_p50_ms,
                r.frame_p95_ms,
                r.frame_p99_ms,
                r.network_p50_ms,
                r.network_p95_ms,
                r.network_p99_ms,
                r.frames_lost_pct,
                r.stall_pct,
                r.octopus_dropped_pkts,
                r.queue_dropped_pkts,
                r.other_lost_pkts,
            ]
            for r in a.flows
        ]
        parts.append(
            '<h2 id="summary">Summary per flow</h2><p>Throughput: the decoded video bitrate; '
            "delivered: every byte the cell delivered to the UE; frame latency from the encoder "
            "to the decoder, network latency per packet; frames lost: sent but never decoded; "
            "stalls: frames later than 150 ms.</p>" + _table(head, rows, "summary")
        )
    if len(a.schemes) > 1:
        head = [
            "scheme",
            "flows",
            "throughput Mbit/s (mean)",
            "frame p50 ms (median)",
            "frame p95 ms (median)",
            "frame p99 ms (median)",
            "stalls % (mean)",
        ]
        rows = [
            [
                scheme_label(s.scheme),
                s.flows,
                s.throughput_mbps,
                s.frame_p50_ms,
                s.frame_p95_ms,
                s.frame_p99_ms,
                s.stall_pct,
            ]
            for s in a.schemes
        ]
        parts.append(
            '<h2 id="schemes">OCC-fed against GCC</h2><p>The flows of each scheme together '
            "(in the demo scenario each OCC-fed flow has a GCC one on a UE of the same channel "
            "statistics, cell and mobility; the flow under the Octopus dropper is apart).</p>"
            + _table(head, rows, "schemes")
        )
    if a.xapps:
        parts.append(
            '<h2 id="xapps">Per xApp</h2>'
            + _table(
                ["xApp", "what", "value"], [[x.xapp, x.what, x.value] for x in a.xapps], "xapps"
            )
        )
    parts += [_figure_html(f) for f in a.figures]
    parts += _testbed_sections(run_dir)
    parts.append(
        '<h2 id="config">Configuration and versions</h2>'
        f"<pre>{html.escape(yaml.safe_dump(cfg, sort_keys=False)) if cfg else '(none)'}</pre>"
        + _table(["component", "version"], [[k, v] for k, v in vers.items()], "versions")
    )
    comps = report.get("components") or {}
    raw = "".join(
        f"<details><summary>{html.escape(name)}</summary>"
        f"<pre>{html.escape(json.dumps(state, indent=1, default=str))}</pre></details>"
        for name, state in comps.items()
    )
    parts.append(f'<h2 id="components">Components at the end</h2>{raw}')
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        "<title>octoric run report</title><style>"
        "body{font:14px/1.4 system-ui,sans-serif;max-width:1280px;margin:2em auto;color:#222;"
        "padding:0 1em}img,picture{max-width:100%}table{border-collapse:collapse;margin:.5em 0}"
        "td:first-child{white-space:nowrap}td,th{padding:2px 8px;text-align:left;"
        "border-bottom:1px solid #e5e7eb;vertical-align:top}"
        "th{background:#f3f4f6;font-weight:600}td.n{text-align:right;"
        "font-variant-numeric:tabular-nums}figure{margin:1.5em 0}figcaption{color:#444;"
        "font-size:13px}pre{background:#f8f8f8;padding:.5em;overflow:auto;font-size:12px;"
        "max-height:40em}details{margin:.2em 0}summary{cursor:pointer}"
        "</style></head><body><h1>octoric run report</h1>" + "".join(parts) + "</body></html>"
    )


def _testbed_sections(run_dir: Path) -> list[str]:
    """``octoric testbed live``: its steps and observations, and the real gNB's DL bitrate
    beside OCC's ABW (``testbed.json``, ``testbed.png``)."""
    tb = _json(run_dir / "testbed.json")
    if not tb:
        return []
    lines = "".join(f"<li>{html.escape(str(ln))}</li>" for ln in tb.get("summary_lines") or [])
    out = [f"<h2>Real gNB: steps and what was seen</h2><ul>{lines}</ul>"]
    png = run_dir / "testbed.png"
    if png.exists():
        data = base64.b64encode(png.read_bytes()).decode()
        out.append(
            "<h2>OCC's ABW against the gNB's own DL bitrate</h2><p>Per test UE, every second: "
            "the DL bitrate srsRAN's scheduler metrics report (its JSON metrics) and the target "
            "the OCC xApp published for that UE (30500).</p>"
            f'<img alt="ABW against the gNB DL bitrate" src="data:image/png;base64,{data}">'
        )
    return out


def write(run_dir: Path) -> Path:
    """Write ``<run_dir>/report.html``, and the analysis (tables, figures' data, versions)
    into ``report.json``; the HTML's path."""
    a = analyse(run_dir)
    rpath = run_dir / "report.json"
    report = _json(rpath)
    if report is not None:
        report.setdefault("versions", versions())
        report["analysis"] = asdict(a)
        tmp = rpath.with_name(rpath.name + ".tmp")
        tmp.write_text(json.dumps(report, indent=2, default=str), encoding="utf-8")
        tmp.replace(rpath)
    path = run_dir / REPORT_FILE
    path.write_text(build(run_dir, a), encoding="utf-8")
    return path


if __name__ == "__main__":  # python -m octoric.deploy.report RUN_DIR
    print(write(Path(sys.argv[1])))
