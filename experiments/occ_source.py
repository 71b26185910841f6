"""The OCC xApp's algorithm core (``octoric.xapps.occ.engine.OccEngine``, issue #7) as an
in-process ``AbwSource``: the offline clock's way of running the xApp's code unchanged.

Each ``KpmReport`` (per-slot rows) becomes one ``ingest`` batch of 1 ms granules, with the
cell-level columns (idle PRBs, active UEs) taken from each UE's serving cell and every
measurement aggregated as the live E2 agent does (``e2sm.granules.aggregate_granules``,
``contracts.kpm.AGGREGATION``); handover starts and ends reach ``on_handover`` with the same
modelled E2 delay as the reports.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from octoric.contracts import kpm as K
from octoric.e2sm.granules import aggregate_granules
from octoric.sim.measurements import AbwSource, KpmReport, register_abw_source
from octoric.xapps.occ.errors import OccInputError
from octoric.xapps.occ.metrics import fill_no_value

_NAMES = K.OCC_ENGINE_INPUTS  # what the engine reads, in its column order


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
        self.rows_dropped = 0  # UE rows the engine rejected (no MCS known for the UE yet)

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
        cells = report.ue_cell[:n]
        safe = np.where(cells >= 0, cells, 0)
        rows = np.arange(n)[:, None]
        attached = cells >= 0
        # (slots, UEs, measurement): cell-level columns from each UE's serving cell
        m = np.empty((n, len(report.ue_ids), len(_NAMES)))
        m[:, :, 0] = report.prb_used_dl[:n]
        m[:, :, 1] = np.where(attached, report.prb_avail_dl[rows, safe], 0)
        m[:, :, 2] = np.where(attached, report.active_ues_dl[rows, safe], 0)
        m[:, :, 3] = report.bits_per_prb_dl[:n]
        m[:, :, 4] = report.dl_buffer_bytes[:n]
        m[:, :, 5] = report.dl_arrived_bytes[:n]
        g = aggregate_granules(m, k, _NAMES)  # (granules, UEs, measurement)
        metrics = {name: np.ascontiguousarray(g[:, :, i].T) for i, name in enumerate(_NAMES)}
        ids = np.asarray(report.ue_ids, dtype=np.int64)
        if np.isnan(g).any():
            # noValue (a UE without PDSCH has no MCS) filled as the xApp's KPM decoder fills it
            fill_no_value(metrics)
        t0_ms = report.start_slot * report.slot_us // 1000
        try:
            batch = self.engine.ingest(ids, t0_ms, metrics)
        except OccInputError as e:
            # as the xApp: the rows the engine rejects (a UE with no MCS known yet) are dropped
            # and the rest ingested; the dropped UEs wait for their next report
            if not e.bad_ue_ids:
                raise
            ok = ~np.isin(ids, np.asarray(e.bad_ue_ids, dtype=np.int64))
            self.rows_dropped += int((~ok).sum())
            if not ok.any():
                return
            ids = ids[ok]
            metrics = {n: np.ascontiguousarray(a[ok]) for n, a in metrics.items()}
            batch = self.engine.ingest(ids, t0_ms, metrics)
        for i, ue in enumerate(batch.ue_ids.tolist()):
            self.latest[int(ue)] = None if batch.fallback[i] else float(batch.target_bps[i])

    def on_handover(self, ue_id: int, start: bool, now_us: int) -> None:
        self.engine.on_handover(ue_id, start, now_us // 1000)
        if start:
            self.latest[ue_id] = None

    def estimate_bps(self, ue_id: int) -> float | None:
        return self.latest.get(ue_id)


register_abw_source("occ-engine", OccEngineAbw)
