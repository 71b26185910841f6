"""The simulation engine: cells, UEs, flows and an event heap, advanced slot by slot.

Time is an integer number of microseconds. At the start of slot ``s`` (``t = s * slot_us``)
the engine runs every event due at or before ``t`` (frames, packet arrivals at the gNB,
feedback, handovers, KPM deliveries), then each cell's scheduler grants the slot's PRBs;
packets completed in the slot reach the UE at the slot's end.

The engine runs events and knows no flow kind or scheme: flows come from the registry of flow
kinds by traffic type (``sim/flows/``), which picks their parts by scheme (``sim/cc``,
``sim/video_on_transport.py``); each event's kind names its handler (``sim/events.py``).

The engine knows no clock: ``run_until(slot)`` advances simulated time. The offline runner
calls it once for the whole run (as fast as possible, idle stretches skipped); a live
driver (issue #5/#6 live part) will call it with the wall-clock slot, inject packets with
``inject_packet`` and register the E2 agent as a ``KpmSink``. The algorithm objects
(rate controllers, ABW sources) are the same in both.
"""

from __future__ import annotations

import heapq
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from octoric.sim.channels import (
    Channel,
    ChannelContext,
    ConstantChannel,
    CqiTraceChannel,
    FadingChannel,
    MahimahiChannel,
    PulseChannel,
    RouteChannel,
    StepsChannel,
    gnb_view,
    reported_block,
)
from octoric.sim.dropper import DropperConfig, OctopusDropper
from octoric.sim.errors import SimError
from octoric.sim.events import HANDLERS, event_kind
from octoric.sim.flows import FlowState, build_flow
from octoric.sim.mcs import McsMapper
from octoric.sim.measurements import (
    AbwSource,
    KpmRecorder,
    KpmReport,
    KpmSink,
    PhyCapacityAbw,
    abw_source_factory,
)
from octoric.sim.mobility import HandoverEvent, handover_schedule
from octoric.sim.packets import Packet, PacketSink
from octoric.sim.ran import Cell, CellConfig, TddPattern, UeRadio
from octoric.sim.rlc import DlQueue
from octoric.sim.scenario import ChannelSpec, FlowSpec, Scenario
from octoric.sim.video import WiredPath

__all__ = ["Engine", "FlowState", "HandoverRecord", "MobilityEvent", "MobilitySink",
           "progress_to_stderr"]  # fmt: skip

BLOCK_SLOTS = 1000
MIN_QUEUE_BYTES = 1500  # a time-sized queue holds at least one full packet


@dataclass
class HandoverRecord:
    ue: int
    amf_ue_ngap_id: int
    start_s: float
    duration_ms: float
    outage_ms: float
    source_cell: int
    target_cell: int
    failed: bool
    pingpong: bool


@dataclass
class MobilityEvent:
    """A handover starts (the UE leaves ``source_cell``) or ends (it is attached to
    ``target_cell``); what a gNB's E2SM-RC UE-information report tells the RIC."""

    kind: str  # "ho_start" | "ho_end"
    ue: int
    amf_ue_ngap_id: int
    source_cell: int
    target_cell: int
    t_us: int
    failed: bool
    interruption_us: int = 0  # ho_end: how long the UE was not served (as the RAN measures it)


MobilitySink = Callable[[MobilityEvent], None]


