"""AWStream-style frame-rate adaptation over TCP BBR (Zhang et al., "AWStream: Adaptive Wide-Area
Streaming Analytics", SIGCOMM'18, §4.3 runtime adaptation), as SEC'23 §6.1 configures it as a
baseline: the video keeps its quality (``video.min_bps`` = ``video.max_bps``, the default VP8
stream without SVC) and only its frame rate adapts, to the bandwidth the transport (BBR)
estimates (``--scheme awstream``; video flows on the packet-level transport).

- Configurations: frame rates 30, 15, 10, 6, 5, 3, 2, 1 fps of a 30 fps source (every k-th
  frame; AWStream's profile for a frame-rate knob); each needs the stream's 30 fps rate x
  fps / 30.
- Degrade (AWStream's congestion detection on its application queue): when the queue holds
  more than ``QUEUE_FRAMES`` frames of the current configuration, pick the best
  configuration whose rate fits the transport's estimate (BBR's sending rate), at once.
- Probe and upgrade: only after the queue has been empty whenever a frame was encoded for
  ``UPGRADE_EMPTY_US`` (2 s, as
  SEC'23 §6.1 describes AWStream: "upgrading to a higher throughput configuration only after
  its application buffer has been empty for 2 seconds"), one configuration up.

Approximated: AWStream probes before an upgrade by sending extra traffic at the next
configuration's rate and upgrades when the probe causes no congestion; here the upgrade
itself is the probe (a failed one is undone by the next degrade). The queue threshold is ours
(the paper gives none for this setup). Frames are skipped before encoding (the next encoded
frame refers to the last one), so a degrade never costs a key frame.
"""

from __future__ import annotations

from dataclasses import dataclass

from octoric.sim.transport import TransportSender, build_window_scheme
from octoric.sim.video_on_transport import (
    ControlledEncoder,
    EncoderDecision,
    MediaApp,
    TransportVideo,
    TransportVideoContext,
    register_video_transport,
)

NAME = "awstream"
BASE = "bbr"  # the transport: TCP BBR (SEC'23 §6.1)
SOURCE_FPS = 30
FPS_LADDER = (30, 15, 10, 6, 5, 3, 2, 1)  # each divides the source's 30 fps
QUEUE_FRAMES = 2.0  # congestion: the application queue holds more than this many frames
UPGRADE_EMPTY_US = 2_000_000


@dataclass
class AwstreamState:
    level: int  # index into FPS_LADDER
    frame: int = 0  # source frames seen
    empty_since_us: int | None = None  # the application queue has been empty since
    degrades: int = 0
    upgrades: int = 0


class AwstreamControl:
    """Which source frames to encode (pure: the engine reports the media queue and asks at
    every source frame); the encoder's quality, hence its target, never changes."""

    def __init__(self, stream_bps: float) -> None:
        self.stream_bps = stream_bps  # the fixed quality at the source's frame rate
        self.state = AwstreamState(level=0)  # the full frame rate until congestion says less

    def rate(self, level: int) -> float:
        return self.stream_bps * FPS_LADDER[level] / SOURCE_FPS

    @property
    def fps(self) -> int:
        return FPS_LADDER[self.state.level]

    def on_queue(self, now_us: int, queue_bytes: int) -> None:
        """The media queue changed (nothing to do: the queue is judged at each frame)."""

    def decide(self, now_us: int, sending_bps: float | None, queue_bytes: int,
               min_bps: float) -> EncoderDecision:  # fmt: skip
        """Adapt the configuration, then whether this source frame is encoded."""
        st = self.state
        frame_bytes = self.stream_bps / SOURCE_FPS / 8.0
        congested = queue_bytes > QUEUE_FRAMES * frame_bytes and sending_bps is not None
        if congested:
            fit = [i for i in range(len(FPS_LADDER)) if self.rate(i) <= (sending_bps or 0.0)]
            best = fit[0] if fit else len(FPS_LADDER) - 1
            if best > st.level:  # a lower frame rate
                st.level = best
                st.degrades += 1
            st.empty_since_us = None
        due = st.frame % (SOURCE_FPS // FPS_LADDER[st.level]) == 0
        st.frame += 1
        if due and not congested:
            # empty: the queue had drained when this frame came (the data of the frames
            # before it had all left), at every encoded frame for 2 s
            if queue_bytes > 0:
                st.empty_since_us = None
            elif st.empty_since_us is None:
                st.empty_since_us = now_us
            elif st.level > 0 and now_us - st.empty_since_us >= UPGRADE_EMPTY_US:
                st.level -= 1
                st.upgrades += 1
                st.empty_since_us = now_us  # the next upgrade waits another 2 s
        return EncoderDecision(max(self.stream_bps, min_bps), not due)


@register_video_transport(NAME)
def awstream_video(ctx: TransportVideoContext) -> TransportVideo:
    """The stream at its fixed quality over BBR, AWStream choosing the frame rate."""

    def app(tx: TransportSender) -> MediaApp:
        return ControlledEncoder(AwstreamControl(ctx.start_bps))

    return TransportVideo(build_window_scheme(BASE, ctx.window), app)
