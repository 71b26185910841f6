"""One live run of a cell with a real UDP flow: the simulator (``LiveSim``, no RIC needed: its
E2 agents keep retrying), ``udp_tool recv`` in the first real UE's namespace and ``udp_tool
send`` in the server's. The tests and ``octoric bench realue`` use it."""

from __future__ import annotations

import asyncio
import json
import sys
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from octoric.sim.live import LiveOptions, LiveSim
from octoric.sim.measurements import KpmReport
from octoric.sim.scenario import Scenario

TOOL = [sys.executable, "-m", "octoric.sim.realue.udp_tool"]


@dataclass
class UeReports:
    """The engine's KPM reports (what the E2 agent encodes) for one UE, per slot."""

    amf: int
    slots: list[np.ndarray] = field(default_factory=list)
    sent: list[np.ndarray] = field(default_factory=list)  # bytes the scheduler sent
    prb: list[np.ndarray] = field(default_factory=list)

    def on_report(self, rep: KpmReport, now_us: int) -> None:
        j = rep.ue_ids.index(self.amf)
        self.slots.append(rep.start_slot + np.arange(rep.n_slots))
        self.sent.append(rep.ue_thp_dl_kbps[:, j] * rep.slot_us / 8000.0)
        self.prb.append(rep.prb_used_dl[:, j])

    def cat(self, name: str) -> np.ndarray:
        parts = getattr(self, name)
        return np.concatenate(parts) if parts else np.zeros(0)


@dataclass
class UdpRun:
    sim: LiveSim
    status: dict[str, Any]  # the path's status at the end (LiveSim live_fields "real_ue")
    sender: dict[str, Any]
    receiver: dict[str, Any]
    reports: UeReports
    start_mono: float  # the live clock's slot-0 time (time.monotonic)
    slot_s: float

    def grants_vs_delivery(self, window_s: float = 0.1, trim_s: float = 0.5) -> dict[str, float]:
        """Bytes the scheduler sent to the UE vs bytes its socket received, in wall-clock
        windows (slot ends vs arrival times), the first and last ``trim_s`` of service left
        out: the total relative error and the largest window's absolute error in bytes."""
        sent = self.reports.cat("sent")
        slot_end = (self.reports.cat("slots") + 1) * self.slot_s + self.start_mono
        busy = slot_end[sent > 0]
        if len(busy) == 0:
            return {"windows": 0, "total_rel_error": float("nan"), "max_window_error_bytes": 0}
        edges = np.arange(busy[0] + trim_s, busy[-1] - trim_s, window_s)
        g = np.histogram(slot_end, edges, weights=sent)[0]
        arr = np.asarray(self.receiver["arrival_ns"]) / 1e9
        d = np.histogram(arr, edges, weights=np.asarray(self.receiver["sizes"]))[0]
        # per millisecond: granted minus delivered so far, at every ms boundary (a packet is
        # delivered whole when its last byte was granted, so this stays within ~a packet)
        ms = np.arange(edges[0], edges[-1], 0.001)
        g_ms = np.histogram(slot_end, ms, weights=sent)[0]
        d_ms = np.histogram(arr, ms, weights=np.asarray(self.receiver["sizes"]))[0]
        lag = np.cumsum(g_ms) - np.cumsum(d_ms)
        return {
            "windows": len(g),
            "granted_bytes": float(g.sum()),
            "delivered_bytes": float(d.sum()),
            "total_rel_error": float(abs(d.sum() - g.sum()) / max(g.sum(), 1.0)),
            "max_window_error_bytes": float(np.abs(d - g).max()) if len(g) else 0.0,
            "p99_window_error_bytes": float(np.percentile(np.abs(d - g), 99)) if len(g) else 0.0,
            "min_window_granted_bytes": float(g.min()) if len(g) else 0.0,
            "ms_windows": len(g_ms),
            "max_cumulative_gap_bytes": float(np.abs(lag).max()) if len(lag) else 0.0,
        }

    def delivery_envelope(self, late_ms: float, step_ms: float = 0.1) -> dict[str, float]:
        """Delivered bytes so far against granted bytes so far, every ``step_ms`` on the wall
        clock: ``ahead_bytes``, the most ever delivered beyond what was granted by then (a path
        that ignored grants runs ahead by the offered excess), and ``behind_bytes``, the most
        granted ``late_ms`` earlier but still not delivered (a path that queues or paces on
        its own falls behind however late the engine's writes are allowed to be)."""
        sent = self.reports.cat("sent")
        slot_end = (self.reports.cat("slots") + 1) * self.slot_s + self.start_mono
        order = np.argsort(slot_end, kind="stable")
        g_t, g_c = slot_end[order], np.cumsum(sent[order])
        arr = np.asarray(self.receiver["arrival_ns"]) / 1e9
        d_c = np.cumsum(np.asarray(self.receiver["sizes"], dtype=float))
        if len(arr) == 0:
            return {"ahead_bytes": 0.0, "behind_bytes": float(g_c[-1]) if len(g_c) else 0.0}
        t = np.arange(arr[0], arr[-1], step_ms / 1000.0)

        def so_far(times: np.ndarray, cum: np.ndarray, at: np.ndarray) -> np.ndarray:
            i = np.searchsorted(times, at, side="right")
            return np.where(i > 0, cum[np.maximum(i - 1, 0)], 0.0)

        delivered = so_far(arr, d_c, t)
        return {
            "ahead_bytes": float((delivered - so_far(g_t, g_c, t)).max()),
            "behind_bytes": float((so_far(g_t, g_c, t - late_ms / 1000.0) - delivered).max()),
        }


