"""``cqi``: per-second CQI samples (e.g. the 5G production dataset) mapped to an MCS."""

from __future__ import annotations

import numpy as np

from octoric.sim.channels.base import ChannelContext
from octoric.sim.channels.traces import read_cqi_csv


class CqiTraceChannel:
    """Per-second CQI samples (e.g. the 5G production dataset) -> MCS -> bits per PRB."""

    def __init__(self, ctx: ChannelContext, path: str, offset_s: int = 0) -> None:
        self.trace = read_cqi_csv(path)
        m = ctx.mapper
        self.bits_per_s = np.array(
            [m.bits[mc] if (mc := m.mcs_for_cqi(int(c))) >= 0 else 0.0 for c in self.trace.cqi]
        )
        self.slots_per_s = 1_000_000 // ctx.slot_us
        self.offset = offset_s

    def block(self, start_slot: int, n: int) -> np.ndarray:
        s = (
            np.arange(start_slot, start_slot + n) // self.slots_per_s + self.offset
        ) % self.bits_per_s.size
        return self.bits_per_s[s]
