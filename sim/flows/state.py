"""One flow's state: the parts its kind built (sender, receiver, rate controller or transport,
wired path) and the counters the summary reads."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from octoric.sim.cc import RateController
from octoric.sim.dash import DashSession
from octoric.sim.ice import IceConnection
from octoric.sim.packets import PacketSink
from octoric.sim.receiver import VideoReceiver
from octoric.sim.scenario import FlowSpec
from octoric.sim.transport import TransportReceiver, TransportSender
from octoric.sim.video import VideoSender, WiredPath
from octoric.sim.video_on_transport import MediaApp


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
    # ICE (video.ice_checks): the sender's and the receiver's view of the pair, and what each
    # discarded while it was not writable (media packets; feedback reports)
    ice_srv: IceConnection | None = None
    ice_ue: IceConnection | None = None
    ice_discarded_pkts: int = 0
    ice_discarded_feedback: int = 0
    abw_bps: float | None = None
    phy_bps: float | None = None
    wire: bool = False  # Octopus headers travel as bytes and are parsed at the gNB
    tx: TransportSender | None = None  # a flow's packet-level transport sender
    tx_sink: TransportReceiver | None = None  # its receiver (video flows have ``receiver``)
    ext_sink: PacketSink | None = None  # a real flow's: the live real-UE path
    tx_wake_us: int | None = None  # when its timer event is due (one pending at a time)
    media_app: MediaApp | None = None  # a video flow on the transport: what drives its encoder
    enc_target_bps: float = math.nan  # ... and the target it last gave the encoder
    dash: DashSession | None = None  # a DASH flow's client, server and send buffer
    # the gNB's handover report reached the flow's server (flows on the transport: BBR-H, DASH-H)
    on_handover_report: Callable[[int], None] | None = None
    ts_target: list[float] = field(default_factory=list)
    ts_abw: list[float] = field(default_factory=list)
