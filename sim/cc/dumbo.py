"""Dumbo's coupling of a video encoder to a window scheme (Rahmanian, "Dumbo: backlogged video
congestion control", MIT 2023, §4 "Latency Control" and Table A.1), for video flows on the
packet-level transport (``traffic: video`` with a window scheme; ``NAME+dumbo`` adds the
padding, ``sim/transport.py``).

- Encoder target = cwnd / RTT - Standing_PQ / T - Non_Video_Rate: the scheme's sending rate,
  less what drains the standing media queue within T. Standing_PQ is the smallest media queue
  of the last T; T = 100 ms (the thesis: "around 100-200 ms", the same logic as the latency
  threshold); Non_Video_Rate = 0 (no audio here).
- The encoder skips a frame when the media queue would take longer than the latency
  threshold (100 ms, Table A.1) to drain at the target: frames that cannot leave soon are not
  encoded (rather than dropped after encoding, which would cost a key frame).
- Before the scheme has an RTT sample the encoder keeps the flow's start rate.

The same control runs with and without the padding, as in the thesis's comparisons ("RoCC
without the dummy traffic" vs "RoCC+Dumbo"): only the dummy packets differ.
"""

from __future__ import annotations

from collections import deque

from octoric.sim.errors import ScenarioError
from octoric.sim.transport import WINDOW_SCHEMES, TransportSender, build_window_scheme
from octoric.sim.video_on_transport import (
    ControlledEncoder,
    EncoderDecision,
    MediaApp,
    TransportVideo,
    TransportVideoContext,
    TransportVideoFactory,
    register_video_transport_family,
)

STANDING_WINDOW_US = 100_000  # T
LATENCY_THRESHOLD_US = 100_000


class DumboControl:
    """The media queue's standing size over T and the encoder's target (pure: the engine
    reports the queue's size whenever it changes and asks at every frame)."""

    def __init__(self, start_bps: float, standing_window_us: int = STANDING_WINDOW_US,
                 latency_threshold_us: int = LATENCY_THRESHOLD_US) -> None:  # fmt: skip
        self.start_bps = start_bps
        self.window_us = standing_window_us
        self.threshold_us = latency_threshold_us
        # the queue sizes that can still be the window's minimum, oldest first and strictly
        # increasing: [since, bytes, until] (until: the next change, -1 while in force). A
        # size is dropped once a later one is no larger (every window that holds the older
        # one from now on holds the later one too), or once its ``until`` is before the window
        self._q: deque[list[int]] = deque()
        self._last = -1  # the size in force (the latest change)

    def on_queue(self, now_us: int, queue_bytes: int) -> None:
        """The media queue holds ``queue_bytes`` from ``now_us`` on."""
        if queue_bytes == self._last:
            return
        self._last = queue_bytes
        q = self._q
        if q:
            q[-1][2] = now_us  # the size in force until now (the back is always the latest)
        while q and q[-1][1] >= queue_bytes:
            q.pop()
        q.append([now_us, queue_bytes, -1])

    def standing_bytes(self, now_us: int) -> int:
        """The smallest queue since ``now - T``: every size in force at some time of the window
        (the one set before it began included). O(1) amortized: a sliding-window minimum."""
        q = self._q
        start = now_us - self.window_us
        while len(q) > 1 and 0 <= q[0][2] <= start:
            q.popleft()
        return q[0][1] if q else 0

    def decide(self, now_us: int, sending_bps: float | None, queue_bytes: int,
               min_bps: float) -> EncoderDecision:  # fmt: skip
        """The target for the frame encoded now, and whether to skip it."""
        if sending_bps is None:
            return EncoderDecision(self.start_bps, False)
        standing = self.standing_bytes(now_us)
        target = max(sending_bps - standing * 8e6 / self.window_us, min_bps)
        return EncoderDecision(target, queue_bytes * 8e6 / target > self.threshold_us)


DUMBO_SUFFIX = "+dumbo"


def split_dumbo(scheme: str) -> tuple[str, bool]:
    """``"rocc+dumbo"`` -> ``("rocc", True)``; any other name -> ``(name, False)``."""
    if scheme.endswith(DUMBO_SUFFIX):
        return scheme[: -len(DUMBO_SUFFIX)], True
    return scheme, False


def window_scheme_video(name: str) -> TransportVideoFactory | None:
    """Video on the transport for a window scheme's name (Dumbo's latency control, no padding:
    the thesis's "RoCC without the dummy traffic") or ``NAME+dumbo`` (with the padding)."""
    base, padding = split_dumbo(name)
    if base not in WINDOW_SCHEMES:
        if padding:
            raise ScenarioError(
                f"scheme {name!r}: Dumbo's padding goes with a window scheme "
                f"({', '.join(sorted(WINDOW_SCHEMES))})"
            )
        return None

    def factory(ctx: TransportVideoContext) -> TransportVideo:
        def app(tx: TransportSender) -> MediaApp:
            return ControlledEncoder(DumboControl(ctx.start_bps))

        return TransportVideo(build_window_scheme(base, ctx.window), app, padding=padding)

    return factory


register_video_transport_family(window_scheme_video)
