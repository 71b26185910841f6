"""What every channel model is: per UE, the bits one PRB carries per slot, block by block.

A channel is consumed in order (``block(start, n)`` for consecutive ranges), so stateful
models (random walks) stay cheap: numpy per block, never Python per slot.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from octoric.sim.mcs import McsMapper


@dataclass(frozen=True)
class ChannelContext:
    slot_us: int
    n_prb: int
    mapper: McsMapper


class Channel(Protocol):
    def block(self, start_slot: int, n: int) -> np.ndarray:
        """Bits per PRB for slots [start_slot, start_slot + n) (float64)."""
        ...


def reported_block(ch: Channel, start_slot: int, n: int, delivered: np.ndarray) -> np.ndarray:
    """The bits per PRB the gNB *reports* for these slots (its link-adaptation MCS).

    For most channels that is what it delivers; a channel whose deliveries are not an MCS
    (a Mahimahi trace) defines ``reported(start, n)`` to say what link adaptation would
    have chosen."""
    rep = getattr(ch, "reported", None)
    return delivered if rep is None else np.asarray(rep(start_slot, n), dtype=np.float64)
