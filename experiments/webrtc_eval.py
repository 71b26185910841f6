"""``octoric eval webrtc``: Chromium's libwebrtc across the emulated cell, with and without
OCC's rate, beside the simulator on the same trace, seed and stretch of time (issue #47;
docs/emulated-cell.md, "A Chromium call").

Rows: a constant 10 Mbit/s cell, each Mahimahi LTE trace of ``--traces`` and the OCC paper's
PHY routes (good, blockage, poor), and a constant 1.5 Mbit/s cell the encoder can fill
(``chromium-gcc`` only: the model's check at capacity); ``--quick``: the 10 Mbit/s cell, one
seed, 20 s calls. Per row and seed, two arms, each a live run of the cell with one real UE,
the RIC and the OCC xApp, and a call between two headless Chromium instances
(``octoric.sim.chromium.call``; libwebrtc untouched, VP8 of a real clip at 640x360, 25 fps):

- ``chromium-gcc``: Chromium's own congestion control;
- ``chromium-occ``: the sender page caps its encoder at OCC's rate for the flow
  (``examples/occ-rate.js``, ``maxBitrate``).

Each call gets a model twin when the results are built: the simulator's ``gcc`` (or ``occ``,
following the OCC engine) video flow on the same cell, trace and seed over the call's own
window, with libwebrtc's range at that size (30 kbit/s to 1.7 Mbit/s, start 300 kbit/s).
``octoric eval report DIR`` therefore judges the model of the code at hand against recorded
calls, without a browser.

Metrics: the link's utilization (bytes delivered to the UE / the cell's capacity for it, over
the call's media window); the one-way network latency p50/p99, sniffed between the server's
and the UE's TUN (kernel time stamps) and as the simulated cell saw the same packets (what a
model flow is measured by); the received bitrate; freezes (W3C ``freezeCount``: Chromium's
getStats(), the model's decoded frames by the same rule); for ``chromium-occ`` how often the
page's cap was OCC's latest target. Claims: OCC's Fig. 13 (p99 latency and bitrate, OCC over
GCC) with Chromium as the sender, by the verdict rule of ``octoric.experiments.claims``.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Literal

from octoric.contracts import auth
from octoric.deploy.xapp_env import xapp_environment
from octoric.errors import OctoricError
from octoric.experiments.claims import ClaimResult
from octoric.experiments.experiment import Case, Experiment, RunOptions, grid, nest, register
from octoric.lifeline import die_with_parent
from octoric.redis_server import free_port
from octoric.ric.stack import RicStack, free_pair, running_ric
from octoric.sim.chromium.call import FPS as CALL_FPS
from octoric.sim.chromium.call import HEIGHT as CALL_HEIGHT
from octoric.sim.chromium.call import WIDTH as CALL_WIDTH
from octoric.sim.chromium.call import chromium_call, packet_latency
from octoric.sim.chromium.call import unavailable_reason as chromium_unavailable
from octoric.sim.engine import Engine
from octoric.sim.live import LiveOptions
from octoric.sim.realue.netns import unavailable_reason as netns_unavailable
from octoric.sim.realue_harness import start_real
from octoric.sim.scenario import ChannelSpec, FlowSpec, RanSpec, Scenario, UeSpec
from octoric.sim.summary import build_summary
from octoric.sim.video import VideoConfig, WiredPathConfig, webrtc_video
from octoric.supervisor import stop_process_group

SCHEMES = ("chromium-gcc", "chromium-occ")
# each Chromium arm's model twin, run on the same trace, seed and stretch of time as its call
MODEL = {"chromium-gcc": "gcc", "chromium-occ": "occ"}
FEEDBACK_PORT = 9100
REPO = Path(__file__).resolve().parents[1]
CONSTANT = "constant-10mbps"
# a constant link the call's encoder (640x360 VP8, at most 1.7 Mbit/s) can fill: GCC at the
# link's capacity, which the 10 Mbit/s cell (content-limited sender) does not show
CONSTANT_FULL = "constant-1.5mbps"
RTT_MS, UPLINK_MS, QUEUE_BYTES = 20.0, 4.0, 300_000
# libwebrtc's range for one 640x360 VP8 stream (its start rate and default maximum)
MIN_MBPS, START_MBPS, MAX_MBPS = 0.03, 0.3, 1.7
ROUTE_ROWS = ("route-good", "route-blockage", "route-poor")  # OCC §6.1's PHY routes


def channel(row: str, traces: Path) -> ChannelSpec:
    if row.startswith("constant-") and row.endswith("mbps"):  # constant-10mbps, constant-1.5mbps
        return ChannelSpec(kind="constant", rate_mbps=float(row[len("constant-") : -len("mbps")]))
    if row.startswith("route-"):  # the OCC paper's over-the-air routes (sim/channels/route.py)
        return ChannelSpec(kind="route", route=row.removeprefix("route-"))
    return ChannelSpec(kind="mahimahi", path=str(traces / f"{row}.down"))


def scenario(row: str, traces: Path, flow: FlowSpec, duration_s: float,
             abw_source: Literal["stand-in", "occ-engine"] = "stand-in") -> Scenario:  # fmt: skip
    return Scenario(name=f"webrtc-{row}", duration_s=duration_s, abw_source=abw_source,
                    ran=RanSpec(n_prb=51, slot_ms=0.5, tdd="DDDSU"),
                    ues=[UeSpec(channel=channel(row, traces), flows=[flow],
                                queue_limit_bytes=QUEUE_BYTES)])  # fmt: skip


def _path() -> WiredPathConfig:
    return WiredPathConfig(rtt_ms=RTT_MS)


def _video() -> VideoConfig:
    """The model's video as the browsers' call has it: libwebrtc's sender (key frames on
    request only, a key frame when the receiver asks: PLI) at the call's size and rate."""
    return webrtc_video(fps=float(CALL_FPS), width=CALL_WIDTH, height=CALL_HEIGHT)


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
                   arm: str, event_log: bool = False) -> dict[str, Any]:  # fmt: skip
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
                                         f"http://127.0.0.1:{http}/occ/v1/flows",
                                         event_log))  # fmt: skip
        finally:
            stop_process_group(occ)
            shutil.copy(log, out / "occ-xapp.log")
            if token is None:
                os.environ.pop(auth.TOKEN_ENV, None)
            else:
                os.environ[auth.TOKEN_ENV] = token


