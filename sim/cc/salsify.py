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

Approximated: Salsify's functional codec encodes the frame first and discards it if it does
not fit; here the decision uses the frame's expected size (the fixed quality's bytes per frame;
a key frame's larger size is not foreseen). Salsify's loss recovery (the receiver's decoder
state in its ACKs) is not modelled: the transport never resends media, lost packets make
frames undecodable until the next key frame.
"""

from __future__ import annotations

from octoric.sim.transport import RateSample, TransportSender, WindowContext, WindowScheme
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


@register_video_transport(NAME)
def salsify_video(ctx: TransportVideoContext) -> TransportVideo:
    """Salsify*'s transport, its control sending or skipping each frame of the fixed quality."""
    transport = SalsifyTransport(ctx.window)
    video = ctx.video

    def app(tx: TransportSender) -> MediaApp:
        return ControlledEncoder(SalsifyControl(transport, tx, ctx.start_bps, video.fps, video.mtu))

    return TransportVideo(transport, app)
