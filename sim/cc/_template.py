"""TEMPLATE for a new rate-control scheme: copy this file to ``sim/cc/<name>.py``.

1. Rename ``TemplateScheme`` and set ``name`` (the summaries show it).
2. Say what the scheme listens to: ``wants_feedback`` (receiver reports every
   ``feedback_ms``, ``on_feedback``), ``wants_phy`` (UE-measured physical-layer capacity,
   ``on_phy_capacity``), ``wants_abw`` (RAN-side ABW over E2, ``on_abw``; ``None`` means
   "fall back", e.g. during a handover). The engine only delivers what is asked for.
3. Implement ``target_bps(now_us)``: the video sender reads it at every frame. Keep it cheap
   and clamp it to ``[ctx.min_bps, ctx.max_bps]``. Scheme options come in ``ctx.params``
   (the flow's scenario keys).
4. Register it: uncomment the ``register_scheme`` line at the bottom with the scheme's
   name, and add ``from octoric.sim.cc.<name> import <Class>`` to ``sim/cc/__init__.py``
   (explicit imports: that line is what makes the scheme known).
5. Test it in ``tests/sim/test_senders.py``: run a built-in scenario with
   ``flows[0].scheme = "<name>"`` through ``octoric.sim.runner.run_offline`` and assert on
   the summary (``frame_bitrate_kbps``, ``frame_latency_ms``, ``stall_rate``); unit-test the
   controller alone by calling ``on_feedback`` with a hand-made ``FeedbackBatch``.
6. Document it in the scheme table of docs/sim.md.

This file is importable (a test builds ``TemplateScheme``) but registers nothing.
"""

from __future__ import annotations

from octoric.sim.cc.base import RateController, SchemeContext
from octoric.sim.receiver import FeedbackBatch


class TemplateScheme(RateController):
    """Holds the start rate and halves it when a feedback batch shows losses (a placeholder
    for the real algorithm)."""

    name = "template"
    wants_feedback = True
    wants_phy = False
    wants_abw = False

    def __init__(self, ctx: SchemeContext) -> None:
        self.min_bps, self.max_bps = ctx.min_bps, ctx.max_bps
        self.rate = ctx.start_bps
        self.last_seq = -1

    def on_feedback(self, now_us: int, fb: FeedbackBatch) -> None:
        if not fb.seqs:
            return
        hi = max(fb.seqs)
        if self.last_seq >= 0 and hi - self.last_seq > len(fb.seqs):
            self.rate /= 2  # a gap in the sequence numbers: packets were lost
        self.last_seq = max(self.last_seq, hi)

    def target_bps(self, now_us: int) -> float:
        return min(max(self.rate, self.min_bps), self.max_bps)


# register_scheme("template")(TemplateScheme)  # in the copy: the scheme's name, uncommented