async def _chromium(row: str, traces: Path, seed: int, seconds: float, out: Path, arm: str,
                    e2_port: int, occ_register: str,
                    event_log: bool = False) -> dict[str, Any]:  # fmt: skip
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
        res = await chromium_call(sim, arm, seconds, out, FEEDBACK_PORT, event_log=event_log)
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
    cell = (res.get("cell") or {}).get("latency_ms") or {}
    return {
        "utilization": round(got / cap, 4) if cap > 0 else None,
        "network_p50_ms": lat.get("p50"), "network_p99_ms": lat.get("p99"),
        "cell_p50_ms": cell.get("p50"), "cell_p99_ms": cell.get("p99"),
        "frame_p99_ms": None,
        "received_kbps": res.get("received_kbps"),
        "freezes": res.get("freeze_count"), "freezes_s": res.get("freezes_s"),
        "frames_sent": res.get("frames_sent"), "frames_decoded": res.get("frames_decoded"),
        "target_kbps_p50": (res.get("target_kbps") or {}).get("p50"),
        "cpu_limited": res["quality_limitation"].get("cpu", 0.0),
        "occ_follow": res.get("occ_follow"), "feedback": res.get("feedback"),
        "completed": res["completed"], "processes_left": res["processes_left"],
        "window_s": [round(t0, 2), round(t1, 2)],
        # the first media packet's time (the window starts on the series' grid before it):
        # the twin starts here, as the call's first probe and frame did
        "media_start_s": round(a, 3),
    }  # fmt: skip


