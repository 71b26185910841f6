"""Handover detection from E2SM-RC REPORT style 4 (UE information): the pure core.

Input: the UE entries of one report, already decoded (``rc_input`` does that with e2sm), as
``UeInfo``: the UE's identity (AMF-UE-NGAP-ID + GUAMI), the reporting node, the serving NR
cell (``contracts.rc.PARAM_NR_CELL``), octoric's handover phase (``PARAM_HO_PHASE``: 1
started, 2 completed, 3 failed and re-established) and the source cell
(``PARAM_SOURCE_CELL``). Output: ``HoEvent``s (30501, ``contracts.ho_event``): phase 1 is a
start, 2 and 3 an end, with source and target cell (NR CGI ``<PLMN hex>:<NCI hex>``) and node.

Each UE is followed by its identity (AMF-UE-NGAP-ID + GUAMI, stable across gNBs), so an end
reported by the target gNB carries the source the start named. Entries without the phase, or
of UEs without an AMF-UE-NGAP-ID, are no handover event (counted, and the UE's serving cell is
still noted). A repeated start for the same cells is dropped; an end without a start (the
start was missed: another node, or this xApp restarted) is still an end.

numpy-free, standard library and ``octoric.contracts`` only; no I/O; the clock is injected
(``clock()`` -> unix ms), so the paper harness and tests drive it with their own time.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from octoric.contracts.ho_event import HoEvent
from octoric.contracts.rc import HO_PHASE_COMPLETED, HO_PHASE_FAILED, HO_PHASE_STARTED

PHASES = (HO_PHASE_STARTED, HO_PHASE_COMPLETED, HO_PHASE_FAILED)


@dataclass(frozen=True)
class UeInfo:
    """One UE entry of an RC REPORT style 4 indication, decoded."""

    ue: int | None  # AMF-UE-NGAP-ID; None: the entry names the UE otherwise (no gNB-UEID)
    guami: str | None  # ``<PLMN hex>:<region>:<set>:<pointer>``
    meid: str  # the node that reported it
    serving_cell: int | None = None  # NR Cell Identity (36 bits)
    phase: int | None = None
    source_cell: int | None = None


@dataclass
class UeTrack:
    """What the detector knows of one UE (keyed by AMF-UE-NGAP-ID + GUAMI)."""

    ue: int
    guami: str | None
    meid: str  # the node that reported the UE last
    cell: int | None  # serving cell as last reported
    seen_ms: int
    in_handover: bool = False
    since_ms: int = 0  # the start of the handover in progress
    source_cell: int | None = None
    target_cell: int | None = None
    source_meid: str | None = None


def cell_name(nci: int | None, guami: str | None) -> str | None:
    """NR CGI as ``<PLMN hex>:<NCI hex>``. RC style 4 reports carry the NR Cell Identity
    only; the PLMN is the UE's (its GUAMI's), the serving PLMN of a one-PLMN network."""
    if nci is None:
        return None
    plmn = guami.partition(":")[0] if guami else ""
    return f"{plmn}:{nci:x}" if plmn else f"{nci:x}"


class Detector:
    def __init__(
        self,
        clock: Callable[[], int],
        forget_ms: int = 60_000,
        max_handover_ms: int = 30_000,
    ) -> None:
        """``clock()``: unix ms. A UE not reported for ``forget_ms`` is forgotten; a handover
        without an end for ``max_handover_ms`` too (counted ``stale_handovers``, no event)."""
        self.clock = clock
        self.forget_ms, self.max_handover_ms = forget_ms, max_handover_ms
        self.tracks: dict[tuple[int, str | None], UeTrack] = {}
        self.counters: Counter[str] = Counter()

    def in_handover(self) -> list[UeTrack]:
        return [t for t in self.tracks.values() if t.in_handover]

    def on_report(self, entries: Iterable[UeInfo]) -> list[HoEvent]:
        """The handover events of one report's UE entries, in their order."""
        now = self.clock()
        out: list[HoEvent] = []
        for e in entries:
            self.counters["entries"] += 1
            if e.ue is None:
                self._skip("no_ue_id")
                continue
            key = (e.ue, e.guami)
            t = self.tracks.get(key)
            if t is None:
                t = self.tracks[key] = UeTrack(e.ue, e.guami, e.meid, e.serving_cell, now)
            if e.phase is None or e.phase not in PHASES:
                self._skip("no_phase" if e.phase is None else "bad_phase")
                t.meid, t.seen_ms = e.meid, now
                if e.serving_cell is not None:
                    t.cell = e.serving_cell
                continue
            ev = self._start(t, e, now) if e.phase == HO_PHASE_STARTED else self._end(t, e, now)
            t.meid, t.seen_ms = e.meid, now
            if ev is not None:
                out.append(ev)
        return out

    def _skip(self, why: str) -> None:
        self.counters["entries_without_handover"] += 1
        self.counters[f"skipped_{why}"] += 1

    def _start(self, t: UeTrack, e: UeInfo, now: int) -> HoEvent | None:
        source = e.source_cell if e.source_cell is not None else t.cell
        # the reporting gNB names the cell the UE goes to, or still its own: no target yet
        target = e.serving_cell if e.serving_cell != source else None
        if t.in_handover and (t.source_cell, t.target_cell) == (source, target):
            self.counters["duplicate_starts"] += 1
            return None
        if t.in_handover:
            self.counters["restarts"] += 1  # a new start before the old one ended
        t.in_handover, t.since_ms = True, now
        t.source_cell, t.target_cell, t.source_meid = source, target, e.meid
        self.counters["starts"] += 1
        return HoEvent(
            t.ue, "start", now, t.guami, source_meid=e.meid,
            source_cell=cell_name(source, t.guami), target_cell=cell_name(target, t.guami),
        )  # fmt: skip

    def _end(self, t: UeTrack, e: UeInfo, now: int) -> HoEvent:
        if t.in_handover:
            source = t.source_cell if t.source_cell is not None else e.source_cell
            source_meid = t.source_meid
        else:
            self.counters["ends_without_start"] += 1
            source = e.source_cell if e.source_cell is not None else t.cell
            source_meid = None
        target = e.serving_cell
        self.counters["ends"] += 1
        self.counters["completed" if e.phase == HO_PHASE_COMPLETED else "failed"] += 1
        t.in_handover, t.source_cell, t.target_cell, t.source_meid = False, None, None, None
        if target is not None:
            t.cell = target
        return HoEvent(
            t.ue, "end", now, t.guami, source_meid=source_meid, target_meid=e.meid,
            source_cell=cell_name(source, t.guami), target_cell=cell_name(target, t.guami),
        )  # fmt: skip

    def expire(self) -> int:
        """Forget UEs not reported for ``forget_ms`` and handovers older than
        ``max_handover_ms``; returns how many UEs were forgotten."""
        now = self.clock()
        gone = []
        for key, t in self.tracks.items():
            if t.in_handover and now - t.since_ms > self.max_handover_ms:
                self.counters["stale_handovers"] += 1
                gone.append(key)
            elif not t.in_handover and now - t.seen_ms > self.forget_ms:
                gone.append(key)
        for key in gone:
            del self.tracks[key]
        self.counters["ues_forgotten"] += len(gone)
        return len(gone)