class Engine:
    def __init__(
        self,
        scenario: Scenario,
        seed: int = 1,
        progress: Callable[[float, float], None] | None = None,
        abw_source: AbwSource | None = None,
    ) -> None:
        self.sc = scenario
        self.seed = seed
        ran = scenario.ran
        self.slot_us = round(ran.slot_ms * 1000)
        self.end_slot = round(scenario.duration_s * 1e6 / self.slot_us)
        self.progress = progress
        self._root_seed = np.random.SeedSequence(seed)
        self.mapper = McsMapper(ran.mcs_table, ran.layers)
        self.ctx = ChannelContext(self.slot_us, ran.n_prb, self.mapper)
        self.tdd = TddPattern(ran.tdd, ran.special_dl).factors()
        self.cells = [
            Cell(i, cell_id=i % ran.cells_per_gnb, gnb=i // ran.cells_per_gnb,
                 cfg=CellConfig(ran.n_prb, ran.scheduler))
            for i in range(ran.cells)
        ]  # fmt: skip
        self.events: list[tuple[int, int, int, Any]] = []
        self._seq = 0
        self.ues: list[UeRadio] = []
        self.channels: list[Channel] = []
        self.ue_home: list[int] = []
        self.queue_ms: list[float | None] = []  # UeSpec.queue_limit_ms, per UE
        self.flows: list[FlowState] = []
        self.handovers: list[HandoverRecord] = []
        self.gnb_ue_counter = [0] * (ran.cells // ran.cells_per_gnb + 1)
        self.kpm_sinks: list[KpmSink] = []
        self.mobility_sinks: list[MobilitySink] = []
        self.abw = abw_source
        self.phy_est: PhyCapacityAbw | None = None
        self.harq_rng = self.new_rng()
        self._harq_bler = ran.harq_bler
        self._harq_rtt_us = int(ran.harq_rtt_ms * 1000)
        self._harq_max_tx = ran.harq_max_tx
        self._harq_slots = max(1, round(self._harq_rtt_us / self.slot_us))
        self._served: list[UeRadio] = []  # UEs served in this slot, until KPM has recorded them
        self._last_progress = 0.0
        self.slot = 0
        self.block_start = -1  # no channel block yet
        self.block_end = 0
        self.block_tdd: list[float] = []
        self.next_ts = 0
        self._raw_bits = np.zeros((0, 0))
        self._mcs_bits = np.asarray(self.mapper.bits)
        self._ts_bins: list[float] = []
        self.ts_ue_delivered: list[list[int]] = []
        self.ts_ue_capacity: list[list[float]] = []
        self._build()

    # --- construction ------------------------------------------------------------------
    def new_rng(self) -> np.random.Generator:
        # spawn() is stateful: the n-th call always yields the n-th child (deterministic)
        return np.random.default_rng(self._root_seed.spawn(1)[0])

    def _channel(self, spec: ChannelSpec) -> Channel:
        ctx = self.ctx
        k = spec.kind
        if k == "constant":
            r = None if spec.rate_mbps is None else spec.rate_mbps * 1e6
            return ConstantChannel(ctx, rate_bps=r, mcs=spec.mcs)
        if k == "pulse":
            return PulseChannel(ctx, spec.high_mbps * 1e6, spec.low_mbps * 1e6, spec.switch_s)
        if k == "fading":
            return FadingChannel(
                ctx, self.new_rng(), spec.mean_snr_db, spec.std_db, spec.corr_time_s, spec.step_ms
            )
        if k == "steps":
            return StepsChannel(ctx, self.new_rng(), spec.high_mbps * 1e6, spec.low_mbps * 1e6,
                                spec.switch_s)  # fmt: skip
        if k == "route":
            return RouteChannel(ctx, self.new_rng(), spec.route, spec.step_ms)
        assert spec.path is not None
        if k == "mahimahi":
            return MahimahiChannel(ctx, spec.path, spec.offset, spec.csi_period_ms, spec.report)
        return CqiTraceChannel(ctx, spec.path, spec.offset)

    def _build(self) -> None:
        sc = self.sc
        end_us = self.end_slot * self.slot_us
        needs_kpm = False
        for spec in sc.ues:
            mob = spec.mobility.resolve()
            for _ in range(spec.count):
                i = len(self.ues)
                dropper = OctopusDropper(self.slot_us, DropperConfig()) if spec.dropper else None
                q = DlQueue(spec.queue_limit_bytes, dropper, pdrop=spec.pdrop)
                u = UeRadio(i, 1000 + i, q)
                self.ues.append(u)
                self.channels.append(self._channel(spec.channel))
                self.ue_home.append(spec.cell)
                self.queue_ms.append(spec.queue_limit_ms)
                self._attach(u, spec.cell, 0)
                for ev in handover_schedule(mob, i, end_us, self.new_rng()):
                    self.push(ev.start_us, HANDOVER_STARTS, ev)
                for fspec in spec.flows:
                    f = build_flow(self, len(self.flows), i, fspec)
                    self.flows.append(f)
                    f.wire = spec.wire_headers
                    if f.ctrl is not None and (f.ctrl.wants_abw or f.ctrl.wants_phy):
                        needs_kpm = True
        self.monitored = list(range(len(self.ues))) if needs_kpm else []
        self.kpm_period = max(1, round(self.sc.kpm_period_ms * 1000 / self.slot_us))
        self.recorder: KpmRecorder | None = None
        if needs_kpm:
            self._enable_kpm()
        self.ts_slots = max(1, round(sc.timeseries_ms * 1000 / self.slot_us))

    def _enable_kpm(self) -> None:
        if not self.monitored:
            self.monitored = list(range(len(self.ues)))
        self._gnb_cols: list[tuple[int, MahimahiChannel]] | None = None
        self.recorder = KpmRecorder(
            self.slot_us, [self.ues[i].amf_ue_ngap_id for i in self.monitored],
            len(self.cells), self.kpm_period, start=self.slot,
        )  # fmt: skip
        if self.block_start >= 0:  # enabled mid-run (a sink added by a live driver)
            self._raw_bits = self._reported_bits()
        if self.abw is None and self.sc.abw_source != "stand-in":
            factory = abw_source_factory(self.sc.abw_source)
            dl = sum(self.tdd) / len(self.tdd)
            self.abw = factory(self.slot_us, self.sc.ran.n_prb, self.sc.ran.scheduler, dl)
        if self.abw is None:
            self.abw = PhyCapacityAbw(self.slot_us, window_ms=self.sc.kpm_period_ms)
        if any(f.ctrl is not None and f.ctrl.wants_phy for f in self.flows):
            self.phy_est = PhyCapacityAbw(self.slot_us, window_ms=40.0)

    def add_mobility_sink(self, sink: MobilitySink) -> None:
        """Called at every handover start and end (the live E2 agent's RC reports)."""
        self.mobility_sinks.append(sink)

    def add_kpm_sink(self, sink: KpmSink) -> None:
        """Receive every KPM report at the gNB (the E2 agent's hook); enables recording."""
        self.kpm_sinks.append(sink)
        if self.recorder is None:
            self._enable_kpm()

    # --- what flows ask of the engine (``sim/flows/host.py``) ---------------------------
    def push(self, t_us: int, kind: int, arg: Any) -> None:
        self._seq += 1
        heapq.heappush(self.events, (t_us, self._seq, kind, arg))

    def wired_path(self, spec: FlowSpec) -> WiredPath:
        # a random stream only when the path draws (seeded runs without one stay as they were)
        return WiredPath(spec.path, self.new_rng() if spec.path.needs_rng else None)

    def to_gnb(self, f: FlowState, pkts: Iterable[Packet]) -> None:
        path = f.path
        assert path is not None
        events = self.events
        push = heapq.heappush
        seq = self._seq  # pushed inline: one event per packet is the engine's hottest path
        if path.simple:
            d = path.one_way_us
            for p in pkts:
                seq += 1
                push(events, (p.send_us + d, seq, PACKET_AT_GNB, p))
        else:
            for p in pkts:
                a = path.arrival_us(p.send_us, p.size)
                if a is None:
                    f.wired_lost_pkts += 1
                    continue
                seq += 1
                push(events, (a, seq, PACKET_AT_GNB, p))
        self._seq = seq

    def detached(self, ue: int) -> bool:
        return self.ues[ue].cell < 0

    def inject_packet(self, ue: int, pkt: Packet, payload: bytes | None, now_us: int) -> None:
        """A packet for UE ``ue`` reaches the gNB now (the live driver's entry point);
        ``payload``: bytes starting with its Octopus header, parsed here as the gNB does."""
        q = self.ues[ue].queue
        if payload is not None:
            q.enqueue_payload(pkt, payload, now_us)
        else:
            q.enqueue(pkt, now_us)
        if q.tail_dropped:
            self.flows[pkt.flow].tail_dropped_pkts += len(q.tail_dropped)
            q.tail_dropped.clear()

    def attach_external_flow(self, ue: int, sink: PacketSink) -> int:
        """The UE's ``traffic: real`` flow gets its packets from outside (``inject_packet``)
        and hands each delivered one to ``sink``; returns the flow's index."""
        for f in self.flows:
            if f.ue == ue and f.spec.traffic == "real":
                if f.ext_sink is not None:
                    raise SimError(f"UE {ue}'s real flow already has a packet sink")
                f.ext_sink = sink
                return f.idx
        raise SimError(f"UE {ue} has no flow with traffic: real")

    # --- the engine's own events: packets at the gNB, handovers, RAN-side reports ---------
    def _packet_at_gnb(self, t: int, pkt: Packet) -> None:
        f = self.flows[pkt.flow]
        q = self.ues[f.ue].queue
        if f.wire and pkt.hdr is not None:
            q.enqueue_payload(pkt, pkt.hdr.encode(), t)
        else:
            q.enqueue(pkt, t)
        if q.tail_dropped:
            f.tail_dropped_pkts += len(q.tail_dropped)
            q.tail_dropped.clear()

    def _deliver(self, t: int, p: Packet) -> None:
        """A packet reaches its UE: the flow's receiver (or the live path's sink) takes it."""
        fl = self.flows[p.flow]
        if fl.receiver is not None:
            fl.receiver.on_packet(p, t)
        if fl.tx_sink is not None:
            fl.tx_sink.on_packet(p, t)
        elif fl.ext_sink is not None:
            fl.ext_sink.on_packet(p, t)

    def _handover_ends(self, t: int, arg: tuple[HandoverEvent, int]) -> None:
        ev, target = arg
        prev = self.ues[ev.ue].cell
        self._attach(self.ues[ev.ue], target, self.slot)
        if self.mobility_sinks:
            src = -1 - prev if prev < 0 else prev
            amf = self.ues[ev.ue].amf_ue_ngap_id
            me = MobilityEvent("ho_end", ev.ue, amf, src, target, t, ev.failed, ev.outage_us)
            for sink in self.mobility_sinks:
                sink(me)
        if self.recorder is not None:
            e2 = int(self.sc.e2_delay_ms * 1000)
            self.push(t + e2, HANDOVER_AT_ABW_SOURCE, (self.ues[ev.ue].amf_ue_ngap_id, False))

    def _handover_at_abw_source(self, t: int, arg: tuple[int, bool]) -> None:
        if self.abw is not None:
            ue_id, start = arg
            self.abw.on_handover(ue_id, start, t)

    def _handover_report_at_server(self, t: int, f: FlowState) -> None:
        assert f.on_handover_report is not None
        f.on_handover_report(t)

    def _abw_at_sender(self, t: int, arg: tuple[FlowState, float | None]) -> None:
        f, v = arg
        assert f.ctrl is not None
        f.abw_bps = v
        f.ctrl.on_abw(t, v)

    def _phy_capacity_at_sender(self, t: int, arg: tuple[FlowState, float | None]) -> None:
        f, v = arg
        assert f.ctrl is not None
        f.phy_bps = v
        f.ctrl.on_phy_capacity(t, v)

    # --- attachment and handover -------------------------------------------------------
    def _cell_of_pos(self, pos: int) -> int:
        return pos % len(self.cells)

    def _attach(self, u: UeRadio, cell: int, slot: int) -> None:
        c = self.cells[cell]
        self._flush_cell(c, slot)
        prev = u.cell if u.cell >= 0 else -1 - u.cell
        if not u.gnb_ue_id or self.cells[prev].gnb != c.gnb:
            self.gnb_ue_counter[c.gnb] += 1
            u.gnb_ue_id = self.gnb_ue_counter[c.gnb]  # new gNB-CU-UE-F1AP-ID at a new gNB
        c.ues.append(u)
        c.ues.sort(key=lambda x: x.idx)
        u.cell = cell
        self._reshare(c)

    def _detach(self, u: UeRadio, slot: int) -> None:
        if u.cell < 0:
            return
        c = self.cells[u.cell]
        self._flush_cell(c, slot)
        c.ues.remove(u)
        u.cap_share = 0.0
        u.cell = -1 - u.cell  # remember the last cell while detached
        self._reshare(c)

    def _reshare(self, c: Cell) -> None:
        n = len(c.ues)
        for v in c.ues:
            v.cap_share = c.n_prb / n

    def _handover_starts(self, t: int, ev: HandoverEvent) -> None:
        u = self.ues[ev.ue]
        home = self.ue_home[ev.ue]
        src = self._cell_of_pos(home + ev.source)
        dst = self._cell_of_pos(home + ev.target)
        slot = self.slot
        cur = u.cell if u.cell >= 0 else -1 - u.cell
        self.cells[cur].handovers_out += 1
        self.cells[dst].handovers_in += 1
        self.handovers.append(
            HandoverRecord(
                ev.ue, u.amf_ue_ngap_id, t / 1e6, ev.duration_us / 1000, ev.outage_us / 1000,
                src, dst, ev.failed, ev.pingpong,
            )
        )  # fmt: skip
        if u.cell >= 0:
            self._detach(u, slot)
        self.push(t + ev.outage_us, HANDOVER_ENDS, (ev, dst))
        if self.mobility_sinks:
            me = MobilityEvent("ho_start", ev.ue, u.amf_ue_ngap_id, cur, dst, t, ev.failed)
            for sink in self.mobility_sinks:
                sink(me)
        if self.recorder is not None:
            e2 = int(self.sc.e2_delay_ms * 1000)
            self.push(t + e2, HANDOVER_AT_ABW_SOURCE, (u.amf_ue_ngap_id, True))
        for f in self.flows:  # handover reports to the servers of the UE's flows that read them
            if f.ue == ev.ue and f.on_handover_report is not None:
                t_srv = t + int(self.sc.e2_delay_ms * 1000) + f.dl_delay_us
                self.push(t_srv, HANDOVER_REPORT_AT_SERVER, f)

    # --- capacity accounting -----------------------------------------------------------
    def _flush(self, u: UeRadio, slot: int) -> None:
        a = u.cap_from
        if slot <= a:
            return
        if u.cap_share > 0.0:
            cum = u.bits_np
            bs = self.block_start
            u.cap_bytes += u.cap_share * float(cum[slot - bs] - cum[a - bs]) / 8.0
        u.cap_from = slot

    def _flush_cell(self, c: Cell, slot: int) -> None:
        if self.block_start < 0:
            return
        for v in c.ues:
            self._flush(v, slot)

    def _refill(self, slot: int) -> None:
        if self.block_start >= 0:
            for u in self.ues:
                self._flush(u, self.block_end)
        bs = (slot // BLOCK_SLOTS) * BLOCK_SLOTS
        self.block_start, self.block_end = bs, bs + BLOCK_SLOTS
        p = len(self.tdd)
        tdd = np.asarray(self.tdd)[np.arange(bs, bs + BLOCK_SLOTS) % p]
        self.block_tdd = tdd.tolist()
        for u, ch in zip(self.ues, self.channels, strict=True):
            raw = ch.block(bs, BLOCK_SLOTS)
            u.bits = raw.tolist()
            u.bits_np = np.concatenate([[0.0], np.cumsum(raw * tdd)])
            u.cap_from = max(u.cap_from, bs)
            ms = self.queue_ms[u.idx]
            if ms is not None and u.cap_share > 0.0:
                u.queue.limit_bytes = self._queue_bytes(u, ms)
        if self.recorder is not None:
            self._raw_bits = self._reported_bits()

    def _queue_bytes(self, u: UeRadio, ms: float) -> int:
        """``ms`` at the UE's mean capacity over the current block; never under one full
        packet, so a second without capacity does not refuse every arrival."""
        block_s = BLOCK_SLOTS * self.slot_us / 1e6
        rate_bytes = u.cap_share * float(u.bits_np[-1]) / 8.0 / block_s
        return max(MIN_QUEUE_BYTES, int(rate_bytes * ms / 1000.0))

    def _reported_bits(self) -> np.ndarray:
        """The current block's bits per PRB as KPM reports them (link adaptation's MCS,
        see ``channels.reported_block``), one row per UE."""
        bs = self.block_start
        return np.array(
            [
                reported_block(ch, bs, BLOCK_SLOTS, np.asarray(u.bits))
                for u, ch in zip(self.ues, self.channels, strict=True)
            ]
        )

    # --- KPM ---------------------------------------------------------------------------
    def _record(self, s0: int, s1: int, busy: bool) -> None:
        """Fill report rows for slots [s0, s1); ``busy`` only for a single scheduled slot."""
        rec = self.recorder
        assert rec is not None
        bs = self.block_start
        for s in range(s0, s1):
            i = s - rec.start
            if i >= rec.period:
                self._emit(s)
                i = s - rec.start
            mon = self.monitored
            rec.bits[i, :] = self._raw_bits[mon, s - bs]
            for j, ui in enumerate(mon):
                u = self.ues[ui]
                q = u.queue
                rec.ue_cell[i, j] = u.cell if u.cell >= 0 else -1
                rec.buf[i, j] = q.bytes
                if q.arrived_bytes:
                    rec.arr[i, j] = q.arrived_bytes
                    q.arrived_bytes = 0
                if busy and u.prb_used:
                    rec.prb[i, j] = u.prb_used
                    rec.sent[i, j] = u.slot_bytes
            f = self.block_tdd[s - bs]
            for c in self.cells:
                if busy and c.ues and f > 0.0:
                    rec.idle[i, c.idx] = c.prb_idle
                    rec.active[i, c.idx] = c.active_ues
                else:
                    rec.idle[i, c.idx] = int(c.n_prb * f)
                    rec.active[i, c.idx] = 0
        if s1 - rec.start >= rec.period:
            self._emit(s1)

    def _gnb_report(self, rep: KpmReport) -> KpmReport:
        """``rep`` with every UE on a ``report: gnb`` trace channel as a gNB reports it."""
        if self._gnb_cols is None:
            self._gnb_cols = [
                (j, ch) for j, ui in enumerate(self.monitored)
                if isinstance(ch := self.channels[ui], MahimahiChannel) and ch.gnb is not None
            ]  # fmt: skip
        for j, ch in self._gnb_cols:
            mcs, bits, prbs = ch.gnb_slots(rep.start_slot, rep.n_slots)
            rep = gnb_view.apply(rep, j, self.sc.ran.n_prb, mcs, bits, prbs)
        return rep

    def _emit(self, slot: int) -> None:
        rec = self.recorder
        assert rec is not None
        rep = rec.take(self._mcs_bits)
        t = slot * self.slot_us
        gnb = self._gnb_report(rep)  # what the E2 agent and OCC see; PBE-CC's PHY view: rep
        for sink in self.kpm_sinks:
            sink.on_report(gnb, t)
        if any(f.ctrl is not None and f.ctrl.wants_abw for f in self.flows):
            # the in-process ABW source only matters to flows that read ABW (a live run records
            # KPM for its E2 agents even when there are none)
            self.push(t + int(self.sc.e2_delay_ms * 1000), KPM_AT_ABW_SOURCE, gnb)
        if self.phy_est is not None:
            self.phy_est.on_report(rep, t)
            for f in self.flows:
                if f.ctrl is not None and f.ctrl.wants_phy:
                    v = self.phy_est.estimate_bps(self.ues[f.ue].amf_ue_ngap_id)
                    self.push(t + f.ul_delay_us, PHY_CAPACITY_AT_SENDER, (f, v))

    def _kpm_at_abw_source(self, t: int, rep: KpmReport) -> None:
        if self.abw is None:
            return
        self.abw.on_report(rep, t)
        for f in self.flows:
            if f.ctrl is not None and f.ctrl.wants_abw:
                v = self.abw.estimate_bps(self.ues[f.ue].amf_ue_ngap_id)
                # xApp -> sender: UDP feedback over the wired path
                self.push(t + f.dl_delay_us, ABW_AT_SENDER, (f, v))

    # --- time series -------------------------------------------------------------------
    def _snapshot(self, slot: int) -> None:
        for u in self.ues:
            self._flush(u, slot)
        self._ts_bins.append(slot * self.slot_us / 1e6)
        self.ts_ue_delivered.append([u.delivered_bytes for u in self.ues])
        self.ts_ue_capacity.append([u.cap_bytes for u in self.ues])
        for f in self.flows:
            now = slot * self.slot_us
            f.ts_target.append(
                f.ctrl.target_bps(now) if f.ctrl
                else f.enc_target_bps if f.sender  # a video encoder on the transport
                else f.tx.target_bps(now) if f.tx else NAN
            )  # fmt: skip
            f.ts_abw.append(f.abw_bps if f.abw_bps is not None else NAN)

    # --- main loop ---------------------------------------------------------------------
    def run(self) -> float:
        """Run the whole scenario offline; returns wall seconds."""
        t0 = time.monotonic()
        self.run_until(self.end_slot)
        return time.monotonic() - t0

    def run_until(self, end_slot: int) -> None:
        """Advance to the start of ``end_slot``: per slot, the events due, then the schedulers;
        idle stretches are skipped."""
        slot_us = self.slot_us
        s = self.slot
        if self.block_start < 0:
            self._start(s)
        self._last_progress = time.monotonic()
        while s < end_slot:
            t = s * slot_us
            self.slot = s
            self._run_events_due(t)
            if s >= self.block_end:
                self._refill(s)
            busy = self._schedule_slot(s, t)
            if self.recorder is not None:
                self._record(s, s + 1, True)
                for u in self._served:
                    u.prb_used = 0
                self._served.clear()
            s += 1
            if not busy and s < end_slot:
                s = self._skip_idle(s, end_slot)
            if s >= self.next_ts:
                self._sample(s)
        self.slot = s
        for u in self.ues:
            self._flush(u, s)

    def _start(self, s: int) -> None:
        """The first channel block and the time series' first sample."""
        self._refill(s)
        self._snapshot(0)
        self.next_ts = self.ts_slots

    def _run_events_due(self, t: int) -> None:
        """Every event due at or before ``t``, in time order (ties: in the order pushed)."""
        events = self.events
        pop = heapq.heappop
        handlers = HANDLERS
        while events and events[0][0] <= t:
            ev = pop(events)
            handlers[ev[2]](self, ev[0], ev[3])

    def _schedule_slot(self, s: int, t: int) -> bool:
        """Each cell grants slot ``s``'s PRBs and its UEs get what they were sent; True while
        data waits (then the next slot is not skipped)."""
        fac = self.tdd[s % len(self.tdd)]
        if fac <= 0.0:  # an UL slot: nothing is scheduled, but queued data must not be skipped
            return any(u.queue.bytes > 0 or u.queue.backlogged for c in self.cells for u in c.ues)
        off = s - self.block_start
        t_end = t + self.slot_us
        any_data = False
        recording = self.recorder is not None
        for c in self.cells:
            if not c.ues:
                continue
            nprb = c.n_prb if fac == 1.0 else int(c.n_prb * fac)
            if c.harq_reserved:
                nprb = max(0, nprb - c.harq_reserved.pop(s, 0))
            served = c.schedule(s, off, nprb, t)
            for u in served:
                self._transmit_block(c, u, s, t_end)
            if not any_data:
                any_data = c.active_ues > len(served) or any(
                    u.queue.bytes > 0 or u.queue.backlogged for u in served
                )
            if recording:
                self._served.extend(served)
            else:
                for u in served:
                    u.prb_used = 0
        return any_data

    def _transmit_block(self, c: Cell, u: UeRadio, s: int, t_end: int) -> None:
        """UE ``u``'s transport block of slot ``s``: delivered at the slot's end, or after HARQ
        retransmissions, or lost; the packets its queue dropped are counted."""
        q = u.queue
        if self._harq_bler > 0.0 and self.harq_rng.random() < self._harq_bler:
            self._harq_retransmit(c, u, s, t_end)
        else:
            u.delivered_bytes += u.slot_bytes
            if q.delivered:
                for p in q.delivered:
                    self._deliver(t_end, p)
                q.delivered.clear()
        if q.dropped:
            flows = self.flows
            for p in q.dropped:
                flows[p.flow].dropped_pkts += 1
            q.dropped.clear()

    def _harq_retransmit(self, c: Cell, u: UeRadio, s: int, t_end: int) -> None:
        """The TB failed: retransmissions every HARQ RTT on the same PRBs until one succeeds or
        harq_max_tx is reached (then RLC UM loses it)."""
        bler, harq_max, rng = self._harq_bler, self._harq_max_tx, self.harq_rng
        ntx = 2
        while ntx <= harq_max and rng.random() < bler:
            ntx += 1
        res = c.harq_reserved
        for k in range(1, min(ntx - 1, harq_max - 1) + 1):
            key = s + k * self._harq_slots
            res[key] = res.get(key, 0) + u.prb_used
        lost = ntx > harq_max
        if not lost:
            u.delivered_bytes += u.slot_bytes
        q = u.queue
        for p in q.delivered:
            if lost:
                self.flows[p.flow].harq_lost_pkts += 1
            else:
                self.push(t_end + (ntx - 1) * self._harq_rtt_us, DELIVERED_AFTER_HARQ, p)
        q.delivered.clear()

    def _skip_idle(self, s: int, end_slot: int) -> int:
        """Nothing to schedule: the slot to go on from, the next event's, block's or sample's
        (the KPM rows of the slots skipped are filled as idle)."""
        events = self.events
        nxt = -(-events[0][0] // self.slot_us) if events else end_slot
        nxt = min(nxt, end_slot, self.block_end, self.next_ts)
        if nxt <= s:
            return s
        if self.recorder is not None:
            self._record(s, nxt, False)
        for c in self.cells:  # retransmission slots skipped over: nobody needed them
            if c.harq_reserved:
                for k in [k for k in c.harq_reserved if k < nxt]:
                    del c.harq_reserved[k]
        return nxt

    def _sample(self, s: int) -> None:
        """A time-series sample, and the progress report every 2 s of wall time."""
        self._snapshot(s)
        self.next_ts += self.ts_slots
        if self.progress is not None:
            now = time.monotonic()
            if now - self._last_progress >= 2.0:
                self._last_progress = now
                self.progress(s * self.slot_us / 1e6, self.end_slot * self.slot_us / 1e6)


NAN = float("nan")
# the engine's event kinds (flow kinds add theirs: sim/flows/)
PACKET_AT_GNB = event_kind(Engine._packet_at_gnb)
DELIVERED_AFTER_HARQ = event_kind(Engine._deliver)
HANDOVER_STARTS = event_kind(Engine._handover_starts)
HANDOVER_ENDS = event_kind(Engine._handover_ends)
HANDOVER_AT_ABW_SOURCE = event_kind(Engine._handover_at_abw_source)
HANDOVER_REPORT_AT_SERVER = event_kind(Engine._handover_report_at_server)
KPM_AT_ABW_SOURCE = event_kind(Engine._kpm_at_abw_source)
ABW_AT_SENDER = event_kind(Engine._abw_at_sender)
PHY_CAPACITY_AT_SENDER = event_kind(Engine._phy_capacity_at_sender)


def progress_to_stderr(start: float | None = None) -> Callable[[float, float], None]:
    t0 = time.monotonic() if start is None else start

    def report(sim_s: float, total_s: float) -> None:
        wall = time.monotonic() - t0
        speed = sim_s / wall if wall > 0 else 0.0
        print(
            f"\rsim {sim_s:8.1f} / {total_s:.1f} s  ({speed:5.1f}x real time)",
            end="", file=sys.stderr, flush=True,
        )  # fmt: skip

    return report
