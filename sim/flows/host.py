"""What a flow kind may ask of the engine that runs it (the engine implements this; flow modules
never import the engine)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from octoric.sim.packets import Packet
from octoric.sim.ran import UeRadio
from octoric.sim.scenario import FlowSpec
from octoric.sim.video import WiredPath

if TYPE_CHECKING:
    from octoric.sim.flows.state import FlowState


class FlowHost(Protocol):
    seed: int
    ues: list[UeRadio]

    def push(self, t_us: int, kind: int, arg: Any) -> None:
        """Run the handler of event ``kind`` (``sim/events.py``) with ``arg`` at ``t_us``."""
        ...

    def new_rng(self) -> np.random.Generator:
        """The next random stream of the run's seed (the order of calls decides the streams)."""
        ...

    def wired_path(self, spec: FlowSpec) -> WiredPath:
        """The flow's server -> gNB path (with its own random stream if it draws)."""
        ...

    def to_gnb(self, f: FlowState, pkts: Iterable[Packet]) -> None:
        """Send packets over the flow's wired path; each reaches the UE's gNB queue."""
        ...

    def detached(self, ue: int) -> bool:
        """The UE is in a handover: no cell serves it, its uplink waits."""
        ...
