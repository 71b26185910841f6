"""The simulation engine: cells, UEs, flows and an event heap, advanced slot by slot.

Time is an integer number of microseconds. At the start of slot ``s`` (``t = s * slot_us``)
the engine runs every event due at or before ``t`` (frames, packet arrivals at the gNB,
feedback, handovers, KPM deliveries), then each cell's scheduler grants the slot's PRBs;
packets completed in the slot reach the UE at the slot's end.

The engine knows no clock: ``run_until(slot)`` advances simulated time. The offline runner
calls it once for the whole run (as fast as possible, idle stretches skipped); a live
driver (issue #5/#6 live part) will call it with the wall-clock slot, inject packets with
``inject_packet`` and register the E2 agent as a ``KpmSink``. The algorithm objects
(rate controllers, ABW sources) are the same in both.
"""

from __future__ import annotations

import heapq
import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from octoric.sim.cc import RateController, SchemeContext, awstream, build_scheme, octobbr, salsify
from octoric.sim.cc.bbr import Bbr
from octoric.sim.cc.dumbo import DumboControl, EncoderControl, split_dumbo
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
    reported_block,
)
from octoric.sim.dash import DashReceiver, DashSession, Request, SegmentSender
from octoric.sim.dropper import DropperConfig, OctopusDropper
from octoric.sim.errors import ScenarioError, SimError
from octoric.sim.mcs import McsMapper
from octoric.sim.measurements import (
    ABW_SOURCES,
    AbwSource,
    KpmRecorder,
    KpmReport,
    KpmSink,
    PhyCapacityAbw,
)
from octoric.sim.mobility import HandoverEvent, handover_schedule
from octoric.sim.packets import Packet, PacketSink
from octoric.sim.ran import Cell, CellConfig, TddPattern, UeRadio
from octoric.sim.receiver import VideoReceiver
from octoric.sim.rlc import DlQueue
from octoric.sim.scenario import ChannelSpec, FlowSpec, Scenario
from octoric.sim.transport import (
    WINDOW_SCHEMES,
    TransportReceiver,
    TransportSender,
    WindowContext,
    WindowScheme,
    build_window_scheme,
)
from octoric.sim.video import VideoSender, WiredPath

EV_FRAME, EV_ARRIVE, EV_FB_SEND, EV_FB_RECV, EV_HO_START, EV_HO_END = range(6)
EV_KPM, EV_PHY_RECV, EV_ABW_RECV, EV_DELIVER, EV_BULK_START, EV_HO_NOTIFY = range(6, 12)
EV_TX, EV_ACK, EV_TX_HO = 12, 13, 14  # transport: a sender's timer, an ACK, a handover report
EV_DASH, EV_DASH_UP, EV_DASH_REQ = 15, 16, 17  # DASH: client timer, request to send, at server
DASH_UPLINK_RETRY_US = 5_000  # a request made while the UE is detached waits for its uplink

BLOCK_SLOTS = 1000


