"""The schemes that carry video on the packet-level transport, found by name in one registry (as
``sim/cc`` finds rate controllers and ``sim/transport.py`` window schemes).

Such a scheme gives, for one flow, a ``TransportVideo``: the window scheme that paces the packets,
the application that drives the encoder at each source frame (``MediaApp``: Dumbo's latency
control, AWStream's or Salsify*'s frame rate, the Octopus app), whether an empty media queue is
padded, and the send buffer's dropper. Register a name with ``register_video_transport`` or, for
a family of names (``<window scheme>+dumbo``), a resolver with ``register_video_transport_family``;
the video flow kind (``sim/flows/transport_video.py``) asks ``video_transport(name)`` and builds
the flow, so a new scheme is one file in ``sim/cc/`` and a registration. A scheme whose sender
reads the receiver's decoder state from its ACKs (Salsify's loss recovery) gives
``decoder_state``, and chooses what a frame refers to with ``ControlledEncoder``'s
``before_encode``.

A leaf module: the scheme files import it, it imports no scheme."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from octoric.sim.dropper import OctopusDropper
from octoric.sim.transport import TransportSender, WindowContext, WindowScheme
from octoric.sim.video import VideoConfig, VideoSender


@dataclass
class EncoderDecision:
    target_bps: float
    skip: bool


class EncoderControl(Protocol):
    """What drives the encoder of a video flow on the transport (Dumbo's control, AWStream's
    frame-rate adaptation): told the media queue's size whenever it changes, asked at every
    source frame for the target and whether to skip the frame."""

    def on_queue(self, now_us: int, queue_bytes: int) -> None: ...

    def decide(self, now_us: int, sending_bps: float | None, queue_bytes: int,
               min_bps: float) -> EncoderDecision: ...  # fmt: skip


class MediaApp(Protocol):
    """The application above the transport: encodes (or skips) each source frame, and hears
    the media queue's size whenever the transport sends."""

    def on_frame(self, now_us: int, sender: VideoSender, tx: TransportSender) -> float:
        """Encode or skip the frame due now; returns the target it gave the encoder."""
        ...

    def on_queue(self, now_us: int, queue_bytes: int) -> None: ...


class ControlledEncoder:
    """A ``MediaApp`` from an encoder control that decides each frame's target and whether to skip
    it from the transport's sending rate and the media queue (Dumbo, AWStream, Salsify*).
    ``before_encode``, if given, runs just before a frame is encoded (not before a skipped one):
    Salsify's loss recovery chooses there the frame the next one refers to."""

    on_queue: Callable[[int, int], None]  # the control's own: called at every send

    def __init__(
        self, ctl: EncoderControl, before_encode: Callable[[int, VideoSender], None] | None = None
    ) -> None:
        self.ctl = ctl
        self.on_queue = ctl.on_queue
        self.before_encode = before_encode

    def on_frame(self, now_us: int, sender: VideoSender, tx: TransportSender) -> float:
        ctl = self.ctl
        d = ctl.decide(now_us, tx.scheme.sending_bps(tx), sender.pending_bytes, sender.cfg.min_bps)
        if d.skip:
            sender.skip_frame(now_us)
        else:
            if self.before_encode is not None:
                self.before_encode(now_us, sender)
            sender.encode(now_us, d.target_bps)
            ctl.on_queue(now_us, sender.pending_bytes)
        return d.target_bps


# (now_us, the newest frame the receiver decoded whole, the newest frame it got a packet of)
DecoderStateHook = Callable[[int, int, int], None]


@dataclass
class TransportVideoContext:
    """What a scheme may know when it builds a flow's parts."""

    window: WindowContext  # the flow's scheme parameters and seed
    start_bps: float  # the flow's start rate
    video: VideoConfig  # the flow's encoder configuration, as the scenario gives it


@dataclass
class TransportVideo:
    """One flow's parts; ``app`` is built once the transport sender exists (Salsify* reads its
    in-flight bytes)."""

    scheme: WindowScheme
    app: Callable[[TransportSender], MediaApp]
    video: VideoConfig | None = None  # the encoder's configuration if the scheme changes it
    padding: bool = False  # dummy packets when the media queue is empty (Dumbo)
    buffer_dropper: OctopusDropper | None = None  # Algorithm 1 in the send buffer (OctoBBR)
    # every ACK carries the receiver's decoder state (Salsify): heard as (now_us, the newest
    # frame decoded whole, the newest frame a packet arrived of; -1: none) when the ACK reaches
    # the sender; None: the ACKs carry none
    decoder_state: DecoderStateHook | None = None


TransportVideoFactory = Callable[[TransportVideoContext], TransportVideo]
# a family of names: the factory for ``name``, None if ``name`` is not one of the family's
TransportVideoFamily = Callable[[str], TransportVideoFactory | None]
VIDEO_TRANSPORTS: dict[str, TransportVideoFactory] = {}
VIDEO_TRANSPORT_FAMILIES: list[TransportVideoFamily] = []


def register_video_transport(
    name: str,
) -> Callable[[TransportVideoFactory], TransportVideoFactory]:
    def deco(factory: TransportVideoFactory) -> TransportVideoFactory:
        VIDEO_TRANSPORTS[name] = factory
        return factory

    return deco


def register_video_transport_family(family: TransportVideoFamily) -> TransportVideoFamily:
    VIDEO_TRANSPORT_FAMILIES.append(family)
    return family


def video_transport(name: str) -> TransportVideoFactory | None:
    """The factory for scheme ``name`` (a name before a family), None if no such scheme carries
    video on the transport (then a rate controller of ``sim/cc`` paces it)."""
    factory = VIDEO_TRANSPORTS.get(name)
    if factory is not None:
        return factory
    for family in VIDEO_TRANSPORT_FAMILIES:
        factory = family(name)
        if factory is not None:
            return factory
    return None
