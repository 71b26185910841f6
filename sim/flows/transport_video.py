"""Video on the packet-level transport (the Dumbo thesis §4): the encoder's frames wait in the
media queue, the window scheme and the pacer send them, every packet is acknowledged. The scheme
(``sim/video_on_transport.py``'s registry) gives the window scheme, the application that drives
the encoder at each source frame, padding and the send buffer's dropper."""

from __future__ import annotations

from octoric.sim.events import event_kind
from octoric.sim.flows.host import FlowHost
from octoric.sim.flows.packet_transport import ack_sender, report_handovers, transmit
from octoric.sim.flows.registry import one_way_us
from octoric.sim.flows.state import FlowState
from octoric.sim.receiver import VideoReceiver
from octoric.sim.scenario import FlowSpec
from octoric.sim.transport import TransportReceiver, TransportSender, WindowContext
from octoric.sim.video import VideoSender
from octoric.sim.video_on_transport import TransportVideoContext, TransportVideoFactory


def build(host: FlowHost, idx: int, ue: int, spec: FlowSpec,
          factory: TransportVideoFactory) -> FlowState:  # fmt: skip
    one_way = one_way_us(spec)
    start = spec.start_mbps * 1e6
    wctx = WindowContext(params=dict(spec.params), seed=host.seed * 1000 + idx)
    parts = factory(TransportVideoContext(wctx, start, spec.video))
    video = parts.video if parts.video is not None else spec.video
    sender = VideoSender(idx, idx + 1, video, host.new_rng(), start)
    recv = VideoReceiver(sender.msgs, sender.frames)
    recv.want_feedback = False  # per-packet ACKs instead
    f = FlowState(
        idx, ue, spec, None, sender, recv, host.wired_path(spec),
        frame_us=round(1e6 / spec.video.fps),
        ul_delay_us=one_way + int(spec.uplink_ms * 1000), dl_delay_us=one_way,
    )  # fmt: skip
    f.tx = TransportSender(idx, parts.scheme, media=sender, padding=parts.padding,
                           buffer_dropper=parts.buffer_dropper)  # fmt: skip
    f.media_app = parts.app(f.tx)
    f.tx_sink = TransportReceiver(ack_sender(host, f), header=0)
    report_handovers(f)
    host.push(int(spec.start_s * 1e6), FRAME, f)
    return f


def _frame(host: FlowHost, t: int, f: FlowState) -> None:
    """A source frame: the application encodes (or skips) it, then the transport sends."""
    sender, tx, app = f.sender, f.tx, f.media_app
    assert sender is not None and tx is not None and app is not None
    nxt = t + f.frame_us
    last = f.spec.stop_s is not None and nxt >= f.spec.stop_s * 1e6
    f.enc_target_bps = app.on_frame(t, sender, tx)
    transmit(host, f, t)
    if not last:
        host.push(nxt, FRAME, f)


FRAME = event_kind(_frame)
