"""Video on the packet-level transport (the Dumbo thesis §4): the encoder's frames wait in the
media queue, the window scheme and the pacer send them, every packet is acknowledged. The scheme
(``sim/video_on_transport.py``'s registry) gives the window scheme, the application that drives
the encoder at each source frame, padding, the send buffer's dropper and, if its ACKs carry the
receiver's decoder state (Salsify), who hears it."""

from __future__ import annotations

from collections.abc import Callable

from octoric.sim.events import event_kind
from octoric.sim.flows.host import FlowHost
from octoric.sim.flows.packet_transport import ack_sender, report_handovers, transmit
from octoric.sim.flows.registry import one_way_us
from octoric.sim.flows.state import FlowState
from octoric.sim.packets import Packet
from octoric.sim.receiver import VideoReceiver
from octoric.sim.scenario import FlowSpec
from octoric.sim.transport import TransportReceiver, TransportSender, WindowContext
from octoric.sim.video import VideoSender
from octoric.sim.video_on_transport import (
    DecoderStateHook,
    TransportVideoContext,
    TransportVideoFactory,
)


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
    ack = ack_sender(host, f)
    if parts.decoder_state is not None:
        recv.track_state = True
        ack = _with_decoder_state(host, f, ack, recv, parts.decoder_state)
    f.tx_sink = TransportReceiver(ack, header=0)
    report_handovers(f)
    host.push(int(spec.start_s * 1e6), FRAME, f)
    return f


def _with_decoder_state(
    host: FlowHost, f: FlowState, ack: Callable[[Packet, int], None], recv: VideoReceiver,
    hear: DecoderStateHook,
) -> Callable[[Packet, int], None]:  # fmt: skip
    """Each ACK also carries the receiver's decoder state as it is when the ACK leaves (the
    packet acknowledged taken in); the sender hears it when the ACK arrives, right after it."""

    def send(p: Packet, t_us: int) -> None:
        ack(p, t_us)
        host.push(t_us + f.ul_delay_us, DECODER_STATE, (hear, recv.whole_frame, recv.newest_frame))

    return send


def _decoder_state(host: FlowHost, t: int, arg: tuple[DecoderStateHook, int, int]) -> None:
    hear, whole, newest = arg
    hear(t, whole, newest)


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
DECODER_STATE = event_kind(_decoder_state)
