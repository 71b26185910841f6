"""The interface every sender rate-control scheme implements, and the registry that finds one by
name (``octoric.sim.cc`` re-exports these; scheme files register themselves here)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from octoric.sim.errors import ScenarioError
from octoric.sim.receiver import FeedbackBatch
from octoric.sim.video import ProbeCluster, SentBatch


@dataclass
class SchemeContext:
    """What a scheme may know when it is built."""

    rtt_ms: float
    start_bps: float
    min_bps: float
    max_bps: float
    params: dict[str, Any] = field(default_factory=dict)


class RateController:
    """Base class. ``target_bps`` is read at every frame; the rest are notifications.

    Optional, for schemes that probe (GCC): ``probe_clusters`` is asked at every frame tick,
    before ``target_bps``, for probe clusters the pacer should send now; and with
    ``wants_sent`` the scheme gets ``on_sent`` with what the pacer sent at that tick
    (send times, sizes, probe cluster ids), as libwebrtc's controller gets OnSentPacket."""

    name = "base"
    wants_feedback = True  # receiver feedback (transport-wide style), every feedback interval
    wants_phy = False  # UE-side physical-layer capacity (PBE-CC style), via uplink feedback
    wants_abw = False  # RAN-side ABW (OCC xApp or its stand-in) over E2 + UDP feedback
    wants_sent = False  # the pacer's sent packets, every frame tick (``on_sent``)

    def target_bps(self, now_us: int) -> float:
        raise NotImplementedError

    def encoder_bps(self, now_us: int) -> float:
        """The rate the encoder is given for the frame captured now (read after
        ``target_bps``, which paces): the same unless the scheme pushes the encoder back."""
        return self.target_bps(now_us)

    def drop_frame(self, now_us: int) -> bool:
        """Whether the frame captured now is dropped before encoding (GCC's congestion
        window pushback); asked once per frame."""
        return False

    def on_feedback(self, now_us: int, fb: FeedbackBatch) -> None:
        """Receiver feedback reached the sender."""

    def probe_clusters(self, now_us: int) -> list[ProbeCluster]:
        """Probe clusters for the pacer to send from now (none by default)."""
        return []

    def on_send_failed(self, now_us: int, seqs: list[int]) -> None:
        """Packets the pacer released that never reached the network (the transport was not
        writable: ICE, ``sim/ice.py``); their sequence numbers will not come back."""

    def on_sent(self, now_us: int, sent: SentBatch) -> None:
        """What the pacer sent (only called when ``wants_sent``)."""

    def on_phy_capacity(self, now_us: int, bps: float | None) -> None:
        """A UE-measured physical-layer capacity reached the sender (None: no measurement)."""

    def on_abw(self, now_us: int, bps: float | None) -> None:
        """An ABW report reached the sender (None: the source says fall back, e.g. handover)."""


SchemeFactory = Callable[[SchemeContext], RateController]
SCHEMES: dict[str, SchemeFactory] = {}


def register_scheme(name: str) -> Callable[[SchemeFactory], SchemeFactory]:
    def deco(factory: SchemeFactory) -> SchemeFactory:
        SCHEMES[name] = factory
        return factory

    return deco


def build_scheme(name: str, ctx: SchemeContext) -> RateController:
    try:
        factory = SCHEMES[name]
    except KeyError:
        raise ScenarioError(
            f"unknown rate-control scheme {name!r} (known: {', '.join(sorted(SCHEMES))})"
        ) from None
    return factory(ctx)
