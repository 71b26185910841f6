"""The live simulator: the engine paced by the wall clock, one E2 node agent per gNB talking to
the RIC, a UDP listener for ABW feedback, a status file, and the same summary as offline.

Everything is one asyncio loop: every tick (1 ms) the engine advances to the wall clock's slot
(``engine.run_until``); the agents are its KPM and mobility sinks and send what they encode
from their own tasks; UDP datagrams are handled between ticks. ``LiveSim`` is the in-process
API (tests use it beside a real RIC); ``run_live`` is ``octoric sim run --live``.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import logging
import os
import signal
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from octoric import realtime
from octoric.contracts import ports
from octoric.contracts.feedback import FeedbackFormatError, parse_feedback
from octoric.e2sm import kpm_version
from octoric.e2sm.kpm_version import KpmVersion
from octoric.sim.clock import WallClockStats
from octoric.sim.e2agent import E2Agent
from octoric.sim.engine import Engine
from octoric.sim.ground_truth import HandoverLog
from octoric.sim.measurements import AbwSource, KpmReport
from octoric.sim.realue.netns import SERVER_ADDR, Namespaces
from octoric.sim.realue.path import RealUePath
from octoric.sim.realue.release import ImmediateRelease, best_release
from octoric.sim.scenario import Scenario
from octoric.sim.summary import build_summary

log = logging.getLogger("sim.live")

STATUS_INTERVAL_S = 1.0


class AsyncWallClock:
    """``WallClock`` for an asyncio loop: every ``tick_ms`` the engine catches up with the
    wall clock (however late the tick, no slot is skipped: ``run_until`` runs them all).

    ``lookahead_ms``: run every slot that starts within this long from now, as a gNB's MAC
    schedules a slot ahead of its air time (the real-UE path releases each slot's packets at
    its end on the wall clock, so the engine must have decided it by then)."""

    def __init__(self, tick_ms: float = 1.0, lookahead_ms: float = 0.0) -> None:
        self.tick_s = tick_ms / 1000.0
        self.ahead_s = lookahead_ms / 1000.0
        self.stats = WallClockStats()
        self.start = 0.0

    async def run(self, engine: Engine, end_slot: int, stop: asyncio.Event) -> WallClockStats:
        st = self.stats
        slot_s = engine.slot_us / 1e6
        self.start = start = time.monotonic() - engine.slot * slot_s
        next_tick = time.monotonic()
        while engine.slot < end_slot and not stop.is_set():
            wall = time.monotonic()
            if wall - next_tick > self.tick_s:
                st.late_ticks += 1
            target = min(end_slot, int((wall + self.ahead_s - start) / slot_s) + 1)
            if target > engine.slot:
                engine.run_until(target)
            st.ticks += 1
            lag = (time.monotonic() + self.ahead_s - start) - engine.slot * slot_s
            st.max_lag_ms = max(st.max_lag_ms, lag * 1000.0)
            next_tick = max(next_tick + self.tick_s, time.monotonic() - self.tick_s)
            await asyncio.sleep(max(0.0, next_tick - time.monotonic()))
        return st


class UdpAbw(AbwSource):
    """ABW of OCC-fed senders from the OCC xApp's UDP feedback (JSON datagrams). The latest
    target per UE; None (fall back to GCC) before the first datagram and while the xApp says
    ``fallback``."""

    name = "occ-xapp-udp"

    def __init__(self) -> None:
        self.latest: dict[int, float | None] = {}

    def on_report(self, report: KpmReport, now_us: int) -> None:
        pass  # the xApp computes the ABW from the E2 indications, not from in-process reports

    def estimate_bps(self, ue_id: int) -> float | None:
        return self.latest.get(ue_id)


@dataclass
class FeedbackStats:
    datagrams: int = 0
    applied: int = 0
    bad: int = 0
    unknown_ue: int = 0
    last_error: str = ""


class FeedbackApplier(asyncio.DatagramProtocol):
    """UDP feedback from the OCC xApp (``contracts.feedback``, JSON format): sets the UE's
    target in ``abw`` and hands it to the UE's OCC-fed senders at once (the datagram travelled
    the real path)."""

    def __init__(self, engine: Engine, abw: UdpAbw) -> None:
        self.engine, self.abw = engine, abw
        self.stats = FeedbackStats()
        # a real UE's feedback goes on to its application (LiveSim sets it with real UEs)
        self.relay: Callable[[int, bytes], bool] | None = None
        self.ue_of_amf = {u.amf_ue_ngap_id: u.idx for u in engine.ues}

    def datagram_received(self, data: bytes, addr: tuple[str | Any, int]) -> None:
        st = self.stats
        st.datagrams += 1
        try:
            fb = parse_feedback(data)
            if fb.ue is None:
                raise FeedbackFormatError("the simulator's flows take JSON feedback (with 'ue')")
        except FeedbackFormatError as e:
            st.bad += 1
            st.last_error = str(e)
            return
        amf, target = fb.ue, None if fb.fallback else fb.target_bps
        ue = self.ue_of_amf.get(amf)
        if ue is None:
            st.unknown_ue += 1
            return
        self.abw.latest[amf] = target
        if self.relay is None or not self.relay(ue, data):  # a simulated UE's own senders
            now = self.engine.slot * self.engine.slot_us
            for f in self.engine.flows:
                if f.ue == ue and f.ctrl is not None and f.ctrl.wants_abw:
                    f.abw_bps = target
                    f.ctrl.on_abw(now, target)
        st.applied += 1


@dataclass
class LiveOptions:
    ric_host: str = "127.0.0.1"
    ric_port: int = ports.E2
    transport: str = "tcp"
    duration_s: float | None = None  # None: until stop() / SIGTERM (the scenario's length caps it)
    status_path: Path | None = None
    feedback_port: int | None = None  # UDP port on 127.0.0.1 (0: any free port)
    occ_register: str | None = None  # the OCC xApp's POST /occ/v1/flows URL
    tick_ms: float = 1.0
    # how far ahead of the wall clock slots are scheduled (None: 2 ms with real UEs, else 0)
    lookahead_ms: float | None = None
    # SCHED_FIFO priority of the real-UE path's release thread (0: ordinary; needs root, which
    # the real-UE path needs anyway); a gNB runs its real-time threads so
    release_priority: int = 10
    # "thread": the native release thread where built; "immediate": write from the event loop
    release: Literal["thread", "immediate"] = "thread"
    # SCHED_FIFO priority of the event loop's thread while real UEs run (0: ordinary): on a busy
    # host an ordinary thread wakes milliseconds late and the engine falls behind its lookahead;
    # processes it starts (applications in the namespaces) run ordinary (reset on fork)
    loop_priority: int = 5
    # called once the real-UE namespaces are up (the CLI prints where to run applications)
    on_real_ready: Callable[[RealUePath], None] | None = None
    handover_log: Path | None = None  # ground truth: one JSON line per handover start / end
    series_path: Path | None = None  # one JSON line per status: the run's time series
    # E2SM-KPM version of each gNB (gNB g speaks kpm_versions[g % len]); () = v04.00
    kpm_versions: tuple[KpmVersion, ...] = ()


@dataclass
class LiveResult:
    summary: dict[str, Any]
    stopped_because: str = ""


class LiveSim:
    def __init__(self, scenario: Scenario, seed: int, opts: LiveOptions) -> None:
        self.sc, self.seed, self.opts = scenario, seed, opts
        # output folders exist before the first write (a fresh clone has no build/sim/)
        for out in (opts.status_path, opts.handover_log, opts.series_path):
            if out is not None:
                out.parent.mkdir(parents=True, exist_ok=True)
        self.udp_abw = UdpAbw() if opts.feedback_port is not None else None
        self.engine = Engine(scenario, seed, None, self.udp_abw)
        self.t0_unix = time.time()
        eng = self.engine
        # UEs whose flow is `traffic: real`: real packets through namespaces (sim/realue/)
        self.real_ues = sorted({f.ue for f in eng.flows if f.spec.traffic == "real"})
        ahead = (
            opts.lookahead_ms if opts.lookahead_ms is not None else (2.0 if self.real_ues else 0.0)
        )
        self.clock = AsyncWallClock(opts.tick_ms, ahead)
        n_gnb = max(c.gnb for c in eng.cells) + 1
        kv = opts.kpm_versions or (kpm_version.DEFAULT,)
        self.agents = [
            E2Agent(
                eng,
                g,
                opts.ric_host,
                opts.ric_port,
                opts.transport,
                self.slot_to_unix,
                kpm_version=kv[g % len(kv)],
            )
            for g in range(n_gnb)
        ]
        for a in self.agents:
            eng.add_kpm_sink(a)
            eng.add_mobility_sink(a.on_mobility)
        self.ho_log: HandoverLog | None = None
        if opts.handover_log is not None:
            ncis = {i: n for a in self.agents for i, n in a.cell_nci.items()}
            self.ho_log = HandoverLog(opts.handover_log, eng, [a.meid for a in self.agents], ncis)
            eng.add_mobility_sink(self.ho_log)
        self.feedback: FeedbackApplier | None = None
        self.feedback_addr: tuple[str, int] | None = None
        self._udp: asyncio.DatagramTransport | None = None
        self.stop_event = asyncio.Event()
        self.stopped_because = ""
        self.wall_start = 0.0
        self.wall_seconds = 0.0
        self._final_nodes: list[dict[str, Any]] | None = None  # as they were at the stop
        self.registered: set[int] = set()  # UEs whose occ flows the OCC xApp knows
        self.register_errors = 0
        # per UE at the previous status: (simulated s, capacity bytes, delivered bytes)
        self._rate_mark: tuple[float, list[float], list[float]] | None = None
        self._frames_seen: dict[int, int] = {}  # flow -> frame latencies already reported
        self.real: RealUePath | None = None
        self.real_ready = asyncio.Event()  # set once the namespaces are up
        self._real_final: dict[str, Any] | None = None  # the path's status at the stop

    def _wall_ns_of_us(self, t_us: int) -> int:
        """Simulated µs -> time.monotonic_ns() of the live run."""
        return round(self.clock.start * 1e9) + t_us * 1000

    def _set_loop_priority(self, prio: int) -> bool:
        """SCHED_FIFO ``prio`` for the calling thread (0: back to ordinary); False if refused."""
        try:
            if prio > 0:
                policy = os.SCHED_FIFO | os.SCHED_RESET_ON_FORK
                os.sched_setscheduler(0, policy, os.sched_param(prio))
            else:
                os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
        except OSError as e:
            log.warning("event loop priority %d not applied (%s): running ordinary", prio, e)
            return False
        return True

    def _start_real_ues(self) -> None:
        eng = self.engine
        ns = Namespaces.create(len(self.real_ues))
        try:
            release = (ImmediateRelease() if self.opts.release == "immediate"
                       else best_release(self.opts.release_priority))  # fmt: skip
            self.real = RealUePath(eng, self.real_ues, ns, self._wall_ns_of_us, release)
            self.real.start()
        except BaseException:
            ns.close()
            raise
        for u in self.real.ues:
            log.info(
                "real UE %d: netns %s, address %s (server: netns %s, %s)",
                eng.ues[u.engine_ue].amf_ue_ngap_id,
                u.netns,
                u.address,
                ns.server_ns,
                SERVER_ADDR,
            )
        if self.opts.on_real_ready is not None:
            self.opts.on_real_ready(self.real)
        self.real_ready.set()

    def slot_to_unix(self, slot: int) -> float:
        return self.t0_unix + slot * self.engine.slot_us / 1e6

    def stop(self, reason: str = "stopped") -> None:
        if not self.stop_event.is_set():
            self.stopped_because = reason
            self.stop_event.set()

    async def run(self) -> LiveResult:
        loop = asyncio.get_running_loop()
        eng = self.engine
        if self.real_ues:  # first: it may refuse (not root), before anything else is open
            self._start_real_ues()
        if self.udp_abw is not None:
            fb = self.feedback = FeedbackApplier(eng, self.udp_abw)
            try:
                tr, _ = await loop.create_datagram_endpoint(
                    lambda: fb, local_addr=("127.0.0.1", self.opts.feedback_port or 0)
                )
            except BaseException:
                await self._close_real()
                raise
            self._udp = tr
            self.feedback_addr = tr.get_extra_info("sockname")[:2]
        rt, frozen = False, 0
        if self.real is not None:
            if self.feedback is not None:
                self.feedback.relay = self.real.relay_feedback
            if self.opts.loop_priority > 0:
                rt = self._set_loop_priority(self.opts.loop_priority)
            # a full collection over the start-up heap stalls the loop for tens of ms: the
            # engine would fall behind its lookahead (octoric/realtime.py)
            frozen = realtime.freeze_startup_heap()
        for a in self.agents:
            a.start()
        status = asyncio.create_task(self._status_loop())
        register = None
        if self.opts.occ_register and self.feedback_addr is not None:
            register = asyncio.create_task(self._register_loop(self.opts.occ_register))
        end = eng.end_slot
        if self.opts.duration_s is not None:
            end = min(end, round(self.opts.duration_s * 1e6 / eng.slot_us))
        self.t0_unix = time.time() - eng.slot * eng.slot_us / 1e6
        self.wall_start = time.monotonic()
        try:
            await self.clock.run(eng, end, self.stop_event)
            if not self.stopped_because:
                self.stopped_because = "duration"
        finally:
            if rt:
                self._set_loop_priority(0)
            if frozen:
                gc.unfreeze()  # (an embedding process, e.g. a test runner, goes on)
            self.wall_seconds = time.monotonic() - self.wall_start
            for t in (status, register):
                if t is not None:
                    t.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await t
            self._final_nodes = [self._node(a) for a in self.agents]
            for a in self.agents:
                await a.stop()
            if self.ho_log is not None:
                self.ho_log.close()
            if self._udp is not None:
                self._udp.close()
            await self._close_real()
        self.write_status()
        return LiveResult(self.summary(), self.stopped_because)

    async def _close_real(self) -> None:
        if self.real is not None and self._real_final is None:
            self.real.stop()
            await asyncio.sleep(0.01)  # the release thread writes the last slot's packets
            self.real.close()
            self._real_final = self.real.status()
            self.real.ns.close()

    def occ_flow_ues(self) -> list[int]:
        """AMF-UE-NGAP-IDs of the UEs with an OCC-fed flow (a real flow with ``scheme: occ``:
        its feedback is relayed to the application in the server namespace)."""
        eng = self.engine
        ues = {
            eng.ues[f.ue].amf_ue_ngap_id for f in eng.flows
            if (f.ctrl and f.ctrl.wants_abw)
            or (f.spec.traffic == "real" and f.spec.scheme == "occ")
        }  # fmt: skip
        return sorted(ues)

    async def _register_loop(self, url: str) -> None:
        """Register every OCC-fed UE's feedback address with the OCC xApp (JSON format);
        retried every 2 s until each is accepted (the xApp may start after the sim), and
        again every 30 s (the xApp may have restarted)."""
        assert self.feedback_addr is not None
        host, port = self.feedback_addr
        g = self.agents[0].guami
        guami = f"{g.plmn.hex()}:{g.amf_region_id}:{g.amf_set_id}:{g.amf_pointer}"
        while True:
            for amf in self.occ_flow_ues():
                body = {"id": f"sim-ue{amf}", "ue": amf, "guami": guami,
                        "address": f"{host}:{port}", "format": "json"}  # fmt: skip
                if await asyncio.to_thread(_post_json, url, body):
                    self.registered.add(amf)
                else:
                    self.registered.discard(amf)
                    self.register_errors += 1
            pending = set(self.occ_flow_ues()) - self.registered
            await asyncio.sleep(2.0 if pending else 30.0)

    def summary(self) -> dict[str, Any]:
        s = build_summary(self.engine, self.wall_seconds)
        s["live"] = self.live_fields()
        s["latency_quantiles"] = self.latency_quantiles()
        return s

    def latency_quantiles(self) -> dict[str, Any]:
        """Per video flow, the 0th..100th percentiles of its frame and network latency (ms):
        the run report's CDFs, without every frame in the summary."""
        q = np.linspace(0.0, 100.0, 101)

        def pct(values: Sequence[float]) -> list[float] | None:
            return np.round(np.percentile(values, q), 3).tolist() if len(values) else None

        flows = [
            {"flow": f.idx, "frame_ms": pct(f.receiver.frame_latency_ms),
             "network_ms": pct(f.receiver.net_latency_ms)}
            for f in self.engine.flows if f.receiver is not None
        ]  # fmt: skip
        return {"percentiles": q.tolist(), "flows": flows}

    def live_fields(self) -> dict[str, Any]:
        cs = self.clock.stats
        return {
            "stopped_because": self.stopped_because,
            "ric_e2": f"{self.opts.ric_host}:{self.opts.ric_port}",
            "transport": self.opts.transport,
            "clock": {
                "ticks": cs.ticks,
                "late_ticks": cs.late_ticks,
                "max_lag_ms": round(cs.max_lag_ms, 3),
            },
            "nodes": self._final_nodes or [self._node(a) for a in self.agents],
            "real_ue": self._real_final or (self.real.status() if self.real else None),
            "feedback": None
            if self.feedback is None
            else {
                "address": f"{self.feedback_addr[0]}:{self.feedback_addr[1]}"
                if self.feedback_addr
                else None,
                **asdict(self.feedback.stats),
                "registered_ues": sorted(self.registered),
                "register_errors": self.register_errors,
            },
        }

    @staticmethod
    def _node(a: E2Agent) -> dict[str, Any]:
        st = asdict(a.stats)
        st["encode_seconds"] = round(a.stats.encode_seconds, 4)
        return {**a.status(), "stats": st}

    def ue_rates(self) -> list[dict[str, Any]]:
        """Per UE since the previous call (about the last second): the simulator's true
        capacity (the UE's equal PRB share at its bits per PRB), its delivered throughput,
        and the latest ABW the OCC xApp sent for it (None: none yet, or fallback)."""
        eng = self.engine
        now = eng.slot * eng.slot_us / 1e6
        cap = [float(u.cap_bytes) for u in eng.ues]
        dlv = [float(u.delivered_bytes) for u in eng.ues]
        mark, self._rate_mark = self._rate_mark, (now, cap, dlv)
        dt = now - mark[0] if mark is not None else now
        out = []
        for i, u in enumerate(eng.ues):
            c0, d0 = (mark[1][i], mark[2][i]) if mark is not None else (0.0, 0.0)
            abw = self.udp_abw.latest.get(u.amf_ue_ngap_id) if self.udp_abw else None
            out.append({
                "ue": u.amf_ue_ngap_id,
                "capacity_kbps": round((cap[i] - c0) * 8 / dt / 1e3, 1) if dt > 0 else None,
                "throughput_kbps": round((dlv[i] - d0) * 8 / dt / 1e3, 1) if dt > 0 else None,
                "abw_kbps": None if abw is None else round(abw / 1e3, 1),
                "dropper": _dropper_state(u.queue.dropper),
            })  # fmt: skip
        return out

    def flow_rates(self) -> list[dict[str, Any]]:
        """Per video flow since the previous call: the sender's target rate now, the frames
        decoded and their latency (p50/p99 ms), and the packets dropped at the gNB so far
        (``dropped``: by Octopus's dropper; ``tail_dropped``: a full RLC queue)."""
        eng = self.engine
        now_us = eng.slot * eng.slot_us
        out = []
        for f in eng.flows:
            if f.receiver is None:
                continue
            lat = f.receiver.frame_latency_ms
            seen = self._frames_seen.get(f.idx, 0)
            new = sorted(lat[seen:])
            self._frames_seen[f.idx] = len(lat)
            target = f.ctrl.target_bps(now_us) if f.ctrl is not None else None
            out.append({
                "flow": f.idx,
                "ue": eng.ues[f.ue].amf_ue_ngap_id,
                "scheme": f.spec.scheme,
                "target_kbps": None if target is None else round(target / 1e3, 1),
                "frames": len(new),
                "frame_p50_ms": round(new[len(new) // 2], 2) if new else None,
                "frame_p99_ms": round(new[min(len(new) - 1, int(len(new) * 0.99))], 2)
                if new else None,
                "dropped_pkts": f.dropped_pkts,
                "tail_dropped_pkts": f.tail_dropped_pkts,
            })  # fmt: skip
        return out

    def status(self) -> dict[str, Any]:
        eng = self.engine
        return {
            "ue_rates": self.ue_rates(),
            "flow_rates": self.flow_rates(),
            "pid": os.getpid(),
            "updated_unix": round(time.time(), 3),
            "sim_seconds": round(eng.slot * eng.slot_us / 1e6, 3),
            "scenario": self.sc.name,
            "cells": len(eng.cells),
            "gnbs": len(self.agents),
            "ues": len(eng.ues),
            "flows": len(eng.flows),
            "handovers": len(eng.handovers),
            **self.live_fields(),
        }

    def write_status(self) -> None:
        p = self.opts.status_path
        if p is None and self.opts.series_path is None:
            return
        st = self.status()
        if p is not None:
            tmp = p.with_name(p.name + ".tmp")
            tmp.write_text(json.dumps(st, indent=1))
            tmp.replace(p)  # atomic: a reader never sees half a file
        if self.opts.series_path is not None:  # the report's time series (deploy.report)
            keys = ("sim_seconds", "updated_unix", "ue_rates", "flow_rates", "handovers")
            row = {k: st[k] for k in keys}
            with self.opts.series_path.open("a", encoding="utf-8") as f:
                f.write(json.dumps(row, separators=(",", ":")) + "\n")

    async def _status_loop(self) -> None:
        while True:
            try:
                self.write_status()
            except OSError as e:
                log.warning("cannot write the status file: %s", e)
            await asyncio.sleep(STATUS_INTERVAL_S)


async def run_live(
    scenario: Scenario, seed: int, opts: LiveOptions, stop_now: Callable[[], bool] | None = None
) -> LiveResult:
    """Run until the duration, the scenario's end, SIGTERM or SIGINT (``stop_now``: a
    SIGTERM that came before the loop's handlers were installed)."""
    sim = LiveSim(scenario, seed, opts)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, sim.stop, f"signal {signal.Signals(sig).name}")
    if stop_now is not None and stop_now():
        sim.stop("signal SIGTERM")
    try:
        return await sim.run()
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)


def _post_json(url: str, body: dict[str, Any]) -> bool:
    import os
    import urllib.request

    from octoric.contracts import auth

    token = os.environ.get(auth.TOKEN_ENV, "")  # the run's (octoric run gives it)
    headers = {"Content-Type": "application/json", **auth.bearer(token)}
    req = urllib.request.Request(url, json.dumps(body).encode(), headers, method="POST")
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: no proxy
    try:
        with opener.open(req, timeout=2) as r:
            return bool(200 <= r.status < 300)
    except OSError:
        return False


def _dropper_state(d: Any) -> dict[str, Any] | None:
    """The UE's Octopus dropper as the status file shows it: None while off."""
    if d is None:
        return None
    c = d.cfg
    return {
        "window_ms": c.window_ms, "drop_by_message": c.drop_by_msg,
        "drop_by_bitrate": c.drop_by_bitrate, "levels": c.levels,
        "dropped_packets": d.stats.dropped_packets,
        "dropped_msgs_by_message": d.stats.dropped_msgs_by_msg,
        "dropped_msgs_by_bitrate": d.stats.dropped_msgs_by_bitrate,
    }  # fmt: skip
