"""``steps``: a rate re-drawn every ``switch_s`` uniformly between two rates (MORC's lab, CHANTS'18
§4.1: "the bandwidth ... changed every second" within a range)."""

from __future__ import annotations

import numpy as np

from octoric.sim.channels.base import ChannelContext


class StepsChannel:
    """Per period of ``switch_s``, a rate drawn uniformly in [``low_bps``, ``high_bps``]."""

    def __init__(self, ctx: ChannelContext, rng: np.random.Generator, high_bps: float,
                 low_bps: float, switch_s: float) -> None:  # fmt: skip
        self.k = ctx.slot_us / 1e6 / ctx.n_prb  # bit/s -> bits per PRB per slot
        self.low, self.high = min(low_bps, high_bps), max(low_bps, high_bps)
        self.switch_slots = max(1, round(switch_s * 1e6 / ctx.slot_us))
        self.rng = rng
        self.levels: list[float] = []  # bits per PRB per slot, one per period

    def block(self, start_slot: int, n: int) -> np.ndarray:
        idx = np.arange(start_slot, start_slot + n) // self.switch_slots
        while len(self.levels) <= int(idx[-1]):
            self.levels.append(float(self.rng.uniform(self.low, self.high)) * self.k)
        out: np.ndarray = np.asarray(self.levels)[idx]
        return out
