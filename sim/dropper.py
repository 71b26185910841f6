"""The Octopus dropper lives in ``contracts.octopus_dropper`` (the gNB queue, the sender's
transport buffer and liboctopus share its decisions); the simulator imports it from here."""

from octoric.contracts.octopus_dropper import (
    DropperConfig,
    DropperStats,
    OctopusDropper,
    max_min_share,
)

__all__ = ["DropperConfig", "DropperStats", "OctopusDropper", "max_min_share"]
