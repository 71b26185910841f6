"""Video paced at a rate controller's target (``sim/cc``: GCC, PBE, OCC-fed, fixed, ...): the
encoder and pacer send frames over the wired path, the receiver reports back every feedback
interval (transport-wide feedback, RTCP PLI) over the UE's uplink. With ``video.ice_checks``
both agents run ICE's connectivity checks over the same path (``sim/ice.py``): the sender's
requests and its responses to the receiver's go down the UE's queue with the media, the
receiver's go up; an agent whose pair is unreliable sends neither media nor feedback."""

from __future__ import annotations

from typing import Any

from octoric.sim.cc import SchemeContext, build_scheme
from octoric.sim.events import event_kind
from octoric.sim.flows.host import FlowHost
from octoric.sim.flows.registry import one_way_us
from octoric.sim.flows.state import FlowState
from octoric.sim.ice import (
    REQUEST_BYTES,
    RESPONSE_BYTES,
    STUN_REQUEST,
    STUN_RESPONSE,
    IceConnection,
)
from octoric.sim.packets import Packet
from octoric.sim.receiver import FeedbackBatch, VideoReceiver
from octoric.sim.scenario import FlowSpec
from octoric.sim.video import VideoSender


def build(host: FlowHost, idx: int, ue: int, spec: FlowSpec) -> FlowState:
    one_way = one_way_us(spec)
    params: dict[str, Any] = dict(spec.params)  # the scheme's options (gcc: probing, ...)
    if spec.rate_mbps is not None:
        params["rate_bps"] = spec.rate_mbps * 1e6
    ctx = SchemeContext(
        rtt_ms=spec.path.rtt_ms + 2 * spec.uplink_ms, start_bps=spec.start_mbps * 1e6,
        min_bps=spec.min_mbps * 1e6, max_bps=spec.max_mbps * 1e6, params=params,
    )  # fmt: skip
    ctrl = build_scheme(spec.scheme, ctx)
    sender = VideoSender(idx, idx + 1, spec.video, host.new_rng(), ctrl.target_bps(0))
    sender.record_sent = ctrl.wants_sent
    recv = VideoReceiver(sender.msgs, sender.frames)
    recv.want_feedback = ctrl.wants_feedback
    recv.request_keyframes = spec.video.keyframe_on_loss
    f = FlowState(
        idx, ue, spec, ctrl, sender, recv, host.wired_path(spec),
        frame_us=round(1e6 / spec.video.fps), fb_us=int(spec.feedback_ms * 1000),
        ul_delay_us=one_way + int(spec.uplink_ms * 1000), dl_delay_us=one_way,
    )  # fmt: skip
    t0 = int(spec.start_s * 1e6)
    host.push(t0, FRAME, f)
    if ctrl.wants_feedback or spec.video.keyframe_on_loss:  # RTCP: feedback, PLI
        host.push(t0 + f.fb_us, FEEDBACK_DUE, f)
    if spec.video.ice_checks:
        rtt = one_way + f.ul_delay_us
        f.ice_srv, f.ice_ue = IceConnection(rtt), IceConnection(rtt)
        recv.on_stun = lambda p, t: _stun_at_ue(host, t, f, p)
        host.push(t0, ICE_SRV_TICK, f)
        host.push(t0, ICE_UE_TICK, f)
    return f


def _frame(host: FlowHost, t: int, f: FlowState) -> None:
    """A frame tick: probes, the frame at the controller's target, the pacer's packets out."""
    assert f.sender is not None and f.ctrl is not None
    nxt = t + f.frame_us
    last = f.spec.stop_s is not None and nxt >= f.spec.stop_s * 1e6
    ctrl, sender = f.ctrl, f.sender
    for c in ctrl.probe_clusters(t):  # probes start with this tick's pacing
        sender.add_probe(c)
    # the pacer sends until the next frame at the target, then re-times what is left at that
    # rate; the encoder gets its own rate (the same unless the scheme pushes it back)
    target = ctrl.target_bps(t)
    if ctrl.drop_frame(t):
        sender.skip_frame(t)
    else:
        # the stream's maximum caps the encoder (libwebrtc's BitrateAllocator), not the
        # estimate, which may run above it (GCC's)
        sender.encode(t, min(sender.payload_bps(ctrl.encoder_bps(t), t), f.spec.max_mbps * 1e6))
    pkts = sender.release(t, target, None if last else nxt)
    ice = f.ice_srv
    if ice is not None and not ice.writable and pkts:
        # the transport is not writable: the packets never reach the socket, and the
        # controller hears of no send (libwebrtc: no OnSentPacket)
        f.ice_discarded_pkts += len(pkts)
        ctrl.on_send_failed(t, [p.seq for p in pkts])
        if ctrl.wants_sent:
            sender.take_sent()
        pkts = []
    elif ctrl.wants_sent:
        ctrl.on_sent(t, sender.take_sent())
    host.to_gnb(f, pkts)
    if not last:
        host.push(nxt, FRAME, f)


