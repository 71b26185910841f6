"""The OCC xApp's algorithm core (``octoric.xapps.occ.engine.OccEngine``, issue #7) as an
in-process ``AbwSource``: the offline clock's way of running the xApp's code unchanged.

Each ``KpmReport`` (per-slot rows) becomes one ``ingest`` batch of 1 ms granules, with the
cell-level columns (idle PRBs, active UEs) taken from each UE's serving cell; handover
starts and ends reach ``on_handover`` with the same modelled E2 delay as the reports.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from octoric.contracts import kpm as K
from octoric.sim.measurements import AbwSource, KpmReport, register_abw_source


class OccEngineAbw(AbwSource):
    name = "occ-engine"
    stand_in = False

    def __init__(self, slot_us: int, n_prb: int, scheduler: str, dl_fraction: float = 1.0) -> None:
        from octoric.xapps.occ.config import OccConfig
        from octoric.xapps.occ.engine import OccEngine

        self.slot_us = slot_us
        self.per_ms = max(1, 1000 // slot_us)
        cfg = OccConfig(
            prb_total_dl=float(n_prb),
            scheduler="proportional_fair" if scheduler == "pf" else "round_robin",
            dl_slots_per_ms=self.per_ms * dl_fraction,
        )
        self.engine: Any = OccEngine(cfg)
        self.latest: dict[int, float | None] = {}

    def reconfigure(self, **overrides: Any) -> None:
        """Restart the engine with some ``OccConfig`` fields changed (before the first
        report; e.g. ``octoric eval occ --occ-set``). Raises ``OccConfigError``."""
        from dataclasses import replace

        from octoric.xapps.occ.engine import OccEngine

        self.engine = OccEngine(replace(self.engine.config, **overrides))
        self.latest.clear()

    def on_report(self, report: KpmReport, now_us: int) -> None:
        k = self.per_ms
        n = report.n_slots - report.n_slots % k
        if n == 0:
            return
        g = n // k
        cells = report.ue_cell[:n]
        safe = np.where(cells >= 0, cells, 0)
        rows = np.arange(n)[:, None]
        attached = cells >= 0
        idle = np.where(attached, report.prb_avail_dl[rows, safe], 0)
        active = np.where(attached, report.active_ues_dl[rows, safe], 0)

        def per_ms(a: np.ndarray, how: str) -> np.ndarray:
            b = a[:n].reshape(g, k, -1).astype(np.float64)
            if how == "mean":
                out = b.mean(axis=1)
            elif how == "sum":
                out = b.sum(axis=1)
            elif how == "max":
                out = b.max(axis=1)
            else:  # last
                out = b[:, -1, :]
            return np.ascontiguousarray(out.T)  # (n_ue, n_granule)

        metrics = {
            K.PRB_USED_DL: per_ms(report.prb_used_dl, "mean"),
            K.PRB_AVAIL_DL: per_ms(idle, "mean"),
            K.ACTIVE_UES_DL: per_ms(active, "max"),
            K.BITS_PER_PRB_DL: per_ms(report.bits_per_prb_dl, "last"),
            K.DL_BUFFER_BYTES: per_ms(report.dl_buffer_bytes, "last"),
            K.DL_ARRIVED_BYTES: per_ms(report.dl_arrived_bytes, "sum"),
        }
        t0_ms = report.start_slot * report.slot_us // 1000
        batch = self.engine.ingest(np.asarray(report.ue_ids, dtype=np.int64), t0_ms, metrics)
        for i, ue in enumerate(batch.ue_ids.tolist()):
            self.latest[int(ue)] = None if batch.fallback[i] else float(batch.target_bps[i])

    def on_handover(self, ue_id: int, start: bool, now_us: int) -> None:
        self.engine.on_handover(ue_id, start, now_us // 1000)
        if start:
            self.latest[ue_id] = None

    def estimate_bps(self, ue_id: int) -> float | None:
        return self.latest.get(ue_id)


register_abw_source("occ-engine", OccEngineAbw)
