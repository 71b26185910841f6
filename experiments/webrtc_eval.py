"""``octoric eval webrtc``: Chromium's libwebrtc across the emulated cell, with and without
OCC's rate, beside the simulator's GCC model on the same trace and seed (issue #47;
docs/emulated-cell.md, "A Chromium call").

Per row (a constant 10 Mbit/s cell, then each Mahimahi LTE trace of ``--traces``) and seed:

- ``chromium-gcc``: a live run of the cell with one real UE, the RIC and the OCC xApp, and a
  call between two headless Chromium instances (``octoric.sim.chromium.call``; libwebrtc
  untouched, VP8 of a real clip at 640x360, 25 fps);
- ``chromium-occ``: the same, the sender page capping its encoder at OCC's rate for the flow
  (``examples/occ-rate.js``, ``maxBitrate``);
- ``gcc``: the simulator's own GCC model with its video on the same cell, trace and seed, over
  the same length, its encoder's range set to what libwebrtc allows at that size (30 kbit/s
  to 1.7 Mbit/s, starting at 300 kbit/s as libwebrtc does).

Metrics: the link's utilization (bytes delivered to the UE / the cell's capacity for it, over
the call's media window), the one-way network latency p50/p99 (Chromium: every media packet
between the server's and the UE's TUN, kernel time stamps; the model: its packets from the
sender to the UE), the p99 frame latency (the model only: getStats() has no per-frame capture
time), the received bitrate and freezes (Chromium: getStats() ``freezeCount``; the model:
frames later than 150 ms), and for ``chromium-occ`` how often the page's cap was OCC's latest
target. No claims yet: the later parts of issue #47 add them.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from octoric.contracts import auth
from octoric.deploy.xapp_env import xapp_environment
from octoric.errors import OctoricError
from octoric.experiments.claims import ClaimResult
from octoric.experiments.experiment import Case, Experiment, RunOptions, grid, nest, register
from octoric.lifeline import die_with_parent
from octoric.redis_server import free_port
from octoric.ric.stack import RicStack, free_pair, running_ric
from octoric.sim.chromium.call import chromium_call, packet_latency
from octoric.sim.chromium.call import unavailable_reason as chromium_unavailable
from octoric.sim.engine import Engine
from octoric.sim.live import LiveOptions
from octoric.sim.realue.netns import unavailable_reason as netns_unavailable
from octoric.sim.realue_harness import start_real
from octoric.sim.scenario import ChannelSpec, FlowSpec, RanSpec, Scenario, UeSpec
from octoric.sim.summary import build_summary
from octoric.sim.video import WiredPathConfig
from octoric.supervisor import stop_process_group

SCHEMES = ("chromium-gcc", "chromium-occ", "gcc")
FEEDBACK_PORT = 9100
REPO = Path(__file__).resolve().parents[1]
CONSTANT = "constant-10mbps"
RTT_MS, UPLINK_MS, QUEUE_BYTES = 20.0, 4.0, 300_000
# libwebrtc's range for one 640x360 VP8 stream (its start rate and default maximum)
MIN_MBPS, START_MBPS, MAX_MBPS = 0.03, 0.3, 1.7
LEAD_S = 5.0  # the model's flow starts here: about when the browsers' call starts in a live run


def channel(row: str, traces: Path) -> ChannelSpec:
    if row == CONSTANT:
        return ChannelSpec(kind="constant", rate_mbps=10.0)
    return ChannelSpec(kind="mahimahi", path=str(traces / f"{row}.down"))


def scenario(row: str, traces: Path, flow: FlowSpec, duration_s: float) -> Scenario:
    return Scenario(name=f"webrtc-{row}", duration_s=duration_s,
                    ran=RanSpec(n_prb=51, slot_ms=0.5, tdd="DDDSU"),
                    ues=[UeSpec(channel=channel(row, traces), flows=[flow],
                                queue_limit_bytes=QUEUE_BYTES)])  # fmt: skip


def _path() -> WiredPathConfig:
    return WiredPathConfig(rtt_ms=RTT_MS)


def _start_occ(stack: RicStack, tmp: Path) -> tuple[subprocess.Popen[bytes], Path, int]:
    """The OCC xApp with its shipped configuration on free ports (as ``octoric run`` has it):
    the process (its own session; SIGKILL if this process dies), its log and its HTTP port."""
    rmr, http = free_pair(), free_port()
    d = json.loads((REPO / "xapps/occ/config-file.json").read_text())
    by_name = {"http": http, "rmr-data": rmr, "rmr-route": rmr + 1}
    for p in d["messaging"]["ports"]:
        p["port"] = by_name[p["name"]]
    cfg, log = tmp / "occ-config.json", tmp / "occ.log"
    cfg.write_text(json.dumps(d))
    argv = [sys.executable, "-m", "octoric.xapps.occ", "--rmr-port", str(rmr),
            "--http-port", str(http)]  # fmt: skip
    with log.open("wb") as f:
        proc = subprocess.Popen(argv, env=xapp_environment(stack.rt, "occ", rmr, http, cfg),
                                stdout=f, stderr=subprocess.STDOUT, start_new_session=True,
                                preexec_fn=die_with_parent())  # fmt: skip
    return proc, log, http


def _chromium_case(row: str, traces: Path, seed: int, seconds: float, out: Path,
                   arm: str) -> dict[str, Any]:  # fmt: skip
    """Both Chromium arms run with the RIC and the OCC xApp in the loop (the same load on the
    machine); only ``chromium-occ``'s page applies OCC's rate."""
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as td, running_ric(Path(td)) as stack:
        occ, log, http = _start_occ(stack, Path(td))
        token = os.environ.get(auth.TOKEN_ENV)
        os.environ[auth.TOKEN_ENV] = stack.rt.api_token  # the sim's registration call needs it
        try:
            return asyncio.run(_chromium(row, traces, seed, seconds, out, arm,
                                         stack.rt.ric.e2_port,
                                         f"http://127.0.0.1:{http}/occ/v1/flows"))  # fmt: skip
        finally:
            stop_process_group(occ)
            shutil.copy(log, out / "occ-xapp.log")
            if token is None:
                os.environ.pop(auth.TOKEN_ENV, None)
            else:
                os.environ[auth.TOKEN_ENV] = token


async def _chromium(row: str, traces: Path, seed: int, seconds: float, out: Path, arm: str,
                    e2_port: int, occ_register: str) -> dict[str, Any]:  # fmt: skip
    flow = FlowSpec(traffic="real", scheme="occ", params={"feedback_port": FEEDBACK_PORT},
                    path=_path(), uplink_ms=UPLINK_MS)  # fmt: skip
    sc = scenario(row, traces, flow, seconds + 180.0)
    opts = LiveOptions(ric_port=e2_port, feedback_port=0, occ_register=occ_register)
    sim, task = await start_real(sc, seed, opts)
    deadline = time.monotonic() + 90.0
    while not (sim.registered and sim.real is not None and sim.real.stats.feedback_relayed):
        if time.monotonic() > deadline or task.done():
            sim.stop("no OCC feedback")
            await asyncio.wait_for(task, 30)
            raise RuntimeError("the real UE's flow got no OCC feedback within 90 s")
        await asyncio.sleep(0.2)
    try:
        eng = sim.engine
        ue = sim.real_ues[0]
        res = await chromium_call(sim, arm, seconds, out, FEEDBACK_PORT)
        now_wall, now_sim = time.time(), eng.slot * eng.slot_us / 1e6
    finally:
        sim.stop("call done")
        await asyncio.wait_for(task, 30)
    # the call's media window (first to last media packet at the server's TUN, epoch ms) on
    # the simulated clock, which runs with the wall clock (2 ms ahead of it)
    pkts = packet_latency(out)
    a, b = (now_sim - (now_wall - pkts[i][0] / 1000.0) for i in (0, -1)) if pkts else (0.0, 0.0)
    # the engine's own time series (snapshot k at (k + 1) x timeseries_ms): the UE's
    # delivered bytes and capacity, over that window
    ts = eng.sc.timeseries_ms / 1000.0
    ka, kb = max(int(a / ts) - 1, 0), min(int(b / ts) - 1, len(eng.ts_ue_capacity) - 1)
    cap = eng.ts_ue_capacity[kb][ue] - eng.ts_ue_capacity[ka][ue] if kb > ka else 0.0
    got = eng.ts_ue_delivered[kb][ue] - eng.ts_ue_delivered[ka][ue] if kb > ka else 0
    t0, t1 = (ka + 1) * ts, (kb + 1) * ts
    lat = res.get("network_latency_ms") or {}
    return {
        "utilization": round(got / cap, 4) if cap > 0 else None,
        "network_p50_ms": lat.get("p50"), "network_p99_ms": lat.get("p99"),
        "frame_p99_ms": None,
        "received_kbps": res.get("received_kbps"),
        "freezes": res.get("freeze_count"), "freezes_s": res.get("freezes_s"),
        "frames_sent": res.get("frames_sent"), "frames_decoded": res.get("frames_decoded"),
        "target_kbps_p50": (res.get("target_kbps") or {}).get("p50"),
        "cpu_limited": res["quality_limitation"].get("cpu", 0.0),
        "occ_follow": res.get("occ_follow"), "feedback": res.get("feedback"),
        "completed": res["completed"], "processes_left": res["processes_left"],
        "window_s": [round(t0, 2), round(t1, 2)],
    }  # fmt: skip


def _model(row: str, traces: Path, seed: int, seconds: float) -> dict[str, Any]:
    flow = FlowSpec(traffic="video", scheme="gcc", path=_path(), uplink_ms=UPLINK_MS,
                    start_mbps=START_MBPS, min_mbps=MIN_MBPS, max_mbps=MAX_MBPS,
                    start_s=LEAD_S)  # fmt: skip
    eng = Engine(scenario(row, traces, flow, LEAD_S + seconds), seed)
    s = build_summary(eng, eng.run())
    f = s["flows"][0]
    # utilization over the flow's window (the engine's time series, as for the Chromium run)
    i0 = int(LEAD_S * 1000 / eng.sc.timeseries_ms) - 1
    cap = eng.ts_ue_capacity[-1][0] - eng.ts_ue_capacity[i0][0]
    got = eng.ts_ue_delivered[-1][0] - eng.ts_ue_delivered[i0][0]
    stall = f.get("stall_rate")
    return {
        "utilization": round(got / cap, 4) if cap > 0 else None,
        "network_p50_ms": (f.get("network_latency_ms") or {}).get("p50"),
        "network_p99_ms": (f.get("network_latency_ms") or {}).get("p99"),
        "frame_p99_ms": (f.get("frame_latency_ms") or {}).get("p99"),
        "received_kbps": f.get("decoded_bitrate_kbps"),
        "freezes": round(stall * f["frames_decoded"]) if stall is not None else None,
        "freezes_s": None,
        "frames_sent": f.get("frames_sent"), "frames_decoded": f.get("frames_decoded"),
        "target_kbps_p50": None, "cpu_limited": None, "completed": True,
        "window_s": [LEAD_S, LEAD_S + seconds],
    }  # fmt: skip


class WebrtcEval(Experiment):
    name = "webrtc"
    help = "Chromium's libwebrtc across the emulated cell beside the simulator's GCC model (#47)"
    quick_help = "the constant 10 Mbit/s cell only, one seed, 20 s calls"
    traces_help = "Mahimahi traces: the *LTE*.down ones are used"
    alone = True  # a live cell and two browsers: their timing would suffer beside other runs

    def add_arguments(self, p: Any) -> None:
        p.add_argument("--seconds", type=float, default=60.0, metavar="S",
                       help="length of each call (default 60; --quick: 20)")  # fmt: skip

    def _seconds(self, opts: RunOptions) -> float:
        return 20.0 if opts.quick else float(opts.extra.get("seconds", 60.0))

    def check(self, opts: RunOptions) -> None:
        why = netns_unavailable() or chromium_unavailable()
        if why is not None:
            raise OctoricError(f"octoric eval webrtc: {why}")
        if not opts.quick and not self._traces(opts):
            raise OctoricError(f"no *LTE*.down trace in {opts.traces_path} (--traces DIR)")

    def _traces(self, opts: RunOptions) -> list[str]:
        return sorted(p.stem for p in opts.traces_path.glob("*LTE*.down"))

    def cases(self, opts: RunOptions) -> list[Case]:
        rows = [CONSTANT] + ([] if opts.quick else self._traces(opts))
        return grid("calls", rows, SCHEMES, range(1, opts.seeds_or(3) + 1))

    def run_case(self, case: Case, opts: RunOptions) -> dict[str, Any]:
        traces, seconds = opts.traces_path.resolve(), self._seconds(opts)
        if case.scheme == "gcc":
            return _model(case.row, traces, case.seed, seconds)
        out = opts.out / "calls" / f"{case.row}-{case.scheme}-seed{case.seed}"
        return _chromium_case(case.row, traces, case.seed, seconds, out, case.scheme)

    def results(self, opts: RunOptions, cases: list[Case], outputs: list[Any]) -> dict[str, Any]:
        return {"seconds": self._seconds(opts), "runs": nest(cases, outputs, "calls")}

    def claims(self, results: dict[str, Any]) -> list[ClaimResult]:
        return []  # the model check has no paper claims; the faithful-model part adds its own

    def report(self, results: dict[str, Any]) -> str:
        lines = [
            "# Chromium's libwebrtc beside the simulator's GCC model (issue #47)", "",
            f"Calls of {results['seconds']:g} s per row and seed: `chromium-gcc` is Debian's "
            "Chromium (libwebrtc untouched, VP8 640x360 at 25 fps from a real clip) across the "
            "emulated cell with the RIC and the OCC xApp in the loop; `chromium-occ` the same "
            "with the sender capped at OCC's rate (`examples/occ-rate.js`); `gcc` is the "
            "simulator's model on the same cell and seed (its "
            f"encoder range {MIN_MBPS * 1000:g}-{MAX_MBPS * 1000:g} kbit/s, start "
            f"{START_MBPS * 1000:g}). Means over the seeds. Network latency: one way, "
            "server to UE. Freezes: getStats() `freezeCount` for Chromium, frames later than "
            "150 ms for the model (not the same definition). Chromium's p99 frame latency is "
            "not measured (getStats() has no per-frame capture time). Figures taken on a "
            "shared machine are not measurements.", "",
            "| row | arm | utilization | network p50 / p99 (ms) | frame p99 (ms) | "
            "received (kbit/s) | freezes | cap = OCC's target |",
            "|---|---|---|---|---|---|---|---|",
        ]  # fmt: skip
        for row, by in results["runs"].items():
            for arm, rs in by.items():

                def m(k: str, rs: list[dict[str, Any]] = rs) -> str:
                    v = [r[k] for r in rs if r.get(k) is not None]
                    return f"{statistics.fmean(v):.4g}" if v else "n/a"

                util = [r["utilization"] for r in rs if r.get("utilization") is not None]
                u = f"{100 * statistics.fmean(util):.1f} %" if util else "n/a"
                fol = [r["occ_follow"] for r in rs if r.get("occ_follow")]
                n = sum(x["samples"] for x in fol)
                f = f"{100 * sum(x['follows'] for x in fol) / n:.0f} %" if n else ""
                lines.append(f"| {row} | `{arm}` | {u} | {m('network_p50_ms')} / "
                             f"{m('network_p99_ms')} | {m('frame_p99_ms')} | "
                             f"{m('received_kbps')} | {m('freezes')} | {f} |")  # fmt: skip
        lines += ["", f"![utilization and latency]({self.plot_names(results)[0]})", ""]
        return "\n".join(lines)

    def draw(self, results: dict[str, Any], png: Path) -> None:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        rows = list(results["runs"])
        fig, axes = plt.subplots(1, 2, figsize=(10, 3.5))
        for k, (key, label) in enumerate((("utilization", "utilization"),
                                          ("network_p99_ms", "network p99 (ms)"))):  # fmt: skip
            ax = axes[k]
            for j, arm in enumerate(SCHEMES):
                ys = []
                for row in rows:
                    v = [
                        r[key] for r in results["runs"][row].get(arm, []) if r.get(key) is not None
                    ]
                    ys.append(statistics.fmean(v) if v else 0.0)
                w = 0.8 / len(SCHEMES)  # the arms side by side within each row's slot
                ax.bar([i + w * j for i in range(len(rows))], ys, w, label=arm)
            ax.set_xticks([i + 0.4 - 0.4 / len(SCHEMES) for i in range(len(rows))], rows,
                          rotation=20, fontsize=7)  # fmt: skip
            ax.set_ylabel(label)
        axes[0].legend()
        fig.tight_layout()
        fig.savefig(png, dpi=100)
        plt.close(fig)


register(WebrtcEval())
