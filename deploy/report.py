"""The run report a person can look at: ``<run folder>/report.html``.

Written at the end of every ``octoric run``, and from any run folder with ``octoric report
RUN_DIR``. Self-contained (plots inlined as PNG, drawn with matplotlib), from the files the run
leaves: ``report.json`` (what stopped it, each component's final state), ``sim-series.jsonl``
(per-UE capacity, throughput and OCC's ABW every second), ``sim-summary.json`` (frame latency
per flow), ``sim-handovers.jsonl`` (the simulator's handovers) and ``handover-events.jsonl``
(what the handover xApp detected). A file that is missing leaves its section out.
"""

from __future__ import annotations

import base64
import html
import io
import json
from pathlib import Path
from typing import Any

REPORT_FILE = "report.html"
MAX_UES = 8  # plotted per-UE panels


def _lines(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue  # a torn last line
    return out


def _json(path: Path) -> dict[str, Any] | None:
    try:
        data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        return data
    except (OSError, ValueError):
        return None


def _png(fig: Any) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    return base64.b64encode(buf.getvalue()).decode()


def _rates_figure(series: list[dict[str, Any]]) -> Any | None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    by_ue: dict[int, dict[str, list[float | None]]] = {}
    for row in series:
        t = row.get("sim_seconds")
        for u in row.get("ue_rates") or []:
            d = by_ue.setdefault(int(u["ue"]), {"t": [], "cap": [], "thp": [], "abw": []})
            d["t"].append(t)
            for key, name in (("cap", "capacity_kbps"), ("thp", "throughput_kbps"),
                              ("abw", "abw_kbps")):  # fmt: skip
                v = u.get(name)
                d[key].append(None if v is None else v / 1000)
    if not by_ue:
        return None
    ues = sorted(by_ue)[:MAX_UES]
    cols = 2 if len(ues) > 1 else 1
    rows = (len(ues) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(6 * cols, 2.4 * rows), squeeze=False,
                             sharex=True)  # fmt: skip
    for ax, ue in zip(axes.flat, ues, strict=False):
        d = by_ue[ue]
        ax.plot(d["t"], d["cap"], color="0.6", lw=1, label="capacity (true)")
        ax.plot(d["t"], d["thp"], color="tab:blue", lw=1, label="delivered")
        ax.plot(d["t"], d["abw"], color="tab:red", lw=1.2, label="OCC ABW")
        ax.set_title(f"UE {ue}", fontsize=9)
        ax.set_ylabel("Mbit/s", fontsize=8)
        ax.tick_params(labelsize=7)
    for ax in list(axes.flat)[len(ues) :]:
        ax.set_visible(False)
    axes.flat[0].legend(fontsize=7, loc="upper right")
    for ax in axes[-1]:
        ax.set_xlabel("simulated s", fontsize=8)
    fig.tight_layout()
    return fig


def _handover_figure(truth: list[dict[str, Any]], events: list[dict[str, Any]]) -> Any | None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    starts = [r for r in truth if r.get("event") == "start"]
    if not starts and not events:
        return None
    t0 = min([r["unix_ms"] for r in truth] + [e["t_ms"] for e in events if "t_ms" in e])
    ues = sorted({int(r["ue"]) for r in starts} | {int(e["ue"]) for e in events})
    row = {ue: i for i, ue in enumerate(ues)}
    fig, ax = plt.subplots(figsize=(12, 0.35 * len(ues) + 1.2))
    ax.scatter([(r["unix_ms"] - t0) / 1000 for r in starts], [row[int(r["ue"])] for r in starts],
               marker="|", s=200, color="0.5", label="handover (simulator)")  # fmt: skip
    kinds = (("start", "tab:orange", "4"), ("complete", "tab:green", "3"),
             ("failure", "tab:red", "x"), ("ping_pong", "tab:purple", "."))  # fmt: skip
    for kind, color, mark in kinds:
        sel = [e for e in events if e.get("event") == kind and "t_ms" in e]
        if sel:
            ax.scatter([(e["t_ms"] - t0) / 1000 for e in sel], [row[int(e["ue"])] for e in sel],
                       marker=mark, s=40, color=color, label=f"{kind} (xApp)")  # fmt: skip
    ax.set_yticks(range(len(ues)), [f"UE {u}" for u in ues], fontsize=7)
    ax.set_xlabel("s since the first handover record", fontsize=8)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    return fig


def _latency_figure(summary: dict[str, Any]) -> Any | None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    flows = [f for f in summary.get("flows") or [] if (f.get("frame_latency_ms") or {}).get("p50")]
    if not flows:
        return None
    names = [f"ue{f.get('ue')} {f.get('scheme', '')}" for f in flows]
    fig, ax = plt.subplots(figsize=(max(6, 0.7 * len(flows)), 3))
    x = range(len(flows))
    ax.bar([i - 0.2 for i in x], [f["frame_latency_ms"]["p50"] for f in flows], 0.4, label="p50")
    ax.bar([i + 0.2 for i in x], [f["frame_latency_ms"]["p99"] for f in flows], 0.4, label="p99")
    ax.set_xticks(list(x), names, rotation=30, fontsize=7)
    ax.set_ylabel("frame latency, ms", fontsize=8)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def build(run_dir: Path) -> str:
    """The report's HTML for ``run_dir``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    report = _json(run_dir / "report.json") or {}
    summary = _json(run_dir / "sim-summary.json") or {}
    sections: list[str] = []
    figures = [
        ("Per-UE available bandwidth against the true capacity",
         "What the OCC xApp told each UE's sender (red) beside what the cell could carry (grey) "
         "and what was delivered (blue), every second.",
         _rates_figure(_lines(run_dir / "sim-series.jsonl"))),
        ("Handovers", "The simulator's handovers (grey ticks) and the handover xApp's events.",
         _handover_figure(_lines(run_dir / "sim-handovers.jsonl"),
                          _lines(run_dir / "handover-events.jsonl"))),
        ("Frame latency per flow", "From the encoder to the decoder, per video flow.",
         _latency_figure(summary)),
    ]  # fmt: skip
    for title, caption, fig in figures:
        if fig is None:
            continue
        sections.append(
            f"<h2>{html.escape(title)}</h2><p>{html.escape(caption)}</p>"
            f'<img alt="{html.escape(title)}" src="data:image/png;base64,{_png(fig)}">'
        )
        plt.close(fig)
    sections += _testbed_sections(run_dir)
    rows = "".join(
        f"<tr><td>{html.escape(name)}</td><td><code>{html.escape(_brief(state))}</code></td></tr>"
        for name, state in (report.get("components") or {}).items()
    )
    head = (
        f"<p>Run folder <code>{html.escape(str(run_dir))}</code>; ran "
        f"{report.get('seconds', '?')} s, stopped because: "
        f"{html.escape(str(report.get('stopped_because', '?')))}.</p>"
    )
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>octoric run report</title>"
        "<style>body{font-family:sans-serif;max-width:1200px;margin:2em auto;color:#222}"
        "img{max-width:100%}td{vertical-align:top;padding:2px 8px}code{font-size:12px}"
        "</style></head><body><h1>octoric run report</h1>"
        f"{head}{''.join(sections)}<h2>Components at the end</h2><table>{rows}</table>"
        "</body></html>"
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


def _brief(state: Any) -> str:
    text = json.dumps(state, default=str)
    return text if len(text) < 600 else text[:600] + " ..."


def write(run_dir: Path) -> Path:
    """Write ``<run_dir>/report.html``; its path."""
    path = run_dir / REPORT_FILE
    path.write_text(build(run_dir), encoding="utf-8")
    return path
