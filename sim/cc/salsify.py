"""Salsify*-style video (Fouladi et al., "Salsify: Low-Latency Network Video through Tighter
Integration between a Video Codec and a Transport Protocol", NSDI'18, §4), as SEC'23 §6.1 runs
it: "modified to solely tune the frame rate keeping the frame quality fixed" (``--scheme
salsify``; video flows on the packet-level transport; pin the quality with ``video.min_bps`` =
``video.max_bps``).

- The transport (``SalsifyTransport``) has no window and no pacer: how much is in flight is
  the application's choice. It keeps Salsify's estimate of the path, the mean time between
  packet arrivals at the receiver, tau: an EWMA (weight 0.1) of the spacing of consecutive
  packets sent back to back (within 1 ms; the receiver's spacing, read from the ACKs, which
  cross a constant uplink), so the sender's idle time between frames never counts (Salsify's
  "grace period").
- The application (``SalsifyControl``) sends a frame only if it fits what may be in flight
  without the queue holding more than 100 ms: (100 ms / tau - packets in flight and queued) x
  MTU; otherwise it skips the frame (Salsify never sends a frame the network is not ready
  for; with the quality fixed, skipping is its only adaptation). Before the first estimate
  every frame goes, and so does a frame that finds nothing in flight: on a link too slow to
  carry one frame in 100 ms the path is still ready when it is empty (without this rule the
  flow would stop for good, since only sending updates tau).
- Loss recovery (``SalsifyRecovery``; the flow parameter ``loss_recovery``, default on): every
  ACK carries the receiver's decoder state (``TransportVideo.decoder_state``): the newest frame
  it decoded whole, and the newest frame it has a packet of. Media is never resent. The sender
  encodes each frame against the state after the last frame it sent (Salsify's "assumed"
  state, frames pipelined) while the receiver follows; when an ACK shows the receiver past a
  frame it could not decode (a packet of a frame beyond the one after its newest whole frame:
  a loss), the next frame refers to the receiver's newest whole frame, as reported, and so
  does every frame for 5 s (the reference sender's "conservative" mode, salsify-sender.cc in
  excamera/alfalfa: ``conservative_for { 5 }``, each frame against
  ``receiver_complete_states.back()``); before the receiver has a whole frame, a key frame.
  Decoding resumes with the first such frame: a lost frame costs the frames sent before the
  sender hears of it (about one RTT of them) in the normal mode, itself alone in the
  conservative one. With ``loss_recovery`` off, frames refer to the previous frame sent and a
  loss leaves them undecodable until the next key frame (the former model). Salsify streams
  plain VP8; with spatial layers each layer refers to that layer of the chosen frame, temporal
  layers (their own references) are refused.

Approximated: Salsify's functional codec encodes the frame first and discards it if it does
not fit; here the decision uses the frame's expected size (the fixed quality's bytes per frame;
a key frame's larger size is not foreseen), and a frame encoded against an older state costs
no more bytes than one against the previous frame (in VP8 its residual is larger). Salsify's
receiver gives up on an incomplete frame when a packet of a later one arrives, and applies
what it has (its state is then invalid until a frame encoded against a saved state arrives);
here the incomplete frame still decodes if its last packets arrive late (reordered), and a
frame never decodes against a state other than the one it refers to. The key frames of the
configured GoP (``video.gop``) are kept: Salsify's sender sends none after the first.
"""

from __future__ import annotations

from octoric.sim.errors import ScenarioError
from octoric.sim.transport import RateSample, TransportSender, WindowContext, WindowScheme
from octoric.sim.video import VideoSender
from octoric.sim.video_on_transport import (
    ControlledEncoder,
    EncoderDecision,
    MediaApp,
    TransportVideo,
    TransportVideoContext,
    register_video_transport,
)

NAME = "salsify"
TARGET_DELAY_US = 100_000  # Salsify: keep the path's queue under 100 ms
TAU_WEIGHT = 0.1
BACK_TO_BACK_US = 1_000  # packets sent within this of each other are one burst
CONSERVATIVE_US = 5_000_000  # salsify-sender.cc: after an invalid receiver state, 5 s against
# the receiver's newest complete state


