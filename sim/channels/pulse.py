"""``pulse``: a square wave between two rates."""

from __future__ import annotations

import numpy as np

from octoric.sim.channels.base import ChannelContext


class PulseChannel:
    """Square wave between ``high_bps`` and ``low_bps``, switching every ``switch_s``."""

    def __init__(
        self, ctx: ChannelContext, high_bps: float, low_bps: float, switch_s: float
    ) -> None:
        k = ctx.slot_us / 1e6 / ctx.n_prb
        self.high, self.low = high_bps * k, low_bps * k
        self.switch_slots = max(1, round(switch_s * 1e6 / ctx.slot_us))

    def block(self, start_slot: int, n: int) -> np.ndarray:
        idx = np.arange(start_slot, start_slot + n) // self.switch_slots
        return np.where(idx % 2 == 0, self.high, self.low)