def _model(row: str, traces: Path, seed: int, seconds: float, start_s: float,
           scheme: str = "gcc") -> dict[str, Any]:  # fmt: skip
    """The simulator's video flow of ``scheme`` (``gcc``: the GCC model; ``occ``: following
    the OCC engine's rate) on the cell of ``row`` and ``seed`` from ``start_s`` (a Chromium
    case gives its call's start: the same stretch of the trace) for ``seconds``."""
    # both twins at libwebrtc's default maximum: Chromium's capped page raises its encoder's
    # maximum with OCC's cap (setParameters' maxBitrate) up to what VP8 makes of the clip
    # (2.6-3.4 Mbit/s received at 640x360), a content limit the model's encoder does not have
    flow = FlowSpec(traffic="video", scheme=scheme, path=_path(), uplink_ms=UPLINK_MS,
                    start_mbps=START_MBPS, min_mbps=MIN_MBPS, max_mbps=MAX_MBPS,
                    start_s=start_s, video=_video())  # fmt: skip
    # an `occ` model flow follows the OCC xApp's own engine (in-process), as the Chromium
    # arm follows the xApp
    eng = Engine(scenario(row, traces, flow, start_s + seconds, "occ-engine"), seed)
    s = build_summary(eng, eng.run())
    f = s["flows"][0]
    # utilization over the flow's window (the engine's time series, as for the Chromium run)
    i0 = max(int(start_s * 1000 / eng.sc.timeseries_ms) - 1, 0)
    cap = eng.ts_ue_capacity[-1][0] - eng.ts_ue_capacity[i0][0]
    got = eng.ts_ue_delivered[-1][0] - eng.ts_ue_delivered[i0][0]
    stall = f.get("stall_rate")  # frames later than 150 ms (what the reports call stalls)
    return {
        "utilization": round(got / cap, 4) if cap > 0 else None,
        "network_p50_ms": (f.get("network_latency_ms") or {}).get("p50"),
        "network_p99_ms": (f.get("network_latency_ms") or {}).get("p99"),
        # a model flow has no live path: the cell's view is all there is
        "cell_p50_ms": (f.get("network_latency_ms") or {}).get("p50"),
        "cell_p99_ms": (f.get("network_latency_ms") or {}).get("p99"),
        "frame_p99_ms": (f.get("frame_latency_ms") or {}).get("p99"),
        "received_kbps": f.get("decoded_bitrate_kbps"),
        "freezes": f["freezes"]["count"], "freezes_s": round(f["freezes"]["seconds"], 3),
        "late_frames": round(stall * f["frames_decoded"]) if stall is not None else None,
        "frames_sent": f.get("frames_sent"), "frames_decoded": f.get("frames_decoded"),
        "target_kbps_p50": None, "cpu_limited": None, "completed": True,
        "window_s": [round(start_s, 2), round(start_s + seconds, 2)],
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
        p.add_argument("--arms", default=",".join(SCHEMES), metavar="A,B",
                       help=f"the arms to run (default all: {','.join(SCHEMES)}); the report "
                            "covers the arms run")  # fmt: skip
        p.add_argument(
            "--event-log",
            action="store_true",
            help="keep each sender's libwebrtc RTC event log (calls/*/event-log/)",
        )
        p.add_argument(
            "--recorded", metavar="JSON", default=None,
            help="no browser: take the calls of an earlier report (its results JSON, e.g. "
                 "docs/eval-webrtc.json) and make the twins and the report again with the "
                 "code at hand (with --quick: its constant 10 Mbit/s row, seed 1)",
        )  # fmt: skip

    def run_options(self, opts: RunOptions) -> dict[str, Any]:
        # --arms picks cases and --event-log keeps a file: neither changes a run's figures
        base = super().run_options(opts)
        keep = {k: v for k, v in opts.extra.items() if k not in ("arms", "event_log")}
        return {**base, "extra": keep}

    def _arms(self, opts: RunOptions) -> list[str]:
        arms = [a for a in str(opts.extra.get("arms") or ",".join(SCHEMES)).split(",") if a]
        bad = [a for a in arms if a not in SCHEMES]
        if bad:
            raise OctoricError(f"--arms: no arm {', '.join(bad)} (the arms: {', '.join(SCHEMES)})")
        return arms

    def _seconds(self, opts: RunOptions) -> float:
        return 20.0 if opts.quick else float(opts.extra.get("seconds", 60.0))

    def _recorded(self, opts: RunOptions) -> dict[str, Any] | None:
        """The results document ``--recorded`` names (None: calls are made); read once per
        process, not once per case (the caller copies what it hands on)."""
        path = opts.extra.get("recorded")
        if not path:
            return None
        try:  # the file's identity now: a rewritten file is read again
            st = os.stat(path)
        except OSError as e:
            raise OctoricError(f"--recorded {path}: {e}") from e
        doc = _read_recorded(str(path), (st.st_mtime_ns, st.st_size))
        if doc.get("experiment") != self.name or not isinstance(doc.get("runs"), dict):
            raise OctoricError(f"--recorded {path}: not an `octoric eval {self.name}` result")
        return doc

    def check(self, opts: RunOptions) -> None:
        self._arms(opts)
        if self._recorded(opts) is not None:
            return  # no browser, no namespaces: the calls are on record
        why = netns_unavailable() or chromium_unavailable()
        if why is not None:
            raise OctoricError(f"octoric eval webrtc: {why}")
        if not opts.quick and not self._traces(opts):
            raise OctoricError(f"no *LTE*.down trace in {opts.traces_path} (--traces DIR)")

    def _traces(self, opts: RunOptions) -> list[str]:
        return sorted(p.stem for p in opts.traces_path.glob("*LTE*.down"))

    def cases(self, opts: RunOptions) -> list[Case]:
        rec = self._recorded(opts)
        if rec is not None:  # the recorded report's calls, in its order
            arms = self._arms(opts)
            return [Case("calls", row, arm, k + 1, f"{row} {arm} seed {k + 1}")
                    for row, by in rec["runs"].items() if not opts.quick or row == CONSTANT
                    for arm, calls in by.items() if arm in arms
                    for k in range(min(len(calls), 1 if opts.quick else len(calls)))]  # fmt: skip
        rows = [CONSTANT] + ([] if opts.quick else self._traces(opts) + list(ROUTE_ROWS))
        seeds = range(1, opts.seeds_or(3) + 1)
        cases = grid("calls", rows, self._arms(opts), seeds)
        if not opts.quick:  # the model check's row: Chromium's own GCC only, not a claim
            cases += grid("calls", [CONSTANT_FULL],
                          [a for a in self._arms(opts) if a == "chromium-gcc"], seeds)  # fmt: skip
        return cases

    def run_case(self, case: Case, opts: RunOptions) -> dict[str, Any]:
        rec = self._recorded(opts)
        if rec is not None:
            call = rec["runs"][case.row][case.scheme][case.seed - 1]
            return {k: v for k, v in call.items() if k != "model"}  # the twin is made anew
        traces, seconds = opts.traces_path.resolve(), self._seconds(opts)
        out = opts.out / "calls" / f"{case.row}-{case.scheme}-seed{case.seed}"
        if out.exists():  # an earlier command's call of this case (other code): kept aside
            stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(out.stat().st_mtime))
            out.rename(out.with_name(f"{out.name}.{stamp}"))
        return _chromium_case(case.row, traces, case.seed, seconds, out, case.scheme,
                              bool(opts.extra.get("event_log")))  # fmt: skip

    def results(self, opts: RunOptions, cases: list[Case], outputs: list[Any]) -> dict[str, Any]:
        """The calls, each with its model twin: the simulator's flow over the call's own
        window of the same trace and seed (the cell starts the trace at the run's start in
        both). The twins are made here, not in the runs: ``octoric eval report`` judges the
        model of the code at hand against recorded calls, without a browser."""
        traces = opts.traces_path.resolve()
        for case, res in zip(cases, outputs, strict=True):
            t0, t1 = res["window_s"]
            # calls recorded before the key: the window's start (up to a grid step early)
            start = float(res.get("media_start_s", t0))
            res["model"] = _model(case.row, traces, case.seed,
                                  t1 - start if t1 > start else self._seconds(opts),
                                  start_s=start, scheme=MODEL[case.scheme])  # fmt: skip
        rec = self._recorded(opts)
        doc: dict[str, Any] = {
            "seconds": rec["seconds"] if rec is not None else self._seconds(opts),
            "runs": nest(cases, outputs, "calls"),
        }
        if rec is not None:  # what the twins were made against
            doc["calls_from"] = rec.get("calls_from") or str(opts.extra["recorded"])
        return doc

    def claims(self, results: dict[str, Any]) -> list[ClaimResult]:
        """OCC's Fig. 13 with Chromium as the sender (issue #47, point 3): per run (row, seed)
        where both Chromium arms ran, the p99 network latency and the received bitrate of
        ``chromium-occ`` over ``chromium-gcc``, one joint claim per group (the traces with
        the constant cell; the PHY routes); the simulator's twins beside them, not counted."""
        from octoric.experiments.claims import judge_joint, ratio
        from octoric.experiments.occ_eval import PAPER_BITRATE, PAPER_LATENCY

        lat = ratio(*PAPER_LATENCY, ref="0.32-0.87x (-13..-68 %; §6.2, Fig. 13, line 314)")
        rate = ratio(*PAPER_BITRATE, ref="1.2-3.5x (§6.2, Fig. 13, line 314)")
        out: list[ClaimResult] = []
        for group in ("traces", "routes"):
            for who, counted in (("Chromium", True), ("the simulator's twins", False)):
                lr, br = [], []
                for row, by in results["runs"].items():
                    if _group(row) != group or not {"chromium-occ", "chromium-gcc"} <= set(by):
                        continue
                    for k, (o, g) in enumerate(zip(by["chromium-occ"], by["chromium-gcc"],
                                                   strict=False)):  # fmt: skip
                        if who != "Chromium":
                            o, g = o["model"], g["model"]
                        lr.append((k + 1, _ratio(o.get("cell_p99_ms"), g.get("cell_p99_ms"))))
                        br.append((k + 1, _ratio(o.get("received_kbps"),
                                                 g.get("received_kbps"))))  # fmt: skip
                if not lr:
                    continue
                out.append(judge_joint(
                    f"{group}: {who}, OCC's rate against its own GCC lowers the p99 network "
                    "latency and raises the received bitrate",
                    [("p99 network latency (the cell's view), OCC / GCC", lat, lr),
                     ("received bitrate, OCC / GCC", rate, br)], counted=counted))  # fmt: skip
        return out

    def report(self, results: dict[str, Any]) -> str:
        from octoric.experiments.claims import RULE_MD, claims_table

        runs = results["runs"]
        lines = [
            "# Chromium's libwebrtc across the emulated cell, beside the simulator (issue #47)",
            "",
            f"Calls of {results['seconds']:g} s per row and seed between two headless Debian "
            "Chromium instances (libwebrtc untouched: VP8 640x360 at 25 fps from a real clip), "
            "across the emulated cell with the RIC and the OCC xApp in the loop. "
            "`chromium-gcc`: Chromium's own congestion control; `chromium-occ`: the sender "
            "capped at OCC's rate for the flow (`examples/occ-rate.js`). Each call has a "
            "*model twin*: the simulator's flow (`gcc`, or `occ` following the OCC engine) on "
            "the same trace and seed over the call's own window, made when the report is "
            "built, so it is the model of the code at hand against recorded calls. Means over "
            "the seeds." + (
                f" The calls are those recorded in `{results['calls_from']}` "
                "(`--recorded`); the twins were made again." if results.get("calls_from")
                else ""), "",
            "Latency is one-way, server to UE: *sniffed* between the server's and the UE's TUN "
            "(kernel time stamps), and *the cell's view* (the same packets, the wired delay "
            "plus their time in the simulated cell), which is what a model flow is measured "
            "by; the difference is the live path's own cost (reading and writing the TUNs, "
            "the loop's timers). Freezes: W3C `freezeCount` (Chromium's getStats(); the "
            "model's decoded frames by the same rule).", "",
            "## The GCC model against Chromium's GCC", "",
            "Within 20 %: the model's mean over the seeds is within 20 % of Chromium's "
            "(issue #47, point 2).", "",
            "| row | utilization Chromium / model | p50 ms sniffed / cell / model | "
            "p99 ms sniffed / cell / model | received kbit/s Chromium / model | "
            "freezes Chromium / model | within 20 % (util., p99) |",
            "|---|---|---|---|---|---|---|",
        ]  # fmt: skip
        for row, by in runs.items():
            rs = by.get("chromium-gcc") or []
            if not rs:
                continue
            ms = [r["model"] for r in rs if r.get("model")]
            u, um = _mean(rs, "utilization"), _mean(ms, "utilization")
            p99, p99m = _mean(rs, "cell_p99_ms"), _mean(ms, "network_p99_ms")
            lines.append(
                f"| {row} | {_pc(u)} / {_pc(um)} | {_f(_mean(rs, 'network_p50_ms'))} / "
                f"{_f(_mean(rs, 'cell_p50_ms'))} / {_f(_mean(ms, 'network_p50_ms'))} | "
                f"{_f(_mean(rs, 'network_p99_ms'))} / {_f(p99)} / {_f(p99m)} | "
                f"{_f(_mean(rs, 'received_kbps'))} / {_f(_mean(ms, 'received_kbps'))} | "
                f"{_f(_mean(rs, 'freezes'))} / {_f(_mean(ms, 'freezes'))} | "
                f"{_within(u, um)}, {_within(p99, p99m)} |")  # fmt: skip
        lines += ["", "## OCC's rate in Chromium against Chromium's GCC", "",
                  "| row | arm | utilization | p99 ms (the cell's view) | received kbit/s | "
                  "freezes | cap = OCC's target | model twin: utilization, p99 ms, kbit/s |",
                  "|---|---|---|---|---|---|---|---|"]  # fmt: skip
        for row, by in runs.items():
            for arm, rs in by.items():
                ms = [r["model"] for r in rs if r.get("model")]
                fol = [r["occ_follow"] for r in rs if r.get("occ_follow")]
                n = sum(x["samples"] for x in fol)
                f = f"{100 * sum(x['follows'] for x in fol) / n:.0f} %" if n else ""
                lines.append(
                    f"| {row} | `{arm}` | {_pc(_mean(rs, 'utilization'))} | "
                    f"{_f(_mean(rs, 'cell_p99_ms'))} | {_f(_mean(rs, 'received_kbps'))} | "
                    f"{_f(_mean(rs, 'freezes'))} | {f} | {_pc(_mean(ms, 'utilization'))}, "
                    f"{_f(_mean(ms, 'network_p99_ms'))}, "
                    f"{_f(_mean(ms, 'received_kbps'))} |")  # fmt: skip
        cl = self.claims(results)
        if cl:
            lines += ["", "## Claims: OCC's Fig. 13 with Chromium as the sender", "", RULE_MD, ""]
            lines += claims_table(cl)
        lines += ["", f"![utilization and latency]({self.plot_names(results)[0]})", ""]
        return "\n".join(lines)

    def draw(self, results: dict[str, Any], png: Path) -> None:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        runs = results["runs"]
        rows = list(runs)
        series = [
            ("chromium-gcc", False, "Chromium GCC"),
            ("chromium-gcc", True, "GCC model"),
            ("chromium-occ", False, "Chromium + OCC"),
            ("chromium-occ", True, "OCC model"),
        ]
        fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
        for k, (key, mkey, label) in enumerate(
            (
                ("utilization", "utilization", "utilization"),
                ("cell_p99_ms", "network_p99_ms", "p99 network latency (ms, the cell's view)"),
            )
        ):
            ax = axes[k]
            w = 0.8 / len(series)  # the series side by side within each row's slot
            for j, (arm, model, name) in enumerate(series):
                ys = []
                for row in rows:
                    rs = runs[row].get(arm, [])
                    rs = [r["model"] for r in rs if r.get("model")] if model else rs
                    ys.append(_mean(rs, mkey if model else key) or 0.0)
                ax.bar([i + w * j for i in range(len(rows))], ys, w, label=name,
                       hatch="//" if model else None)  # fmt: skip
            ax.set_xticks([i + 0.4 - w / 2 for i in range(len(rows))], rows, rotation=20,
                          fontsize=7)  # fmt: skip
            ax.set_ylabel(label)
            if key == "cell_p99_ms":
                ax.set_yscale("log")
        axes[0].legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(png, dpi=100)
        plt.close(fig)


@functools.lru_cache(maxsize=4)
def _read_recorded(path: str, stamp: tuple[int, int]) -> dict[str, Any]:
    try:
        doc = json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        raise OctoricError(f"--recorded {path}: {e}") from e
    if not isinstance(doc, dict):
        raise OctoricError(f"--recorded {path}: not a results JSON (an object)")
    return doc


def _group(row: str) -> str:
    return "routes" if row.startswith("route-") else "traces"


def _ratio(a: Any, b: Any) -> float:
    return float(a) / float(b) if a and b else float("nan")


def _mean(rs: list[dict[str, Any]], k: str) -> float | None:
    v = [float(r[k]) for r in rs if r.get(k) is not None]
    return statistics.fmean(v) if v else None


def _f(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.4g}"


def _pc(v: float | None) -> str:
    return "n/a" if v is None else f"{100 * v:.1f} %"


def _within(ref: float | None, model: float | None, tol: float = 0.20) -> str:
    if not ref or model is None:
        return "n/a"
    return "yes" if abs(model - ref) <= tol * ref else f"no ({model / ref:.2f}x)"


register(WebrtcEval())
