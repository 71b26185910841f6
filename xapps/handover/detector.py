"""Handover detection, the pure core: RC UE-information entries or KPM UE sightings in,
``HoEvent``s (30501, ``contracts.ho_event`` version 2) out.

Two paths, one UE state (keyed by AMF-UE-NGAP-ID + GUAMI, which stay the same across cells
and gNBs, so a UE is followed from the source gNB to the target gNB):

- **rc** (``on_report``): E2SM-RC REPORT style 4 entries, decoded by ``rc_input`` into
  ``UeInfo``: serving cell (RAN parameter 17011, NR Cell Identity), octoric's handover phase
  (30001: 1 started, 2 completed, 3 failed and re-established), source cell (30002) and the
  interruption the target gNB measured (30003). Phase 1 is a ``start``, 2 a ``complete``, 3 a
  ``failure`` (cause ``radio-link-failure-reestablished``). A repeated start for the same
  cells is dropped; an end without a start (missed: another RIC, a restart) is still an end.
- **kpm** (``on_sighting``), for gNBs without RC reports (stock srsRAN_Project): a UE-level
  KPM report says a UE was served by a node from ``first_ms`` to ``last_ms`` (RAN time, the
  served granules). A UE seen at another node than the one it was last seen at, later than it
  was last seen there, has been handed over: ``start`` and ``complete`` at once (the start is
  only knowable in hindsight), with the interruption = the gap between the two sightings.
  Sightings older than the UE's current node's are stale (reports of two gNBs for the same
  period arrive in either order) and change nothing. KPM cannot tell a failed handover that
  re-establishes in the target from a successful one: it says ``complete``.

A complete that takes the UE back to the cell its previous handover left, within
``ping_pong_ms`` of that handover's end, is followed by a ``ping_pong`` event (ToN'22: 19.3 %
of HSR handovers are ping-pongs).

Standard library and ``octoric.contracts`` only; no I/O; the clock is injected (``clock()``
-> unix ms), so the paper harness and tests drive it with their own time.
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, fields
from typing import Any

from octoric.contracts.ho_event import COMPLETE, FAILURE, PING_PONG, START, HoEvent
from octoric.contracts.rc import HO_PHASE_COMPLETED, HO_PHASE_FAILED, HO_PHASE_STARTED

PHASES = (HO_PHASE_STARTED, HO_PHASE_COMPLETED, HO_PHASE_FAILED)
RLF_CAUSE = "radio-link-failure-reestablished"


@dataclass(frozen=True)
class UeInfo:
    """One UE entry of an RC REPORT style 4 indication, decoded."""

    ue: int | None  # AMF-UE-NGAP-ID; None: the entry names the UE otherwise (no gNB-UEID)
    guami: str | None  # ``<PLMN hex>:<region>:<set>:<pointer>``
    meid: str  # the node that reported it
    serving_cell: int | None = None  # NR Cell Identity (36 bits)
    phase: int | None = None
    source_cell: int | None = None
    interruption_ms: float | None = None  # measured at the RAN (the target gNB)


@dataclass(frozen=True)
class UeSighting:
    """One UE in one node's UE-level KPM report: served from ``first_ms`` to ``last_ms``
    (RAN time: the report's collection start + the first / after the last served granule)."""

    ue: int
    guami: str | None
    meid: str
    first_ms: int
    last_ms: int


@dataclass
class UeTrack:
    """What the detector knows of one UE (keyed by AMF-UE-NGAP-ID + GUAMI)."""

    ue: int
    guami: str | None
    meid: str  # the node that reported the UE last
    cell: int | None  # serving cell as last reported (RC)
    seen_ms: int
    in_handover: bool = False
    since_ms: int = 0  # the start of the handover in progress
    source_cell: int | None = None
    target_cell: int | None = None
    source_meid: str | None = None
    # the last completed handover, for ping-pong: where it came from, when it ended
    prev_source: str | None = None  # the cell (or, on the kpm path, the node) it left
    prev_end_ms: int = 0
    # kpm path: the node the UE is served by and the RAN-time span it was seen there
    kpm_meid: str | None = None
    kpm_first_ms: int = 0
    kpm_last_ms: int = 0


def cell_name(nci: int | None, guami: str | None) -> str | None:
    """NR CGI as ``<PLMN hex>:<NCI hex>``. RC style 4 reports carry the NR Cell Identity
    only; the PLMN is the UE's (its GUAMI's), the serving PLMN of a one-PLMN network."""
    if nci is None:
        return None
    plmn = guami.partition(":")[0] if guami else ""
    return f"{plmn}:{nci:x}" if plmn else f"{nci:x}"


def event_id(ue: int, guami: str | None, started_ms: int, kind: str) -> str:
    """Unique per event: one start per UE per ms at most, one event of each kind per start."""
    return f"{ue}@{guami or '-'}:{started_ms}:{kind}"


class Detector:
    def __init__(
        self,
        clock: Callable[[], int],
        forget_ms: int = 60_000,
        max_handover_ms: int = 30_000,
        ping_pong_ms: int = 3_000,
    ) -> None:
        """``clock()``: unix ms. A UE not reported for ``forget_ms`` is forgotten; a handover
        without an end for ``max_handover_ms`` too (counted ``stale_handovers``, no event)."""
        self.clock = clock
        self.forget_ms, self.max_handover_ms = forget_ms, max_handover_ms
        self.ping_pong_ms = ping_pong_ms
        self.tracks: dict[tuple[int, str | None], UeTrack] = {}
        self.counters: Counter[str] = Counter()
        # for persistence (the xApp keeps the tracks in SDL): changed / forgotten since taken
        self.touched: set[tuple[int, str | None]] = set()
        self.forgotten: set[tuple[int, str | None]] = set()

    def in_handover(self) -> list[UeTrack]:
        return [t for t in self.tracks.values() if t.in_handover]

    def _track(self, ue: int, guami: str | None, meid: str, cell: int | None, now: int) -> UeTrack:
        key = (ue, guami)
        self.touched.add(key)
        t = self.tracks.get(key)
        if t is None:
            t = self.tracks[key] = UeTrack(ue, guami, meid, cell, now)
        return t

    def take_changes(self) -> tuple[list[UeTrack], list[tuple[int, str | None]]]:
        """Copies of the tracks changed and the keys forgotten since the last call (to
        persist). Shallow copies, cheap under the caller's lock; ``asdict`` them outside it."""
        changed = [copy.copy(self.tracks[k]) for k in self.touched if k in self.tracks]
        gone = [k for k in self.forgotten if k not in self.tracks]
        self.touched, self.forgotten = set(), set()
        return changed, gone

    def restore(self, tracks: Iterable[dict[str, Any]]) -> int:
        """Tracks saved by ``take_changes`` (a restarted xApp); malformed ones are skipped and
        counted ``restore_errors``. Returns how many were restored."""
        names = {f.name for f in fields(UeTrack)}
        n = 0
        for d in tracks:
            try:
                if not isinstance(d, dict) or set(d) - names:
                    raise TypeError("not a track")
                t = UeTrack(**d)
                if not isinstance(t.ue, int) or not isinstance(t.meid, str):
                    raise TypeError("bad identity")
            except TypeError:
                self.counters["restore_errors"] += 1
                continue
            self.tracks[(t.ue, t.guami)] = t
            n += 1
        self.counters["restored"] += n
        return n

    # --- rc path -------------------------------------------------------------------------
    def on_report(self, entries: Iterable[UeInfo]) -> list[HoEvent]:
        """The handover events of one RC report's UE entries, in their order."""
        now = self.clock()
        out: list[HoEvent] = []
        for e in entries:
            self.counters["entries"] += 1
            if e.ue is None:
                self._skip("no_ue_id")
                continue
            t = self._track(e.ue, e.guami, e.meid, e.serving_cell, now)
            if e.phase is None or e.phase not in PHASES:
                self._skip("no_phase" if e.phase is None else "bad_phase")
                t.meid, t.seen_ms = e.meid, now
                if e.serving_cell is not None:
                    t.cell = e.serving_cell
                continue
            if e.phase == HO_PHASE_STARTED:
                ev = self._start(t, e, now)
                if ev is not None:
                    out.append(ev)
            else:
                out.extend(self._end(t, e, now))
            t.meid, t.seen_ms = e.meid, now
            t.kpm_meid = None  # a kpm sighting after this starts a new span
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
        self.counters["starts_rc"] += 1
        return HoEvent(
            t.ue, START, now, t.guami, source_meid=e.meid,
            source_cell=cell_name(source, t.guami), target_cell=cell_name(target, t.guami),
            id=event_id(t.ue, t.guami, now, START), path="rc",
        )  # fmt: skip

    def _end(self, t: UeTrack, e: UeInfo, now: int) -> list[HoEvent]:
        if t.in_handover:
            source = t.source_cell if t.source_cell is not None else e.source_cell
            source_meid, started = t.source_meid, t.since_ms
        else:
            self.counters["ends_without_start"] += 1
            source = e.source_cell if e.source_cell is not None else t.cell
            source_meid, started = None, now
        target = e.serving_cell
        kind = COMPLETE if e.phase == HO_PHASE_COMPLETED else FAILURE
        self.counters["ends"] += 1
        self.counters["completed" if kind == COMPLETE else "failed"] += 1
        t.in_handover, t.source_cell, t.target_cell, t.source_meid = False, None, None, None
        if target is not None:
            t.cell = target
        ev = HoEvent(
            t.ue, kind, now, t.guami, source_meid=source_meid, target_meid=e.meid,
            source_cell=cell_name(source, t.guami), target_cell=cell_name(target, t.guami),
            id=event_id(t.ue, t.guami, started, kind), path="rc",
            interruption_ms=e.interruption_ms, cause=RLF_CAUSE if kind == FAILURE else None,
            started_ms=started,
        )  # fmt: skip
        out = [ev]
        left = cell_name(source, t.guami)
        pp = self._ping_pong(t, ev, left, ev.target_cell, now, started)
        if pp is not None:
            out.append(pp)
        return out

    def _ping_pong(
        self, t: UeTrack, ev: HoEvent, left: str | None, now_at: str | None, now: int,
        started: int,
    ) -> HoEvent | None:  # fmt: skip
        """After ``ev`` (an end): a ping-pong event if it took the UE back to where the UE's
        previous handover came from, soon after that one ended. Remembers ``ev`` for the next."""
        back = (
            t.prev_source is not None
            and now_at == t.prev_source
            and started - t.prev_end_ms <= self.ping_pong_ms
        )
        t.prev_source, t.prev_end_ms = left, now
        if not back:
            return None
        self.counters["ping_pongs"] += 1
        return HoEvent(
            t.ue, PING_PONG, now, t.guami, source_meid=ev.source_meid, target_meid=ev.target_meid,
            source_cell=ev.source_cell, target_cell=ev.target_cell,
            id=event_id(t.ue, t.guami, started, PING_PONG), path=ev.path, started_ms=started,
        )  # fmt: skip

    # --- kpm path ------------------------------------------------------------------------
    def on_sighting(self, seen: Iterable[UeSighting]) -> list[HoEvent]:
        """The handover events of one KPM report's UE sightings, in their order."""
        now = self.clock()
        out: list[HoEvent] = []
        for s in seen:
            self.counters["sightings"] += 1
            t = self._track(s.ue, s.guami, s.meid, None, now)
            t.seen_ms = now
            if t.kpm_meid is None or t.kpm_meid == s.meid:
                if t.kpm_meid is None:
                    t.kpm_first_ms = s.first_ms
                t.kpm_meid, t.meid = s.meid, s.meid
                t.kpm_last_ms = max(t.kpm_last_ms, s.last_ms)
                continue
            if s.last_ms <= t.kpm_first_ms:
                self.counters["stale_sightings"] += 1  # older than the current node's
                continue
            out.extend(self._kpm_handover(t, s, now))
        return out

    def _kpm_handover(self, t: UeTrack, s: UeSighting, now: int) -> list[HoEvent]:
        source_meid = t.kpm_meid
        gap = max(0, s.first_ms - t.kpm_last_ms)
        self.counters["starts"] += 1
        self.counters["starts_kpm"] += 1
        self.counters["ends"] += 1
        self.counters["completed"] += 1
        start = HoEvent(
            t.ue, START, now, t.guami, source_meid=source_meid,
            id=event_id(t.ue, t.guami, now, START), path="kpm",
        )  # fmt: skip
        end = HoEvent(
            t.ue, COMPLETE, now, t.guami, source_meid=source_meid, target_meid=s.meid,
            id=event_id(t.ue, t.guami, now, COMPLETE), path="kpm", interruption_ms=float(gap),
            started_ms=now,
        )  # fmt: skip
        t.kpm_meid, t.meid, t.kpm_first_ms, t.kpm_last_ms = s.meid, s.meid, s.first_ms, s.last_ms
        t.in_handover = False
        out = [start, end]
        # kpm sees nodes, not cells: a ping-pong is a return to the node it left
        pp = self._ping_pong(t, end, source_meid, s.meid, now, now)
        if pp is not None:
            out.append(pp)
        return out

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
        self.forgotten.update(gone)
        self.counters["ues_forgotten"] += len(gone)
        return len(gone)