class SalsifyTransport(WindowScheme):
    """No window, no pacing: the mean inter-arrival time tau, from back-to-back packets' ACKs."""

    name = NAME

    def __init__(self, ctx: WindowContext) -> None:
        super().__init__(ctx)
        self.tau_us: float | None = None
        self._last: tuple[int, int, int] | None = None  # (seq, sent, acked) of the last ACK

    def cwnd(self) -> int:
        return 1 << 40  # the application decides what is in flight

    def on_ack(self, now_us: int, rs: RateSample, sender: TransportSender) -> None:
        sent = now_us - rs.rtt_us
        last = self._last
        if last is not None and rs.seq == last[0] + 1 and sent - last[1] <= BACK_TO_BACK_US:
            gap = now_us - last[2]
            self.tau_us = gap if self.tau_us is None else (
                (1 - TAU_WEIGHT) * self.tau_us + TAU_WEIGHT * gap
            )  # fmt: skip
        self._last = (rs.seq, sent, now_us)

    def sending_bps(self, sender: TransportSender) -> float | None:
        if not self.tau_us:
            return None
        return self.ctx.mss * 8e6 / self.tau_us


class SalsifyControl:
    """Whether each frame is sent (pure but for reading the transport's tau and in-flight)."""

    def __init__(self, transport: SalsifyTransport, sender: TransportSender, stream_bps: float,
                 fps: float, mtu: int) -> None:  # fmt: skip
        self.transport, self.sender = transport, sender
        self.stream_bps = stream_bps
        self.frame_bytes = stream_bps / fps / 8.0
        self.mtu = mtu
        self.sent = 0
        self.skipped = 0
        self.recovery: SalsifyRecovery | None = None  # its loss recovery, if on

    def budget_bytes(self, queue_bytes: int) -> float | None:
        """What may still be put in flight; None before the first estimate."""
        tau = self.transport.tau_us
        if not tau:
            return None
        pkts = (self.sender.inflight + queue_bytes) / self.mtu
        return max(0.0, TARGET_DELAY_US / tau - pkts) * self.mtu

    def on_queue(self, now_us: int, queue_bytes: int) -> None:
        """The media queue changed (the budget reads it at each frame)."""

    def decide(self, now_us: int, sending_bps: float | None, queue_bytes: int,
               min_bps: float) -> EncoderDecision:  # fmt: skip
        budget = self.budget_bytes(queue_bytes)
        idle = self.sender.inflight + queue_bytes == 0
        skip = budget is not None and self.frame_bytes > budget and not idle
        if skip:
            self.skipped += 1
        else:
            self.sent += 1
        return EncoderDecision(max(self.stream_bps, min_bps), skip)


class SalsifyRecovery:
    """Which state each frame is encoded against, from the receiver's decoder state in the
    ACKs (salsify-sender.cc's encoder selection)."""

    def __init__(self) -> None:
        self.whole = -1  # the receiver's newest frame decoded whole, as its last ACK said
        self.newest = -1  # the newest frame it had a packet of
        self.conservative_until = -1  # us: until then, every frame against ``whole``
        self.recoveries = 0  # times the sender found the receiver's state invalid
        self.fallbacks = 0  # frames encoded against the receiver's reported state
        self.keyframes = 0  # ... of which key frames (no whole frame reported yet)

    def on_state(self, now_us: int, whole: int, newest: int) -> None:
        """An ACK arrived with the receiver's decoder state."""
        self.whole, self.newest = whole, newest

    def invalid(self) -> bool:
        """The receiver has moved past a frame it could not decode."""
        return self.newest > self.whole + 1

    def before_encode(self, now_us: int, sender: VideoSender) -> None:
        """Choose what the frame about to be encoded refers to."""
        if now_us >= self.conservative_until:
            if not self.invalid():
                return  # the state after the last frame sent (the encoder's own reference)
            self.conservative_until = now_us + CONSERVATIVE_US
            self.recoveries += 1
        self.fallbacks += 1
        f = self.whole
        if f < 0:
            self.keyframes += 1
            sender.request_keyframe()  # the receiver has no state but the initial one
            return
        first = sender.frames.base_msg[f]
        sender.prev_frame_msgs = list(range(first, first + sender.frames.nmsgs[f]))


@register_video_transport(NAME)
def salsify_video(ctx: TransportVideoContext) -> TransportVideo:
    """Salsify*'s transport, its control sending or skipping each frame of the fixed quality, and
    (``params["loss_recovery"]``, default on) its loss recovery."""
    transport = SalsifyTransport(ctx.window)
    video = ctx.video
    recovery = SalsifyRecovery() if bool(ctx.window.params.get("loss_recovery", True)) else None
    if recovery is not None and video.svc == "temporal":
        raise ScenarioError("salsify's loss recovery refers frames to frames: temporal SVC layers "
                            "keep their own references (use svc none or spatial)")  # fmt: skip

    def app(tx: TransportSender) -> MediaApp:
        ctl = SalsifyControl(transport, tx, ctx.start_bps, video.fps, video.mtu)
        ctl.recovery = recovery
        return ControlledEncoder(ctl, None if recovery is None else recovery.before_encode)

    hear = None if recovery is None else recovery.on_state
    return TransportVideo(transport, app, decoder_state=hear)
