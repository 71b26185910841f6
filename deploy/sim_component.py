"""The live simulator in ``octoric run``: one child process,
``python -m octoric.cli sim run --live ...``, started after the RIC (``deploy.embedded``),
connected to its E2 port. It rewrites ``<run folder>/sim-status.json``
every second (the status line reads it) and writes ``sim-summary.json`` when it stops
(SIGTERM from the supervisor); ``report()`` carries that summary into the run report.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import time
from pathlib import Path
from typing import Any

from octoric.errors import OctoricError
from octoric.supervisor import ChildProcess, RunContext

log = logging.getLogger("octoric.sim")
SETUP_WAIT_S = 30.0

STATUS_FILE = "sim-status.json"
SUMMARY_FILE = "sim-summary.json"
HANDOVER_LOG = "sim-handovers.jsonl"  # ground truth (sim.ground_truth)
SERIES_FILE = "sim-series.jsonl"  # per-UE rates every second (the report's plots)


def live_argv(ctx: RunContext, occ_flows_url: str | None = None) -> list[str]:
    """The simulator's command line; ``occ_flows_url``: the OCC xApp's POST /occ/v1/flows of
    this run (its video flows are then OCC-fed), None when OCC is not running."""
    from octoric.e2sm.transport import resolve

    cfg, ric = ctx.config.sim, ctx.config.ric
    argv = [
        sys.executable, "-m", "octoric.cli", "sim", "run", "--live", "--quiet",
        "--scenario", cfg.scenario, "--seed", str(cfg.seed), "--traffic", cfg.traffic,
        "--ric-e2", f"127.0.0.1:{ric.e2_port}", "--e2-transport", resolve(ric.e2_transport),
        "--status-file", str(ctx.run_dir / STATUS_FILE),
        "--json", str(ctx.run_dir / SUMMARY_FILE),
        "--handover-log", str(ctx.run_dir / HANDOVER_LOG),
        "--series", str(ctx.run_dir / SERIES_FILE),
    ]  # fmt: skip
    for opt, value in (("--cells", cfg.cells), ("--cells-per-gnb", cfg.cells_per_gnb),
                       ("--ues", cfg.ues)):  # fmt: skip
        if value is not None:
            argv += [opt, str(value)]
    if cfg.svc != "scenario":
        argv += ["--svc", cfg.svc]
    if cfg.octopus_header:
        argv.append("--octopus-header")
    if cfg.real_ues > 0:
        argv += ["--real-ues", str(cfg.real_ues)]
    scheme = cfg.scheme
    if scheme == "auto":
        # OCC-fed flows (GCC until the first datagram and while the xApp says fallback): the
        # scenario's own, or every video flow when it names none
        scheme = "" if names_occ_flows(cfg.scenario) or occ_flows_url is None else "occ"
    if scheme and cfg.traffic == "video":
        argv += ["--scheme", scheme]
    if occ_flows_url is not None:
        # the OCC-fed flows take their target from the OCC xApp's UDP feedback
        argv += ["--feedback-port", "0", "--occ-register", occ_flows_url]
    return argv


def names_occ_flows(scenario: str) -> bool:
    """Whether the scenario (built-in or YAML) has a flow with scheme ``occ`` of its own."""
    from octoric.sim.scenario import load

    return any(f.scheme == "occ" for u in load(scenario).ues for f in u.flows)


def _mbps(kbps: Any) -> str:
    return "-" if kbps is None else f"{kbps / 1000:.1f}"


def abw_vs_capacity(status: dict[str, Any], limit: int = 8) -> str:
    """``ABW/cap Mbit/s ue1000 2.1/3.4 ue1001 -/5.0 ...``: per UE, the OCC xApp's latest ABW
    (as the sim received it; - when none or fallback) beside the simulator's true capacity
    over the last second."""
    rows = status.get("ue_rates") or []
    if not rows:
        return ""
    parts = [
        f"ue{r['ue']} {_mbps(r.get('abw_kbps'))}/{_mbps(r.get('capacity_kbps'))}" for r in rows
    ]
    more = f" +{len(parts) - limit}" if len(parts) > limit else ""
    return "ABW/cap Mbit/s " + " ".join(parts[:limit]) + more


def occ_p99(summary: dict[str, Any]) -> dict[str, float | None]:
    """p99 frame latency (ms) of every OCC-fed flow, keyed ``ue<AMF-UE-NGAP-ID>``."""
    amf = {u["ue"]: u.get("amf_ue_ngap_id", u["ue"]) for u in summary.get("ues", [])}
    return {
        f"ue{amf.get(f['ue'], f['ue'])}": (f.get("frame_latency_ms") or {}).get("p99")
        for f in summary.get("flows", [])
        if f.get("scheme") == "occ"
    }


class SimComponent:
    """The live simulated gNB(s) as a supervisor component."""

    name = "sim"

    def __init__(self, ctx: RunContext, occ_flows_url: str | None = None) -> None:
        self.child = ChildProcess("sim", live_argv(ctx, occ_flows_url), max_restarts=2)
        self.run_dir = ctx.run_dir
        self._status: dict[str, Any] = {}
        self._read_at = 0.0

    async def start(self, ctx: RunContext) -> None:
        """Start the sim and wait (up to ``SETUP_WAIT_S``) until its E2 nodes are set up, so
        the xApps that start next find them in the RIC."""
        self.run_dir = ctx.run_dir
        await self.child.start(ctx)
        deadline = time.monotonic() + SETUP_WAIT_S
        while time.monotonic() < deadline:
            why = self.child.failed()
            if why:
                raise OctoricError(why)
            nodes = self.live_status().get("nodes") or []
            if nodes and all(n.get("setup") for n in nodes):
                return
            await asyncio.sleep(0.1)
        log.warning("the simulated gNBs did not finish E2 setup in %.0f s", SETUP_WAIT_S)

    async def stop(self) -> None:
        await self.child.stop()  # SIGTERM: the sim stops its clock and writes the summary

    def _read(self, name: str) -> dict[str, Any] | None:
        try:
            data = json.loads((self.run_dir / name).read_text())
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def live_status(self) -> dict[str, Any]:
        now = time.monotonic()
        if now - self._read_at >= 0.1:
            self._read_at = now
            self._status = self._read(STATUS_FILE) or self._status
        return self._status

    def status(self) -> str:
        s = self.live_status()
        if not s:
            return "sim starting" if self.child.failed() is None else "sim failed"
        nodes = s.get("nodes", [])
        up = sum(1 for n in nodes if n.get("setup"))
        ind = sum(int(n.get("indications", 0)) for n in nodes)
        subs = sum(int(n.get("subscriptions", 0)) for n in nodes)
        line = (
            f"sim {s.get('sim_seconds', 0):.1f}s {s.get('cells')} cells {s.get('ues')} UEs, "
            f"E2 {up}/{len(nodes)} up, {subs} subs, {ind} ind"
        )
        abw = abw_vs_capacity(s)
        return f"{line}; {abw}" if abw else line

    def report(self) -> dict[str, Any]:
        summary = self._read(SUMMARY_FILE)
        out: dict[str, Any] = {"process": self.child.report()}
        if summary is None:
            out["summary"] = None
            out["note"] = f"no {SUMMARY_FILE} (the sim did not stop cleanly; see its log)"
            return out
        flows = summary.get("flows", [])
        p50 = [f["frame_latency_ms"]["p50"] for f in flows if f.get("frame_latency_ms")]
        p50 = [x for x in p50 if x is not None]
        nodes = summary.get("live", {}).get("nodes", [])
        p99 = occ_p99(summary)
        known = [v for v in p99.values() if v is not None]
        lines = []
        if p99:
            lines.append(
                "OCC-fed flows, p99 frame latency (ms): "
                + ", ".join(f"{k} {'-' if v is None else f'{v:.1f}'}" for k, v in p99.items())
                + (f"; worst {max(known):.1f}" if known else "")
            )
        status = self._read(STATUS_FILE) or {}
        if status.get("ue_rates"):
            lines.append("last second, " + abw_vs_capacity(status, limit=64))
        out.update({"occ_flows": len(p99), "occ_p99_frame_latency_ms": p99, "summary_lines": lines})
        out.update(
            {
                "sim_seconds": summary.get("sim_seconds"),
                "ues": len(summary.get("ues", [])),
                "flows": len(flows),
                "delivered_mbytes": round(
                    sum(u["delivered_bytes"] for u in summary.get("ues", [])) / 1e6, 3
                ),
                "median_frame_latency_ms": sorted(p50)[len(p50) // 2] if p50 else None,
                "e2_indications": sum(n.get("indications", 0) for n in nodes),
                "summary_file": str(Path(self.run_dir) / SUMMARY_FILE),
                "summary": summary,
            }
        )
        return out

    def failed(self) -> str | None:
        return self.child.failed()
