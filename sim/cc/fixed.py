"""``fixed``: a constant target rate (``rate_bps``, else the start rate); no feedback."""

from __future__ import annotations

from octoric.sim.cc.base import RateController, SchemeContext, register_scheme


class FixedRate(RateController):
    """A constant target: the flow's ``rate_mbps`` (else its start rate), whatever the link
    does; reads no feedback. The reference point that never adapts."""

    name = "fixed"
    wants_feedback = False

    def __init__(self, ctx: SchemeContext) -> None:
        self.rate = float(ctx.params.get("rate_bps", ctx.start_bps))

    def target_bps(self, now_us: int) -> float:
        return self.rate


register_scheme("fixed")(FixedRate)
