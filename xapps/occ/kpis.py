"""The OCC xApp's per-UE and per-cell KPIs on ``/metrics`` (what kpimon's and srsRAN's Grafana
users plot): PRBs, MCS, throughput and RLC buffer from each node's latest KPM report, and
OCC's available bandwidth (ABW) estimate per UE.

The indication thread only stores its node's latest ``EngineInput`` (``note``); everything is
computed at scrape time. Label cardinality is bounded: at most ``max_ue_series`` UEs (lowest
UE keys first, so the same UEs keep their series scrape after scrape) get per-UE series, the
others are counted in ``ue_series_capped``; a UE is gone from the series as soon as no node's
report of the last ``STALE_S`` names it (and its ABW once OCC's estimate of it is older than
that). A cell is an E2 node here (``meid``): octoric's gNBs report one cell each.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from octoric.contracts import kpm as K
from octoric.xapps.base.metrics import Series
from octoric.xapps.occ.kpm_input import EngineInput
from octoric.xapps.occ.records import UeRecord

MAX_UE_SERIES = 256  # per xApp: 5 per-UE KPIs x 256 UEs = 1280 series at most
STALE_S = 5.0  # a node silent this long (or a UE estimate this old) leaves the series

UE_LABELS = ("meid", "ue")
CELL_LABELS = ("meid",)

HELP = {
    "ue_prb_used": "PRBs allocated to the UE, average per downlink slot over its node's "
    "latest KPM report (RRU.PrbUsedDl)",
    "ue_mcs": "downlink MCS index of the UE's latest grant in its node's latest KPM report "
    "(OCC.McsDl)",
    "ue_throughput_bits_per_second": "the UE's downlink throughput over its node's latest KPM "
    "report (DRB.UEThpDl, in bit/s)",
    "ue_buffer_bytes": "bytes in the UE's RLC downlink buffer at the end of its node's latest "
    "KPM report (OCC.DlBufferBytes)",
    "ue_abw_bits_per_second": "OCC's estimate of the UE's available downlink bandwidth (the "
    "target rate its flows are fed), bit/s",
    "cell_prb_used": "PRBs allocated to the cell's UEs, average per downlink slot over the "
    "node's latest KPM report",
    "cell_prb_idle": "PRBs left idle in the cell, average per downlink slot over the node's "
    "latest KPM report (RRU.PrbAvailDl)",
    "cell_prb_carrier": "downlink PRBs of the cell's carrier (OCC.PrbTotalDl, else OCC's "
    "configured prb_total_dl)",
    "cell_active_ues": "UEs with downlink data or a grant in the node's latest KPM report "
    "(OCC.ActiveUesDl, most in any granule)",
    "cell_throughput_bits_per_second": "downlink throughput summed over the cell's UEs in the "
    "node's latest KPM report, bit/s",
    "ue_series_capped": "UEs with KPIs now left out of the per-UE series by the cap on label "
    f"cardinality ({MAX_UE_SERIES} UEs per xApp)",
}


@dataclass
class _Latest:
    at: float  # monotonic
    inp: EngineInput


def _num(x: float) -> bool:
    return not math.isnan(x)


class KpiExport:
    def __init__(self, prb_total: float, max_ue_series: int = MAX_UE_SERIES) -> None:
        self.prb_total = prb_total  # the engine's configured P_total, for nodes without it
        self.max_ue_series = max_ue_series
        self._latest: dict[str, _Latest] = {}

    def note(self, meid: str, inp: EngineInput) -> None:
        """The indication thread: the node's newest report (one dict store)."""
        self._latest[meid] = _Latest(time.monotonic(), inp)

    def series(self, records: Iterable[UeRecord]) -> dict[str, Series | int]:
        """Every KPI family, from the reports of the last ``STALE_S`` and OCC's estimates."""
        now = time.monotonic()
        fresh = {}
        for meid, last in list(self._latest.items()):
            if now - last.at > STALE_S:
                self._latest.pop(meid, None)  # a node that left: its series go
            else:
                fresh[meid] = last.inp
        wall_horizon = time.time() - STALE_S
        abw = {r.ue: r for r in records if r.updated_at >= wall_horizon}
        ues = set(abw)
        for inp in fresh.values():
            ues.update(inp.ue_ids.tolist())
        kept = set(sorted(ues)[: self.max_ue_series])
        out: dict[str, Series | int] = {n: Series("gauge", UE_LABELS) for n in (
            "ue_prb_used", "ue_mcs", "ue_throughput_bits_per_second", "ue_buffer_bytes",
            "ue_abw_bits_per_second")}  # fmt: skip
        for n in ("cell_prb_used", "cell_prb_idle", "cell_prb_carrier", "cell_active_ues",
                  "cell_throughput_bits_per_second"):  # fmt: skip
            out[n] = Series("gauge", CELL_LABELS)
        for meid, inp in sorted(fresh.items()):
            self._node(meid, inp, kept, out)
        abw_series = out["ue_abw_bits_per_second"]
        assert isinstance(abw_series, Series)
        for ue, r in sorted(abw.items()):
            if ue in kept and math.isfinite(r.target_bps):
                abw_series.samples.append(((r.meid, str(ue)), float(r.target_bps)))
        out["ue_series_capped"] = len(ues) - len(kept)
        return out

    def _node(
        self, meid: str, inp: EngineInput, kept: set[int], out: dict[str, Series | int]
    ) -> None:
        m = inp.metrics
        ids = inp.ue_ids.tolist()

        def add(name: str, labels: tuple[str, ...], v: float) -> None:
            s = out[name]
            if isinstance(s, Series) and _num(v):
                s.samples.append((labels, float(v)))

        per_ue_spec = (
            ("ue_prb_used", K.PRB_USED_DL, "mean", 1.0),
            ("ue_mcs", K.MCS_DL, "last", 1.0),
            ("ue_throughput_bits_per_second", K.UE_THP_DL, "mean", 1000.0),  # kbit/s
            ("ue_buffer_bytes", K.DL_BUFFER_BYTES, "last", 1.0),
        )
        with np.errstate(all="ignore"):  # a UE all noValue in the report: NaN, not exported
            for family, meas, how, scale in per_ue_spec:
                arr = m.get(meas)
                if arr is None or not arr.size:
                    continue
                vals = (np.nanmean(arr, axis=1) if how == "mean" else arr[:, -1]) * scale
                for ue, v in zip(ids, vals.tolist(), strict=True):
                    if ue in kept:
                        add(family, (meid, str(ue)), v)
            prb = m.get(K.PRB_USED_DL)
            if prb is not None and prb.size:
                add("cell_prb_used", (meid,), float(np.nansum(np.nanmean(prb, axis=1))))
            thp = m.get(K.UE_THP_DL)
            if thp is not None and thp.size:
                add("cell_throughput_bits_per_second", (meid,),
                    float(np.nansum(np.nanmean(thp, axis=1))) * 1000.0)  # fmt: skip
            # cell-level measurements ride on every UE's row: the first row's is the cell's
            idle = m.get(K.PRB_AVAIL_DL)
            if idle is not None and idle.size:
                add("cell_prb_idle", (meid,), float(np.nanmean(idle[0])))
            active = m.get(K.ACTIVE_UES_DL)
            if active is not None and active.size:
                add("cell_active_ues", (meid,), float(np.nanmax(active[0])))
            total = m.get(K.PRB_TOTAL_DL)
            p_total = float(np.nanmean(total[0])) if total is not None and total.size else None
            add("cell_prb_carrier", (meid,), p_total if p_total is not None else self.prb_total)
