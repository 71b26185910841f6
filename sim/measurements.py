"""KPM-like per-slot measurement records (ARCHITECTURE.md's table), columnar.

The engine fills one ``KpmReport`` per reporting period (default 10 slots) for the UEs
it monitors and hands it to its sinks: in-process ABW sources now, the E2 node agent
(issue #5/#6 live part) later, which encodes the same columns into E2SM-KPM.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from octoric.sim.errors import SimError


@dataclass
class KpmReport:
    """One reporting period: rows are slots, columns are UEs (or cells)."""

    start_slot: int
    slot_us: int
    ue_ids: list[int]  # AMF-UE-NGAP-ID per column (stable across gNBs)
    cell_ids: list[int]  # cell index per cell column
    ue_cell: np.ndarray  # (slots, ues) serving cell index, -1 while detached
    prb_used_dl: np.ndarray  # (slots, ues)  RRU.PrbUsedDl
    mcs_dl: np.ndarray  # (slots, ues)  OCC.McsDl (-1: no channel)
    bits_per_prb_dl: np.ndarray  # (slots, ues)  OCC.BitsPerPrbDl
    dl_buffer_bytes: np.ndarray  # (slots, ues)  OCC.DlBufferBytes
    dl_arrived_bytes: np.ndarray  # (slots, ues)  OCC.DlArrivedBytes
    ue_thp_dl_kbps: np.ndarray  # (slots, ues)  DRB.UEThpDl
    prb_avail_dl: np.ndarray  # (slots, cells)  RRU.PrbAvailDl (idle PRBs)
    active_ues_dl: np.ndarray  # (slots, cells)  OCC.ActiveUesDl

    @property
    def n_slots(self) -> int:
        return int(self.prb_used_dl.shape[0])

    def fair_share_bps(self) -> np.ndarray:
        """Per slot and UE: (own PRBs + idle PRBs / N_user) x bits per PRB, in bit/s
        (N_user counts the UE itself when it had no data): PBE-CC's and OCC's C_p."""
        cells = self.ue_cell
        safe = np.where(cells >= 0, cells, 0)
        rows = np.arange(self.n_slots)[:, None]
        idle = self.prb_avail_dl[rows, safe]
        act = self.active_ues_dl[rows, safe]
        own_active = (self.prb_used_dl > 0) | (self.dl_buffer_bytes > 0)
        n_user = np.maximum(act + np.where(own_active, 0, 1), 1)
        prbs = self.prb_used_dl + idle / n_user
        out: np.ndarray = np.where(
            cells >= 0, prbs * self.bits_per_prb_dl * 1e6 / self.slot_us, np.nan
        )
        return out


class KpmSink(Protocol):
    def on_report(self, report: KpmReport, now_us: int) -> None: ...


class AbwSource:
    """Per-UE available bandwidth from KPM reports. Issue #7's OCC engine implements this
    interface; ``PhyCapacityAbw`` stands in until then."""

    name = "abstract"
    stand_in = False

    def on_report(self, report: KpmReport, now_us: int) -> None:
        raise NotImplementedError

    def estimate_bps(self, ue_id: int) -> float | None:
        """Latest ABW for the UE (AMF-UE-NGAP-ID); None means 'fall back' (e.g. handover)."""
        raise NotImplementedError

    def on_handover(self, ue_id: int, start: bool, now_us: int) -> None:
        """A handover of the UE starts or ends (an E2SM-RC report, after the E2 delay)."""


# name -> factory(slot_us, n_prb, scheduler, dl_fraction) of ABW sources other parts of octoric
# provide. The simulator never imports an xApp: the paper harness (octoric.experiments) adds
# "occ-engine", the OCC xApp's algorithm core run in-process.
AbwFactory = Callable[[int, int, str, float], AbwSource]
ABW_SOURCES: dict[str, AbwFactory] = {}


def register_abw_source(name: str, factory: AbwFactory) -> None:
    ABW_SOURCES[name] = factory


def abw_source_factory(name: str) -> AbwFactory:
    """The registered ABW source ``name`` (``stand-in`` is built by the engine itself)."""
    factory = ABW_SOURCES.get(name)
    if factory is None:
        raise SimError(
            f"ABW source {name!r} is not available here; "
            f"known: stand-in{''.join(', ' + k for k in sorted(ABW_SOURCES))} "
            "(occ-engine comes with octoric.experiments, e.g. `octoric eval occ`)"
        )
    return factory


class PhyCapacityAbw(AbwSource):
    """STAND-IN, not OCC: the mean of C_p = (P_alloc + P_idle / N_user) x R_mcs over the
    last ``window_ms``, without OCC's frame-aware window, APP-limit margin or smoothing."""

    name = "phy-capacity-stand-in"
    stand_in = True

    def __init__(self, slot_us: int, window_ms: float = 10.0) -> None:
        self.window_reports = 1
        self.window_ms = window_ms
        self.slot_us = slot_us
        self.hist: dict[int, deque[tuple[float, int]]] = {}
        self.latest: dict[int, float | None] = {}

    def on_report(self, report: KpmReport, now_us: int) -> None:
        cap = report.fair_share_bps()
        n_keep = max(1, round(self.window_ms * 1000 / (report.n_slots * report.slot_us)))
        for j, ue in enumerate(report.ue_ids):
            col = cap[:, j]
            ok = ~np.isnan(col)
            h = self.hist.setdefault(ue, deque(maxlen=n_keep))
            if ok.any():
                h.append((float(col[ok].sum()), int(ok.sum())))
            else:
                h.clear()
                self.latest[ue] = None
                continue
            tot = sum(s for s, _ in h)
            n = sum(k for _, k in h)
            self.latest[ue] = tot / n if n else None

    def estimate_bps(self, ue_id: int) -> float | None:
        return self.latest.get(ue_id)


class KpmRecorder:
    """Fills report arrays slot by slot for monitored UE indices."""

    def __init__(
        self, slot_us: int, ue_ids: list[int], n_cells: int, period_slots: int, start: int = 0
    ) -> None:
        self.slot_us = slot_us
        self.ue_ids = ue_ids
        self.n_cells = n_cells
        self.period = period_slots
        self._new(start)

    def _new(self, start: int) -> None:
        s, u, c = self.period, len(self.ue_ids), self.n_cells
        self.start = start
        self.ue_cell = np.full((s, u), -1, dtype=np.int32)
        self.prb = np.zeros((s, u), dtype=np.int32)
        self.bits = np.zeros((s, u))
        self.buf = np.zeros((s, u), dtype=np.int64)
        self.arr = np.zeros((s, u), dtype=np.int64)
        self.sent = np.zeros((s, u), dtype=np.int64)
        self.idle = np.zeros((s, c), dtype=np.int32)
        self.active = np.zeros((s, c), dtype=np.int32)

    def take(self, mcs_of: np.ndarray) -> KpmReport:
        mcs = np.searchsorted(mcs_of, self.bits + 1e-9, side="right") - 1
        rep = KpmReport(
            start_slot=self.start, slot_us=self.slot_us, ue_ids=list(self.ue_ids),
            cell_ids=list(range(self.n_cells)), ue_cell=self.ue_cell, prb_used_dl=self.prb,
            mcs_dl=mcs.astype(np.int16), bits_per_prb_dl=self.bits, dl_buffer_bytes=self.buf,
            dl_arrived_bytes=self.arr, ue_thp_dl_kbps=self.sent * 8.0 * 1000.0 / self.slot_us,
            prb_avail_dl=self.idle, active_ues_dl=self.active,
        )  # fmt: skip
        self._new(self.start + self.period)
        return rep
