"""``pbe``: PBE-CC-style, the sender follows the UE-measured physical-layer capacity."""

from __future__ import annotations

from octoric.sim.cc.base import RateController, SchemeContext, register_scheme
from octoric.sim.cc.gcc import Gcc
from octoric.sim.receiver import FeedbackBatch


class PbeStyle(RateController):
    """PBE-CC-style: the UE measures its physical-layer capacity per slot
    ((own PRBs + idle PRBs / active users) x bits per PRB, averaged over 40 ms) and the sender
    targets ``scale`` x that capacity, less a drain term when receiver feedback shows a
    standing queue (one-way delay above its minimum: the target shrinks by qdelay / 200 ms,
    at most by 70 %), as PBE-CC drains the queue it detects. GCC runs alongside and takes
    over when the UE has no measurement (handover)."""

    name = "pbe"
    wants_phy = True

    def __init__(self, ctx: SchemeContext) -> None:
        self.gcc = Gcc(ctx)
        self.cap: float | None = None
        self.scale = float(ctx.params.get("scale", 0.9))
        self.min_bps, self.max_bps = ctx.min_bps, ctx.max_bps
        self.base_owd_us: int | None = None
        self.qdelay_ms = 0.0

    def on_send_failed(self, now_us: int, seqs: list[int]) -> None:
        self.gcc.on_send_failed(now_us, seqs)

    def on_feedback(self, now_us: int, fb: FeedbackBatch) -> None:
        self.gcc.on_feedback(now_us, fb)
        if fb.recv_us:
            owds = [r - s for r, s in zip(fb.recv_us, fb.send_us, strict=True)]
            lo = min(owds)
            if self.base_owd_us is None or lo < self.base_owd_us:
                self.base_owd_us = lo
            self.qdelay_ms = max(0.0, (owds[-1] - self.base_owd_us) / 1000.0)

    def on_phy_capacity(self, now_us: int, bps: float | None) -> None:
        self.cap = bps
        if bps is not None:
            self.gcc.rate = min(max(bps * self.scale, self.min_bps), self.max_bps)

    def target_bps(self, now_us: int) -> float:
        if self.cap is None:
            return self.gcc.target_bps(now_us)
        drain = min(0.7, self.qdelay_ms / 200.0)
        return min(max(self.cap * self.scale * (1.0 - drain), self.min_bps), self.max_bps)


register_scheme("pbe")(PbeStyle)