@dataclass
class FlowState:
    idx: int
    ue: int
    spec: FlowSpec
    ctrl: RateController | None
    sender: VideoSender | None
    receiver: VideoReceiver | None
    path: WiredPath | None
    frame_us: int = 0
    fb_us: int = 50_000
    ul_delay_us: int = 0  # receiver -> sender
    dl_delay_us: int = 0  # server -> gNB (excluding the bottleneck)
    dropped_pkts: int = 0
    tail_dropped_pkts: int = 0
    harq_lost_pkts: int = 0
    wired_lost_pkts: int = 0
    feedback_held: int = 0  # feedback intervals the UE could not send (detached)
    abw_bps: float | None = None
    phy_bps: float | None = None
    wire: bool = False  # Octopus headers travel as bytes and are parsed at the gNB
    tx: TransportSender | None = None  # a bulk flow's packet-level transport sender
    tx_sink: TransportReceiver | None = None  # its receiver (video flows have ``receiver``)
    ext_sink: PacketSink | None = None  # a real flow's: the live real-UE path
    tx_wake_us: int | None = None  # when its timer event is due (one pending at a time)
    enc_ctl: EncoderControl | None = None  # a video flow on the transport: its encoder control
    enc_target_bps: float = math.nan  # ... and the target it last gave the encoder
    dash: DashSession | None = None  # a DASH flow's client, server and send buffer
    ts_target: list[float] = field(default_factory=list)
    ts_abw: list[float] = field(default_factory=list)


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
        self.flows: list[FlowState] = []
        self.handovers: list[HandoverRecord] = []
        self.gnb_ue_counter = [0] * (ran.cells // ran.cells_per_gnb + 1)
        self.kpm_sinks: list[KpmSink] = []
        self.mobility_sinks: list[MobilitySink] = []
        self.abw = abw_source
        self.pbe_est: PhyCapacityAbw | None = None
        self.harq_rng = self._rng()
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
    def _rng(self) -> np.random.Generator:
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
                ctx, self._rng(), spec.mean_snr_db, spec.std_db, spec.corr_time_s, spec.step_ms
            )
        if k == "steps":
            return StepsChannel(ctx, self._rng(), spec.high_mbps * 1e6, spec.low_mbps * 1e6,
                                spec.switch_s)  # fmt: skip
        if k == "route":
            return RouteChannel(ctx, self._rng(), spec.route, spec.step_ms)
        assert spec.path is not None
        if k == "mahimahi":
            return MahimahiChannel(ctx, spec.path, spec.offset, spec.csi_period_ms)
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
                self._attach(u, spec.cell, 0)
                for ev in handover_schedule(mob, i, end_us, self._rng()):
                    self._push(ev.start_us, EV_HO_START, ev)
                for fspec in spec.flows:
                    f = self._flow(i, fspec)
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
        self.recorder = KpmRecorder(
            self.slot_us, [self.ues[i].amf_ue_ngap_id for i in self.monitored],
            len(self.cells), self.kpm_period, start=self.slot,
        )  # fmt: skip
        if self.block_start >= 0:  # enabled mid-run (a sink added by a live driver)
            self._raw_bits = self._reported_bits()
        if self.abw is None and self.sc.abw_source != "stand-in":
            factory = ABW_SOURCES.get(self.sc.abw_source)
            if factory is None:
                raise SimError(
                    f"ABW source {self.sc.abw_source!r} is not available here; "
                    f"known: stand-in{''.join(', ' + k for k in sorted(ABW_SOURCES))} "
                    "(occ-engine comes with octoric.experiments, e.g. `octoric eval occ`)"
                )
            dl = sum(self.tdd) / len(self.tdd)
            self.abw = factory(self.slot_us, self.sc.ran.n_prb, self.sc.ran.scheduler, dl)
        if self.abw is None:
            self.abw = PhyCapacityAbw(self.slot_us, window_ms=self.sc.kpm_period_ms)
        if any(f.ctrl is not None and f.ctrl.wants_phy for f in self.flows):
            self.pbe_est = PhyCapacityAbw(self.slot_us, window_ms=40.0)

    def add_mobility_sink(self, sink: MobilitySink) -> None:
        """Called at every handover start and end (the live E2 agent's RC reports)."""
        self.mobility_sinks.append(sink)

    def add_kpm_sink(self, sink: KpmSink) -> None:
        """Receive every KPM report at the gNB (the E2 agent's hook); enables recording."""
        self.kpm_sinks.append(sink)
        if self.recorder is None:
            self._enable_kpm()

    def _flow(self, ue: int, spec: FlowSpec) -> FlowState:
        idx = len(self.flows)
        one_way = int(spec.path.rtt_ms * 500)
        if spec.traffic == "backlogged":
            f = FlowState(idx, ue, spec, None, None, None, None)
            self.flows.append(f)
            self._push(int(spec.start_s * 1e6), EV_BULK_START, f)
            return f
        if spec.traffic in ("none", "real"):  # real: packets from outside (the live path)
            f = FlowState(idx, ue, spec, None, None, None, None)
            self.flows.append(f)
            return f
        if spec.traffic == "bulk":
            return self._bulk_flow(idx, ue, spec, one_way)
        if spec.traffic == "dash":
            return self._dash_flow(idx, ue, spec, one_way)
        base, dumbo = split_dumbo(spec.scheme)
        if spec.scheme == awstream.NAME:  # frame-rate adaptation at fixed quality, over BBR
            return self._transport_video_flow(idx, ue, spec, one_way, awstream.BASE, False,
                                              app=spec.scheme)  # fmt: skip
        if spec.scheme == salsify.NAME:  # the same, over Salsify's own transport (no base)
            return self._transport_video_flow(idx, ue, spec, one_way, "", False, app=spec.scheme)
        if base in WINDOW_SCHEMES or (base == octobbr.NAME and not dumbo):
            return self._transport_video_flow(idx, ue, spec, one_way, base, dumbo)
        if dumbo:
            raise ScenarioError(
                f"scheme {spec.scheme!r}: Dumbo's padding goes with a window scheme "
                f"({', '.join(sorted(WINDOW_SCHEMES))})"
            )
        params: dict[str, Any] = {}
        if spec.rate_mbps is not None:
            params["rate_bps"] = spec.rate_mbps * 1e6
        ctx = SchemeContext(
            rtt_ms=spec.path.rtt_ms + 2 * spec.uplink_ms, start_bps=spec.start_mbps * 1e6,
            min_bps=spec.min_mbps * 1e6, max_bps=spec.max_mbps * 1e6, params=params,
        )  # fmt: skip
        ctrl = build_scheme(spec.scheme, ctx)
        sender = VideoSender(idx, idx + 1, spec.video, self._rng(), ctrl.target_bps(0))
        sender.record_sent = ctrl.wants_sent
        recv = VideoReceiver(sender.msgs, sender.frames)
        recv.want_feedback = ctrl.wants_feedback
        recv.request_keyframes = spec.video.keyframe_on_loss
        f = FlowState(
            idx, ue, spec, ctrl, sender, recv, self._path(spec),
            frame_us=round(1e6 / spec.video.fps), fb_us=int(spec.feedback_ms * 1000),
            ul_delay_us=one_way + int(spec.uplink_ms * 1000), dl_delay_us=one_way,
        )  # fmt: skip
        self.flows.append(f)
        t0 = int(spec.start_s * 1e6)
        self._push(t0, EV_FRAME, f)
        if ctrl.wants_feedback or spec.video.keyframe_on_loss:  # RTCP: feedback, PLI
            self._push(t0 + f.fb_us, EV_FB_SEND, f)
        return f

    def _path(self, spec: FlowSpec) -> WiredPath:
        # a random stream only when the path draws (seeded runs without one stay as they were)
        return WiredPath(spec.path, self._rng() if spec.path.needs_rng else None)

    def _window_flow(self, idx: int, ue: int, spec: FlowSpec,
                     one_way: int) -> tuple[WindowScheme, FlowState]:  # fmt: skip
        """The window scheme and the state of a flow whose data the transport carries."""
        scheme = build_window_scheme(
            spec.scheme, WindowContext(params=dict(spec.params), seed=self.seed * 1000 + idx)
        )
        f = FlowState(
            idx, ue, spec, None, None, None, self._path(spec),
            ul_delay_us=one_way + int(spec.uplink_ms * 1000), dl_delay_us=one_way,
        )  # fmt: skip
        return scheme, f

    def _bulk_flow(self, idx: int, ue: int, spec: FlowSpec, one_way: int) -> FlowState:
        """A bulk transfer over the packet-level transport (``sim/transport.py``) with a window
        scheme (``spec.scheme``: cubic, bbr, ...)."""
        scheme, f = self._window_flow(idx, ue, spec, one_way)
        size = None if spec.size_mb is None else round(spec.size_mb * 1e6)
        f.tx = TransportSender(idx, scheme, limit_bytes=size)

        def ack(p: Packet, t_us: int) -> None:
            self._push(t_us + f.ul_delay_us, EV_ACK, (f, p.seq))

        f.tx_sink = TransportReceiver(ack)
        self.flows.append(f)
        f.tx_wake_us = int(spec.start_s * 1e6)
        self._push(f.tx_wake_us, EV_TX, f)
        return f

    def _dash_flow(self, idx: int, ue: int, spec: FlowSpec, one_way: int) -> FlowState:
        """A DASH VoD client fetching segments over the packet-level transport (``sim/dash.py``;
        the window scheme is the TCP below it, CUBIC in ToN'22)."""
        scheme, f = self._window_flow(idx, ue, spec, one_way)
        t0 = int(spec.start_s * 1e6)
        session = DashSession(spec.dash, idx, scheme.ctx.mss, t0)
        f.dash = session
        f.tx = SegmentSender(idx, scheme, session.queue)

        def ack(p: Packet, t_us: int) -> None:
            self._push(t_us + f.ul_delay_us, EV_ACK, (f, p.seq))

        def segment_done(t_us: int) -> None:  # the client decides on the next one at once
            self._push(t_us, EV_DASH, f)

        f.tx_sink = DashReceiver(ack, session, segment_done)
        self.flows.append(f)
        self._push(t0, EV_DASH, f)
        return f

    def _on_dash_timer(self, f: FlowState, t: int) -> None:
        assert f.dash is not None
        client = f.dash.client
        if client.wake_us != t:  # stale: the client has since been woken otherwise
            return
        req = client.on_timer(t)
        if req is not None:
            self._dash_uplink(f, req, t)
        elif client.wake_us is not None:
            self._push(client.wake_us, EV_DASH, f)

    def _dash_uplink(self, f: FlowState, req: Request, t: int) -> None:
        """The HTTP request goes up the UE's uplink (held while the UE is detached, as the
        feedback of ``uplink_held_in_handover``) and the wired path to the server."""
        if f.spec.uplink_held_in_handover and self.ues[f.ue].cell < 0:
            self._push(t + DASH_UPLINK_RETRY_US, EV_DASH_UP, (f, req))
        else:
            self._push(t + f.ul_delay_us, EV_DASH_REQ, (f, req))

    def _transport_video_flow(self, idx: int, ue: int, spec: FlowSpec, one_way: int,
                              base: str, dumbo: bool, app: str = "") -> FlowState:  # fmt: skip
        """A video sender on the packet-level transport with a window scheme (Dumbo thesis §4):
        the encoder's frames wait in the media queue, the window and the pacer send them,
        every packet is acknowledged; ``dumbo`` pads an empty queue with dummy packets;
        ``app``: "awstream" (over BBR) or "salsify" (its own transport) instead of Dumbo's
        control: the frame rate adapts, the quality stays."""
        octo = base == octobbr.NAME
        wctx = WindowContext(params=dict(spec.params), seed=self.seed * 1000 + idx)
        scheme = (octobbr.OctopusBbr(wctx) if octo
                  else salsify.SalsifyTransport(wctx) if app == salsify.NAME
                  else build_window_scheme(base, wctx))  # fmt: skip
        start = spec.start_mbps * 1e6
        video = replace(spec.video, octopus=True) if octo else spec.video
        sender = VideoSender(idx, idx + 1, video, self._rng(), start)
        recv = VideoReceiver(sender.msgs, sender.frames)
        recv.want_feedback = False  # per-packet ACKs instead
        f = FlowState(
            idx, ue, spec, None, sender, recv, self._path(spec),
            frame_us=round(1e6 / spec.video.fps),
            ul_delay_us=one_way + int(spec.uplink_ms * 1000), dl_delay_us=one_way,
        )  # fmt: skip
        if octo:
            assert isinstance(scheme, Bbr)
            f.tx = TransportSender(idx, scheme, media=sender,
                                   buffer_dropper=octobbr.transport_buffer(scheme))  # fmt: skip
        else:
            f.tx = TransportSender(idx, scheme, media=sender, padding=dumbo)
            if app == salsify.NAME:
                assert isinstance(scheme, salsify.SalsifyTransport)
                f.enc_ctl = salsify.SalsifyControl(scheme, f.tx, start, video.fps, video.mtu)
            elif app == awstream.NAME:
                f.enc_ctl = awstream.AwstreamControl(start)
            else:
                f.enc_ctl = DumboControl(start)

        def ack(p: Packet, t_us: int) -> None:
            self._push(t_us + f.ul_delay_us, EV_ACK, (f, p.seq))

        f.tx_sink = TransportReceiver(ack, header=0)
        self.flows.append(f)
        t0 = int(spec.start_s * 1e6)
        self._push(t0, EV_FRAME, f)
        return f

    def _on_transport_frame(self, f: FlowState, t: int) -> None:
        """A frame tick of a video flow on the transport: its encoder control (Dumbo's, or
        AWStream's or Salsify*'s frame rate), or the Octopus app's, then send."""
        sender, tx, ctl = f.sender, f.tx, f.enc_ctl
        assert sender is not None and tx is not None
        nxt = t + f.frame_us
        last = f.spec.stop_s is not None and nxt >= f.spec.stop_s * 1e6
        if ctl is not None:  # Dumbo's encoder control, or AWStream's or Salsify*'s frame rate
            d = ctl.decide(t, tx.scheme.sending_bps(tx), sender.pending_bytes, sender.cfg.min_bps)
            if d.skip:
                sender.skip_frame(t)
            else:
                sender.encode(t, d.target_bps)
                ctl.on_queue(t, sender.pending_bytes)
            f.enc_target_bps = d.target_bps
        else:  # the Octopus app: encode at the transport's estimate, the buffer drops
            n0 = len(sender.pending)
            f.enc_target_bps = sender.encode(t, tx.scheme.sending_bps(tx) or sender.gop_bps)
            if tx.buffer_dropper is not None:
                for i in range(n0, len(sender.pending)):
                    tx.buffer_dropper.on_enqueue(sender.pending[i], t)
        self._transmit(f, t)
        if not last:
            self._push(nxt, EV_FRAME, f)

    def _transmit(self, f: FlowState, t: int) -> None:
        """Put what the transport may send now on the wire, and time its next wake-up."""
        tx, path = f.tx, f.path
        assert tx is not None and path is not None
        for p in tx.send(t):
            a = path.arrival_us(p.send_us, p.size)
            if a is None:
                f.wired_lost_pkts += 1
                continue
            self._push(a, EV_ARRIVE, p)
        if f.enc_ctl is not None and f.sender is not None:
            f.enc_ctl.on_queue(t, f.sender.pending_bytes)
        wake = tx.wake_us(t)
        if wake is not None and (f.tx_wake_us is None or wake < f.tx_wake_us):
            f.tx_wake_us = wake
            self._push(wake, EV_TX, f)

    # --- events ------------------------------------------------------------------------
    def _push(self, t: int, kind: int, arg: Any) -> None:
        self._seq += 1
        heapq.heappush(self.events, (t, self._seq, kind, arg))

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

    def _dispatch(self, t: int, kind: int, arg: Any) -> None:
        if kind == EV_ARRIVE:
            pkt: Packet = arg
            f = self.flows[pkt.flow]
            q = self.ues[f.ue].queue
            if f.wire and pkt.hdr is not None:
                q.enqueue_payload(pkt, pkt.hdr.encode(), t)
            else:
                q.enqueue(pkt, t)
            if q.tail_dropped:
                f.tail_dropped_pkts += len(q.tail_dropped)
                q.tail_dropped.clear()
        elif kind == EV_FRAME:
            if arg.tx is not None:
                self._on_transport_frame(arg, t)
            else:
                self._on_frame(arg, t)
        elif kind == EV_DELIVER:
            p = arg
            fl = self.flows[p.flow]
            if fl.receiver is not None:
                fl.receiver.on_packet(p, t)
            if fl.tx_sink is not None:
                fl.tx_sink.on_packet(p, t)
            elif fl.ext_sink is not None:
                fl.ext_sink.on_packet(p, t)
        elif kind == EV_ACK:
            f, seq = arg
            assert f.tx is not None
            f.tx.on_ack(t, seq)
            self._transmit(f, t)
        elif kind == EV_TX_HO:
            assert arg.tx is not None
            arg.tx.scheme.on_handover(t, arg.tx)
            if arg.dash is not None:  # the server application reads the same report (DASH-H)
                arg.dash.dash_h.on_handover_report()
        elif kind == EV_DASH:
            self._on_dash_timer(arg, t)
        elif kind == EV_DASH_UP:
            self._dash_uplink(arg[0], arg[1], t)
        elif kind == EV_DASH_REQ:
            f, req = arg
            assert f.dash is not None
            f.dash.serve(req)
            self._transmit(f, t)
        elif kind == EV_TX:
            f = arg
            if f.tx_wake_us == t:  # else a timer since moved earlier: that event did it
                f.tx_wake_us = None
                assert f.tx is not None
                f.tx.on_timer(t)
                self._transmit(f, t)
        elif kind == EV_FB_SEND:
            f = arg
            assert f.receiver is not None
            if f.spec.uplink_held_in_handover and self.ues[f.ue].cell < 0:
                f.feedback_held += 1  # no uplink while detached: it keeps and goes later
            else:
                self._push(t + f.ul_delay_us, EV_FB_RECV, (f, f.receiver.take_feedback(t)))
            self._push(t + f.fb_us, EV_FB_SEND, f)
        elif kind == EV_FB_RECV:
            f, batch = arg
            assert f.ctrl is not None
            if batch.pli and f.sender is not None:
                f.sender.request_keyframe()
            if f.ctrl.wants_feedback:
                f.ctrl.on_feedback(t, batch)
        elif kind == EV_HO_START:
            self._ho_start(arg, t)
        elif kind == EV_HO_END:
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
                self._push(t + e2, EV_HO_NOTIFY, (self.ues[ev.ue].amf_ue_ngap_id, False))
        elif kind == EV_KPM:
            self._on_kpm(arg, t)
        elif kind == EV_ABW_RECV:
            f, v = arg
            assert f.ctrl is not None
            f.abw_bps = v
            f.ctrl.on_abw(t, v)
        elif kind == EV_PHY_RECV:
            f, v = arg
            assert f.ctrl is not None
            f.phy_bps = v
            f.ctrl.on_phy_capacity(t, v)
        elif kind == EV_BULK_START:
            self.ues[arg.ue].queue.backlogged = True
        elif kind == EV_HO_NOTIFY and self.abw is not None:
            ue_id, start = arg
            self.abw.on_handover(ue_id, start, t)

    def _on_frame(self, f: FlowState, t: int) -> None:
        assert f.sender is not None and f.ctrl is not None and f.path is not None
        nxt = t + f.frame_us
        last = f.spec.stop_s is not None and nxt >= f.spec.stop_s * 1e6
        ctrl, sender = f.ctrl, f.sender
        for c in ctrl.probe_clusters(t):  # probes start with this tick's pacing
            sender.add_probe(c)
        # the pacer sends until the next frame, then re-times what is left at that rate
        pkts = sender.on_frame(t, ctrl.target_bps(t), None if last else nxt)
        if ctrl.wants_sent:
            ctrl.on_sent(t, sender.take_sent())
        path = f.path
        events = self.events
        push = heapq.heappush
        seq = self._seq
        if path.simple:
            d = path.one_way_us
            for p in pkts:
                seq += 1
                push(events, (p.send_us + d, seq, EV_ARRIVE, p))
        else:
            for p in pkts:
                a = path.arrival_us(p.send_us, p.size)
                if a is None:
                    f.wired_lost_pkts += 1
                    continue
                seq += 1
                push(events, (a, seq, EV_ARRIVE, p))
        self._seq = seq
        if not last:
            self._push(nxt, EV_FRAME, f)

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

    def _ho_start(self, ev: HandoverEvent, t: int) -> None:
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
        self._push(t + ev.outage_us, EV_HO_END, (ev, dst))
        if self.mobility_sinks:
            me = MobilityEvent("ho_start", ev.ue, u.amf_ue_ngap_id, cur, dst, t, ev.failed)
            for sink in self.mobility_sinks:
                sink(me)
        if self.recorder is not None:
            e2 = int(self.sc.e2_delay_ms * 1000)
            self._push(t + e2, EV_HO_NOTIFY, (u.amf_ue_ngap_id, True))
        for f in self.flows:  # handover reports to the servers of the UE's bulk flows
            if f.ue == ev.ue and f.tx is not None:
                self._push(t + int(self.sc.e2_delay_ms * 1000) + f.dl_delay_us, EV_TX_HO, f)

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
        if self.recorder is not None:
            self._raw_bits = self._reported_bits()

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

    def _emit(self, slot: int) -> None:
        rec = self.recorder
        assert rec is not None
        rep = rec.take(self._mcs_bits)
        t = slot * self.slot_us
        for sink in self.kpm_sinks:
            sink.on_report(rep, t)
        if any(f.ctrl is not None and f.ctrl.wants_abw for f in self.flows):
            # the in-process ABW source only matters to OCC-fed flows (a live run records
            # KPM for its E2 agents even when there are none)
            self._push(t + int(self.sc.e2_delay_ms * 1000), EV_KPM, rep)
        if self.pbe_est is not None:
            self.pbe_est.on_report(rep, t)
            for f in self.flows:
                if f.ctrl is not None and f.ctrl.wants_phy:
                    v = self.pbe_est.estimate_bps(self.ues[f.ue].amf_ue_ngap_id)
                    self._push(t + f.ul_delay_us, EV_PHY_RECV, (f, v))

    def _on_kpm(self, rep: KpmReport, t: int) -> None:
        if self.abw is None:
            return
        self.abw.on_report(rep, t)
        for f in self.flows:
            if f.ctrl is not None and f.ctrl.wants_abw:
                v = self.abw.estimate_bps(self.ues[f.ue].amf_ue_ngap_id)
                # xApp -> sender: UDP feedback over the wired path
                self._push(t + f.dl_delay_us, EV_ABW_RECV, (f, v))

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
                else f.tx.target_bps(now) if f.tx else math.nan
            )  # fmt: skip
            f.ts_abw.append(f.abw_bps if f.abw_bps is not None else math.nan)

    # --- main loop ---------------------------------------------------------------------
    def run(self) -> float:
        """Run the whole scenario offline; returns wall seconds."""
        t0 = time.monotonic()
        self.run_until(self.end_slot)
        return time.monotonic() - t0

    def run_until(self, end_slot: int) -> None:
        slot_us = self.slot_us
        events = self.events
        pop = heapq.heappop
        cells = self.cells
        flows = self.flows
        tdd = self.tdd
        ptdd = len(tdd)
        harq = self.sc.ran.harq_bler
        harq_rtt_us = int(self.sc.ran.harq_rtt_ms * 1000)
        harq_max = self.sc.ran.harq_max_tx
        harq_slots = max(1, round(harq_rtt_us / slot_us))
        rng = self.harq_rng
        s = self.slot
        if self.block_start < 0:
            self._refill(s)
            self._snapshot(0)
            self.next_ts = self.ts_slots
        next_ts = self.next_ts
        last_progress = time.monotonic()
        served_all: list[UeRadio] = []
        while s < end_slot:
            t = s * slot_us
            self.slot = s
            while events and events[0][0] <= t:
                ev = pop(events)
                self._dispatch(ev[0], ev[2], ev[3])
            if s >= self.block_end:
                self._refill(s)
            off = s - self.block_start
            fac = tdd[s % ptdd]
            t_end = t + slot_us
            any_data = False
            if fac > 0.0:
                for c in cells:
                    if not c.ues:
                        continue
                    nprb = c.n_prb if fac == 1.0 else int(c.n_prb * fac)
                    if c.harq_reserved:
                        nprb = max(0, nprb - c.harq_reserved.pop(s, 0))
                    served = c.schedule(s, off, nprb, t)
                    for u in served:
                        q = u.queue
                        if harq > 0.0 and rng.random() < harq:
                            # The TB failed: retransmissions every HARQ RTT on the same PRBs
                            # until one succeeds or harq_max_tx is reached (then RLC UM loses it).
                            ntx = 2
                            while ntx <= harq_max and rng.random() < harq:
                                ntx += 1
                            res = c.harq_reserved
                            for k in range(1, min(ntx - 1, harq_max - 1) + 1):
                                key = s + k * harq_slots
                                res[key] = res.get(key, 0) + u.prb_used
                            lost = ntx > harq_max
                            if not lost:
                                u.delivered_bytes += u.slot_bytes
                            for p in q.delivered:
                                if lost:
                                    flows[p.flow].harq_lost_pkts += 1
                                else:
                                    self._push(t_end + (ntx - 1) * harq_rtt_us, EV_DELIVER, p)
                            q.delivered.clear()
                        else:
                            u.delivered_bytes += u.slot_bytes
                            if q.delivered:
                                for p in q.delivered:
                                    fl = flows[p.flow]
                                    if fl.receiver is not None:
                                        fl.receiver.on_packet(p, t_end)
                                    if fl.tx_sink is not None:
                                        fl.tx_sink.on_packet(p, t_end)
                                    elif fl.ext_sink is not None:
                                        fl.ext_sink.on_packet(p, t_end)
                                q.delivered.clear()
                        if q.dropped:
                            for p in q.dropped:
                                flows[p.flow].dropped_pkts += 1
                            q.dropped.clear()
                    if not any_data:
                        if c.active_ues > len(served):
                            any_data = True
                        else:
                            for u in served:
                                if u.queue.bytes > 0 or u.queue.backlogged:
                                    any_data = True
                                    break
                    if self.recorder is not None:
                        served_all.extend(served)
                    else:
                        for u in served:
                            u.prb_used = 0
            else:  # an UL slot: nothing is scheduled, but queued data must not be skipped
                any_data = any(
                    u.queue.bytes > 0 or u.queue.backlogged for c in cells for u in c.ues
                )
            if self.recorder is not None:
                self._record(s, s + 1, True)
                for u in served_all:
                    u.prb_used = 0
                served_all.clear()
            s += 1
            if not any_data and s < end_slot:
                # Nothing to schedule: jump to the next event, block or sample boundary.
                nxt = -(-events[0][0] // slot_us) if events else end_slot
                nxt = min(nxt, end_slot, self.block_end, next_ts)
                if nxt > s:
                    if self.recorder is not None:
                        self._record(s, nxt, False)
                    for c in cells:  # retransmission slots skipped over: nobody needed them
                        if c.harq_reserved:
                            for k in [k for k in c.harq_reserved if k < nxt]:
                                del c.harq_reserved[k]
                    s = nxt
            if s >= next_ts:
                self._snapshot(s)
                next_ts += self.ts_slots
                if self.progress is not None:
                    now = time.monotonic()
                    if now - last_progress >= 2.0:
                        last_progress = now
                        self.progress(s * slot_us / 1e6, self.end_slot * slot_us / 1e6)
        self.slot = s
        self.next_ts = next_ts
        for u in self.ues:
            self._flush(u, s)


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