def _feedback_due(host: FlowHost, t: int, f: FlowState) -> None:
    """The receiver's feedback interval ends: its report goes up the uplink, unless the UE is
    detached (then it keeps, and goes with the next)."""
    assert f.receiver is not None
    if f.spec.uplink_held_in_handover and host.detached(f.ue):
        f.feedback_held += 1
    else:
        batch = f.receiver.take_feedback(t)
        if f.ice_ue is not None and not f.ice_ue.writable:
            f.ice_discarded_feedback += 1  # RTCP is not sent on an unwritable transport
        else:
            host.push(t + f.ul_delay_us, FEEDBACK_AT_SENDER, (f, batch))
    host.push(t + f.fb_us, FEEDBACK_DUE, f)


def _feedback_at_sender(host: FlowHost, t: int, arg: tuple[FlowState, FeedbackBatch]) -> None:
    f, batch = arg
    assert f.ctrl is not None
    if batch.pli and f.sender is not None:
        f.sender.request_keyframe()
    if f.ctrl.wants_feedback:
        f.ctrl.on_feedback(t, batch)


# --- ICE: the sender's agent (server side) and the receiver's (UE side) -------------------


def _ice_srv_tick(host: FlowHost, t: int, f: FlowState) -> None:
    ice = f.ice_srv
    assert ice is not None
    if ice.tick(t):  # a check down the UE's queue, behind the media
        host.to_gnb(f, [Packet(f.idx, -1, REQUEST_BYTES, t, STUN_REQUEST)])
    if f.spec.stop_s is None or t < f.spec.stop_s * 1e6:
        host.push(ice.next_check_us(t), ICE_SRV_TICK, f)


def _ice_ue_tick(host: FlowHost, t: int, f: FlowState) -> None:
    ice = f.ice_ue
    assert ice is not None
    if ice.tick(t):  # a check up the uplink
        host.push(t + f.ul_delay_us, ICE_REQUEST_AT_SRV, (f, t))
    if f.spec.stop_s is None or t < f.spec.stop_s * 1e6:
        host.push(ice.next_check_us(t), ICE_UE_TICK, f)


def _stun_at_ue(host: FlowHost, t: int, f: FlowState, p: Packet) -> None:
    if p.msg == STUN_REQUEST:  # the sender's check: the response goes up
        host.push(t + f.ul_delay_us, ICE_RESPONSE_AT_SRV, (f, p.send_us))
    elif f.ice_ue is not None:  # the response to the receiver's own check (sent at send_us)
        f.ice_ue.on_response(t, p.send_us)


def _ice_request_at_srv(host: FlowHost, t: int, arg: tuple[FlowState, int]) -> None:
    f, sent_us = arg  # the receiver's check: the response goes down the UE's queue
    host.to_gnb(f, [Packet(f.idx, -1, RESPONSE_BYTES, sent_us, STUN_RESPONSE)])


def _ice_response_at_srv(host: FlowHost, t: int, arg: tuple[FlowState, int]) -> None:
    f, sent_us = arg
    assert f.ice_srv is not None
    f.ice_srv.on_response(t, sent_us)


FRAME = event_kind(_frame)
FEEDBACK_DUE = event_kind(_feedback_due)
FEEDBACK_AT_SENDER = event_kind(_feedback_at_sender)
ICE_SRV_TICK = event_kind(_ice_srv_tick)
ICE_UE_TICK = event_kind(_ice_ue_tick)
ICE_REQUEST_AT_SRV = event_kind(_ice_request_at_srv)
ICE_RESPONSE_AT_SRV = event_kind(_ice_response_at_srv)
