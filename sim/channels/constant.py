"""``constant``: a fixed rate or a fixed MCS."""

from __future__ import annotations

import numpy as np

from octoric.sim.channels.base import ChannelContext


class ConstantChannel:
    """A fixed rate (the whole cell's PRBs carry ``rate_bps``) or a fixed MCS."""

    def __init__(
        self, ctx: ChannelContext, rate_bps: float | None = None, mcs: int | None = None
    ) -> None:
        if rate_bps is not None:
            self.bits = rate_bps * ctx.slot_us / 1e6 / ctx.n_prb
        else:
            self.bits = ctx.mapper.bits[ctx.mapper.max_mcs if mcs is None else mcs]

    def block(self, start_slot: int, n: int) -> np.ndarray:
        return np.full(n, self.bits)
