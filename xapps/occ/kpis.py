"""The OCC xApp's per-UE and per-cell KPIs on ``/metrics`` (what kpimon's and srsRAN's Grafana
users plot): PRBs, MCS, throughput and RLC buffer from each node's KPM reports of the last
second, and OCC's available bandwidth (ABW) estimate per UE.

The indication thread only appends the report it handled to its node's window (``note``);
everything is computed at scrape time. Rates and PRBs are averages over the node's reports of
the last ``WINDOW_S`` (one report is 10 ms of bursty video: its own mean says little), the MCS
and the buffer are the latest report's. Label cardinality is bounded: at most
``max_ue_series`` UEs (lowest UE keys first, so the same UEs keep their series scrape after
scrape) get per-UE series, the others are counted in ``ue_series_capped``; a UE's series go
when its node's latest report no longer names it (and its ABW once OCC's estimate of it is
older than ``STALE_S``), a node's when it has been silent for ``STALE_S``. A cell is an E2
node here (``meid``): octoric's gNBs report one cell each.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Iterable

import numpy as np
import numpy.typing as npt

from octoric.contracts import kpm as K
from octoric.xapps.base.metrics import Series
from octoric.xapps.occ.kpm_input import EngineInput
from octoric.xapps.occ.records import UeRecord

MAX_UE_SERIES = 256  # per xApp: 5 per-UE KPIs x 256 UEs = 1280 series at most
STALE_S = 5.0  # a node silent this long (or a UE estimate this old) leaves the series
WINDOW_S = 1.0  # rates and PRBs: averaged over the node's reports of the last second
# A scrape at 10 nodes x 100 UEs x 100 reports/s is ~60 ms of small numpy calls in the HTTP
# thread: it hands the GIL over every this many reports (sleep(0)), so an indication that
# arrives meanwhile waits tens of us for it, not the 5 ms switch interval (as the SDL writer)
YIELD_EVERY = 8

UE_LABELS = ("meid", "ue")
CELL_LABELS = ("meid",)

HELP = {
    "ue_prb_used": "PRBs allocated to the UE, average per downlink slot over its node's KPM "
    "reports of the last second (RRU.PrbUsedDl)",
    "ue_mcs": "downlink MCS index of the UE's latest grant in its node's latest KPM report "
    "(OCC.McsDl)",
    "ue_throughput_bits_per_second": "the UE's downlink throughput over its node's KPM reports "
    "of the last second (DRB.UEThpDl, in bit/s)",
    "ue_buffer_bytes": "bytes in the UE's RLC downlink buffer at the end of its node's latest "
    "KPM report (OCC.DlBufferBytes)",
    "ue_abw_bits_per_second": "OCC's estimate of the UE's available downlink bandwidth (the "
    "target rate its flows are fed), bit/s",
    "cell_prb_used": "PRBs allocated to the cell's UEs, average per downlink slot over the "
    "node's KPM reports of the last second",
    "cell_prb_idle": "PRBs left idle in the cell, average per downlink slot over the node's KPM "
    "reports of the last second (RRU.PrbAvailDl)",
    "cell_prb_carrier": "downlink PRBs of the cell's carrier (OCC.PrbTotalDl, else OCC's "
    "configured prb_total_dl)",
    "cell_active_ues": "UEs with downlink data or a grant, the most in any granule of the "
    "node's KPM reports of the last second (OCC.ActiveUesDl)",
    "cell_throughput_bits_per_second": "downlink throughput summed over the cell's UEs in the "
    "node's KPM reports of the last second, bit/s",
    "ue_series_capped": "UEs with KPIs now left out of the per-UE series by the cap on label "
    f"cardinality ({MAX_UE_SERIES} UEs per xApp)",
}


FloatArray = npt.NDArray[np.float64]


def _num(x: float) -> bool:
    return not math.isnan(x)


class KpiExport:
    def __init__(self, prb_total: float, max_ue_series: int = MAX_UE_SERIES) -> None:
        self.prb_total = prb_total  # the engine's configured P_total, for nodes without it
        self.max_ue_series = max_ue_series
        # per node: (monotonic arrival, report) of the last WINDOW_S, oldest first
        self._recent: dict[str, deque[tuple[float, EngineInput]]] = {}

    def note(self, meid: str, inp: EngineInput) -> None:
        """The indication thread: the node's report joins its window (an append, and the
        reports older than the window leave it)."""
        now = time.monotonic()
        d = self._recent.get(meid)
        if d is None:
            d = self._recent[meid] = deque()
        d.append((now, inp))
        while d[0][0] < now - WINDOW_S:
            d.popleft()

    def series(self, records: Iterable[UeRecord]) -> dict[str, Series | int]:
        """Every KPI family, from the nodes' recent reports and OCC's estimates."""
        now = time.monotonic()
        windows: dict[str, list[EngineInput]] = {}
        for meid, d in list(self._recent.items()):
            reports = list(d)  # a copy: the indication thread appends meanwhile
            if not reports or now - reports[-1][0] > STALE_S:
                self._recent.pop(meid, None)  # a node that left: its series go
                continue
            last = reports[-1][0]
            windows[meid] = [inp for at, inp in reports if at >= last - WINDOW_S]
        wall_horizon = time.time() - STALE_S
        abw = {r.ue: r for r in records if r.updated_at >= wall_horizon}
        ues = set(abw)
        for window in windows.values():
            ues.update(window[-1].ue_ids.tolist())
        kept = set(sorted(ues)[: self.max_ue_series])
        out: dict[str, Series | int] = {n: Series("gauge", UE_LABELS) for n in (
            "ue_prb_used", "ue_mcs", "ue_throughput_bits_per_second", "ue_buffer_bytes",
            "ue_abw_bits_per_second")}  # fmt: skip
        for n in ("cell_prb_used", "cell_prb_idle", "cell_prb_carrier", "cell_active_ues",
                  "cell_throughput_bits_per_second"):  # fmt: skip
            out[n] = Series("gauge", CELL_LABELS)
        for meid, window in sorted(windows.items()):
            self._node(meid, window, kept, out)
            time.sleep(0)
        abw_series = out["ue_abw_bits_per_second"]
        assert isinstance(abw_series, Series)
        for ue, r in sorted(abw.items()):
            if ue in kept and math.isfinite(r.target_bps):
                abw_series.samples.append(((r.meid, str(ue)), float(r.target_bps)))
        out["ue_series_capped"] = len(ues) - len(kept)
        return out

    def _node(
        self, meid: str, reports: list[EngineInput], kept: set[int], out: dict[str, Series | int]
    ) -> None:
        def add(name: str, labels: tuple[str, ...], v: float) -> None:
            s = out[name]
            if isinstance(s, Series) and _num(v):
                s.samples.append((labels, float(v)))

        latest = reports[-1]
        ids: list[int] = latest.ue_ids.tolist()  # the UEs the node names now
        granules = sum(r.n_granules for r in reports)  # the window's length, in granules
        with np.errstate(all="ignore"):  # noValue everywhere: NaN, not exported
            # averages over the window: a UE absent from a report had nothing in it
            for family, meas, scale in (
                ("ue_prb_used", K.PRB_USED_DL, 1.0),
                ("ue_throughput_bits_per_second", K.UE_THP_DL, 1000.0),  # kbit/s
            ):
                sums = _ue_sums(reports, meas)
                if sums is None:
                    continue
                for ue in ids:
                    if ue in kept and ue in sums:
                        add(family, (meid, str(ue)), sums[ue] / granules * scale)
                cell = sum(sums.values()) / granules * scale
                add("cell_prb_used" if meas == K.PRB_USED_DL
                    else "cell_throughput_bits_per_second", (meid,), cell)  # fmt: skip
            # states: the latest report's last granule
            for family, meas in (("ue_mcs", K.MCS_DL), ("ue_buffer_bytes", K.DL_BUFFER_BYTES)):
                arr = latest.metrics.get(meas)
                if arr is None or not arr.size:
                    continue
                for ue, v in zip(ids, arr[:, -1].tolist(), strict=True):
                    if ue in kept:
                        add(family, (meid, str(ue)), v)
            # cell-level measurements ride on every UE's row: the first row's is the cell's
            idle = [r.metrics[K.PRB_AVAIL_DL][0] for r in reports if K.PRB_AVAIL_DL in r.metrics]
            if idle:
                add("cell_prb_idle", (meid,), float(np.nansum(np.concatenate(idle))) / granules)
            active = [r.metrics[K.ACTIVE_UES_DL][0] for r in reports
                      if K.ACTIVE_UES_DL in r.metrics]  # fmt: skip
            if active:
                add("cell_active_ues", (meid,), float(np.nanmax(np.concatenate(active))))
            total = latest.metrics.get(K.PRB_TOTAL_DL)
            p_total = float(np.nanmean(total[0])) if total is not None and total.size else None
            add("cell_prb_carrier", (meid,), p_total if p_total is not None else self.prb_total)


def _ue_sums(reports: list[EngineInput], meas: str) -> dict[int, float] | None:
    """Per UE, the sum of ``meas`` over every granule of ``reports`` (None: never reported)."""
    ids: list[npt.NDArray[np.int64]] = []
    sums: list[FloatArray] = []
    for i, r in enumerate(reports):
        if i % YIELD_EVERY == YIELD_EVERY - 1:
            time.sleep(0)
        arr = r.metrics.get(meas)
        if arr is not None and arr.size:
            ids.append(r.ue_ids)
            sums.append(np.nansum(arr, axis=1))
    if not ids:
        return None
    uniq, inverse = np.unique(np.concatenate(ids), return_inverse=True)
    total = np.bincount(inverse, weights=np.concatenate(sums), minlength=uniq.size)
    return dict(zip(uniq.tolist(), total.tolist(), strict=True))
