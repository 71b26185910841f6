"""``occ``: the sender follows the RAN-side ABW an ``AbwSource`` reports over E2 (the OCC
xApp's engine or its stand-in)."""

from __future__ import annotations

from octoric.sim.cc.base import RateController, SchemeContext, register_scheme
from octoric.sim.cc.gcc import Gcc
from octoric.sim.receiver import FeedbackBatch


class OccFed(RateController):
    """Target rate from an ABW source over E2 (the OCC xApp's engine, issue #7, or the
    stand-in ``PhyCapacityAbw`` until then); GCC keeps learning and takes over when the
    source reports nothing (e.g. during a handover)."""

    name = "occ"
    wants_abw = True

    def __init__(self, ctx: SchemeContext) -> None:
        self.gcc = Gcc(ctx)
        self.abw: float | None = None
        self.min_bps, self.max_bps = ctx.min_bps, ctx.max_bps

    def on_send_failed(self, now_us: int, seqs: list[int]) -> None:
        self.gcc.on_send_failed(now_us, seqs)

    def on_feedback(self, now_us: int, fb: FeedbackBatch) -> None:
        self.gcc.on_feedback(now_us, fb)

    def on_abw(self, now_us: int, bps: float | None) -> None:
        self.abw = bps
        if bps is not None:
            self.gcc.rate = min(max(bps, self.min_bps), self.max_bps)

    def target_bps(self, now_us: int) -> float:
        if self.abw is None:
            return self.gcc.target_bps(now_us)
        return min(max(self.abw, self.min_bps), self.max_bps)


register_scheme("occ")(OccFed)