async def start_real(sc: Scenario, seed: int, opts: LiveOptions,
                     kpm_sink: Any = None) -> tuple[LiveSim, asyncio.Task[Any]]:  # fmt: skip
    """Start ``sc`` live and return once its real-UE namespaces are up (or raise why not)."""
    sim = LiveSim(sc, seed, opts)
    if kpm_sink is not None:
        sim.engine.add_kpm_sink(kpm_sink)
    task = asyncio.create_task(sim.run())
    ready = asyncio.create_task(sim.real_ready.wait())
    await asyncio.wait([task, ready], timeout=15, return_when=asyncio.FIRST_COMPLETED)
    if not ready.done():
        ready.cancel()
        await task  # raises why the path did not start
        raise RuntimeError("the real-UE path did not start")
    return sim, task


async def spawn(sim: LiveSim, netns: str, argv: list[str],
                stdin: bool = False) -> asyncio.subprocess.Process:  # fmt: skip
    """``argv`` inside one of the run's namespaces, its stdout (and stdin) piped."""
    assert sim.real is not None
    pipe = asyncio.subprocess.PIPE
    return await asyncio.create_subprocess_exec(
        *sim.real.ns.exec_argv(netns, argv), stdout=pipe, stdin=pipe if stdin else None
    )


async def run_udp(sc: Scenario, send_args: list[str], send_s: float, total_s: float,
                  seed: int = 7, opts: LiveOptions | None = None) -> UdpRun:  # fmt: skip
    """Run ``sc`` live for ``total_s`` with a receiver in UE 0's namespace and a sender
    (``udp_tool send`` with ``send_args``) in the server's for ``send_s`` seconds."""
    opts = opts or LiveOptions(ric_port=9)  # port 9 (discard): nobody answers, E2 retries
    opts.duration_s = total_s
    rep = UeReports(0)
    sim, task = await start_real(sc, seed, opts, rep)
    assert sim.real is not None
    rep.amf = sim.engine.ues[sim.real_ues[0]].amf_ue_ngap_id
    ns = sim.real.ns
    rcv = await spawn(sim, ns.ue_ns[0], [*TOOL, "recv", "--seconds", str(total_s - 1.0)])
    await asyncio.sleep(0.5)
    snd = await spawn(sim, ns.server_ns, [*TOOL, "send", "--seconds", str(send_s), *send_args])
    s_out, r_out = await asyncio.gather(snd.communicate(), rcv.communicate())
    res = await task
    return UdpRun(
        sim, res.summary["live"]["real_ue"], json.loads(s_out[0]), json.loads(r_out[0]), rep,
        sim.clock.start, sim.engine.slot_us / 1e6,
    )  # fmt: skip
