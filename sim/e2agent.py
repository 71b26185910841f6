"""The simulated gNB's E2 node agent: one per gNB (the gNB's cells share it), speaking E2AP to
the RIC's e2term over the E2 transport (SCTP or octoric's TCP framing).

- E2 Setup with two RAN functions: E2SM-KPM (ID 2) and E2SM-RC (ID 3).
- KPM REPORT styles 1-5 from the engine's per-slot records (``KpmReport``, the agent is a
  ``KpmSink``) of the OCC measurements and OCC.PrbTotalDl (the serving carrier's DL PRBs;
  the KPM RAN function definition lists it): styles 4/5 send format-3 indications (one
  format-1 report per UE) encoded with the fast encoder (``octoric.e2sm.fastenc``); styles 1-3
  use the generic codec.
- RC REPORT style 4 (UE information) at handover starts and ends (a ``MobilitySink``).
- RC CONTROL style 1, action 100 (Octopus content adaptation) configures the UE's dropper.
- Subscription delete, reset; reconnects with exponential backoff (0.1 s .. 5 s) and forgets
  its subscriptions (the RIC's submgr re-subscribes, as with a real gNB): the E2 node session
  shared with the scripted test node (``octoric.e2sm.node_session.E2NodeSession``).

Everything runs in the live driver's asyncio loop: the engine calls ``on_report`` and
``on_mobility`` synchronously from ``run_until``; encoded PDUs go to a bounded send queue
drained by a sender task.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from octoric.contracts import kpm as K
from octoric.contracts import rc as R
from octoric.e2sm import e2ap, fastenc, kpm, kpm_version, rc
from octoric.e2sm.common import Guami, RanFunctionName, UeId, ntp_timestamp
from octoric.e2sm.e2ap_ies import Cause, GlobalE2NodeId, RanFunction, RicActionNotAdmitted
from octoric.e2sm.errors import E2smError
from octoric.e2sm.granules import aggregate_granules
from octoric.e2sm.kpm_version import KpmVersion
from octoric.e2sm.node_session import E2NodeSession, E2Subscription, SessionStats
from octoric.sim.dropper import DropperConfig, OctopusDropper
from octoric.sim.engine import Engine, MobilityEvent
from octoric.sim.measurements import KpmReport

log = logging.getLogger("sim.e2agent")

PLMN = bytes.fromhex("00f110")  # MCC 001, MNC 01 (test network)
GUAMI = Guami(PLMN, 1, 1, 0)
GNB_ID_BASE = 411  # gNB g has gNB ID 411 + g (22-bit gNB IDs)
GNB_ID_BITS = 22

# The KPM measurements a gNB offers, in the column order of the agent's per-slot matrix:
# the OCC set and the optional ones (OCC.PrbTotalDl: the serving carrier's DL PRBs).
MEASUREMENTS: tuple[str, ...] = kpm.OCC_MEASUREMENTS + kpm.OCC_OPTIONAL_MEASUREMENTS
_COL = {name: i for i, name in enumerate(MEASUREMENTS)}
_UE_LEVEL = tuple(m for m in MEASUREMENTS if m in K.UE_LEVEL)
_CELL_LEVEL = tuple(m for m in MEASUREMENTS if m not in K.UE_LEVEL)

# RC REPORT style 4 (UE information) parameters the agent reports (contracts.rc, docs/sim.md)
RC_REPORT_PARAMS = tuple(R.REPORT_PARAMS.items())
OCTOPUS_DRB_ID = 1  # the RTC flows of a simulated UE ride DRB 1

_CAUSE_UNSUPPORTED = Cause("ricRequest", "action-not-supported")
_CAUSE_BAD_FUNCTION = Cause("ricRequest", "ran-function-id-invalid")
_CAUSE_BAD_TRIGGER = Cause("ricRequest", "eventTriggerNotSupported")
_CAUSE_BAD_CONTROL = Cause("ricRequest", "control-message-invalid")
_CAUSE_CONTROL_FAILED = Cause("ricRequest", "control-failed-to-execute")


def nr_cell_identity(gnb_id: int, cell_id: int) -> int:
    """36-bit NR Cell Identity: the 22-bit gNB ID, then a 14-bit local cell ID."""
    return (gnb_id << (36 - GNB_ID_BITS)) | cell_id


def kpm_ran_function(version: KpmVersion = kpm_version.DEFAULT) -> RanFunction:
    """The KPM RAN function a gNB of KPM ``version`` announces, as such nodes do in the field:
    v02.03 and v04.00 with OID ...1.2.2.2 (v02.0x nodes; srsRAN_Project with v04.00), v03.00 and
    v05.00 with ...1.3.2.2, v05.00 with its integrated report style (jobs, Format 255) listed."""
    d = kpm.octoric_ran_function_definition(measurements=MEASUREMENTS)
    oid = kpm_version.OID_V3 if version in (KpmVersion.V3_00, KpmVersion.V5_00) else kpm.OID
    integrated = None
    if version is KpmVersion.V5_00:
        integrated = (kpm.IntegratedReportStyle(6, "Multiple jobs", 255, 1, 255),)
    d = kpm.KpmRanFunctionDefinition(
        RanFunctionName(d.name.short_name, oid, d.name.description, d.name.instance),
        d.event_trigger_styles,
        d.report_styles,
        integrated,
    )
    return RanFunction(kpm.RAN_FUNCTION_ID, kpm.encode_kpm(d, version), 1, oid)


def rc_ran_function() -> RanFunction:
    d = rc.octoric_ran_function_definition()
    styles = tuple(
        rc.RcStyle(s.style, s.name, s.formats, RC_REPORT_PARAMS if s.style == 4 else s.params)
        for s in d.report_styles or ()
    )
    d = rc.RcRanFunctionDefinition(d.name, d.event_trigger_styles, styles, d.control_styles)
    return RanFunction(rc.RAN_FUNCTION_ID, rc.encode_rc(d), 1, rc.OID)


class ActionRejected(Exception):
    def __init__(self, cause: Cause, why: str) -> None:
        super().__init__(why)
        self.cause = cause


@dataclass
class KpmAction:
    """One admitted KPM REPORT action: what to measure, for whom, and its pending slots."""

    action_id: int
    style: int
    measurements: tuple[str, ...]
    granularity_ms: int
    cols: list[int]
    ue_filter: frozenset[int] | None  # AMF-UE-NGAP-IDs (style 2 / 5), None = every UE
    cell: int | None  # style 1/3 with a cell global ID: that cell's index, else all cells
    conditions: tuple[kpm.MeasCond, ...] = ()
    encoder: fastenc.Format3Encoder | None = None


@dataclass
class Subscription(E2Subscription):
    period_slots: int = 0
    kpm_actions: list[KpmAction] = field(default_factory=list)
    rc_action_id: int | None = None
    rc_condition_id: int = 1
    # KPM: the slots collected since the last indication
    # (start slot, values, serving cells, cell columns) per engine report
    pending: list[tuple[int, np.ndarray, np.ndarray, np.ndarray]] = field(default_factory=list)
    pending_slots: int = 0


@dataclass
class AgentStats(SessionStats):
    kpm_indications: int = 0
    rc_indications: int = 0
    controls_applied: int = 0
    controls_failed: int = 0
    send_queue_drops: int = 0
    encode_fallbacks: int = 0
    encode_seconds: float = 0.0  # time spent encoding KPM indications


class E2Agent(E2NodeSession[Subscription, AgentStats]):
    """The E2 node of gNB ``gnb`` of ``engine``. The E2 session (connect, setup, receive loop,
    subscription bookkeeping, reconnect) is ``E2NodeSession``'s; this class admits KPM / RC
    subscriptions, reports, applies controls and sends through a bounded queue."""

    SEND_QUEUE = 2000  # PDUs; beyond it the oldest indication is dropped (and counted)
    BACKOFF_MAX_S = 5.0

    def __init__(
        self,
        engine: Engine,
        gnb: int,
        host: str,
        port: int,
        transport: str = "tcp",
        slot_to_unix: Callable[[int], float] | None = None,
        plmn: bytes = PLMN,
        guami: Guami = GUAMI,
        gnb_id: int | None = None,
        kpm_version: KpmVersion = kpm_version.DEFAULT,
    ) -> None:
        self.engine = engine
        self.kpm_version = kpm_version
        self.gnb = gnb
        self.plmn, self.guami = plmn, guami
        self.gnb_id = GNB_ID_BASE + gnb if gnb_id is None else gnb_id
        super().__init__(
            host,
            port,
            transport,  # type: ignore[arg-type]
            GlobalE2NodeId(plmn, self.gnb_id, GNB_ID_BITS),
            [kpm_ran_function(kpm_version), rc_ran_function()],
            AgentStats(),
            name=f"gNB {gnb}",
        )
        self.slot_to_unix = slot_to_unix or (lambda s: s * engine.slot_us / 1e6)
        self.cells = [c.idx for c in engine.cells if c.gnb == gnb]
        self._gnb_of_cell = np.array([c.gnb for c in engine.cells] + [-1], dtype=np.int32)
        self._prb_of_cell = np.array([float(c.n_prb) for c in engine.cells])  # OCC.PrbTotalDl
        self.cell_nci = {
            c.idx: nr_cell_identity(self.gnb_id, c.cell_id) for c in engine.cells if c.gnb == gnb
        }
        self._queue: asyncio.Queue[bytes] = asyncio.Queue()
        self._sender: asyncio.Task[None] | None = None
        self._ue_ids: dict[tuple[int, int], UeId] = {}

    # --- identity -----------------------------------------------------------------------

    def ue_id(self, ue: int) -> UeId:
        u = self.engine.ues[ue]
        key = (ue, u.gnb_ue_id)
        uid = self._ue_ids.get(key)
        if uid is None:  # one object per (UE, F1AP ID): the encoder caches by it
            uid = self._ue_ids[key] = UeId.gnb(u.amf_ue_ngap_id, self.guami, u.gnb_ue_id or None)
        return uid

    def _ue_of_amf(self, amf: int) -> int | None:
        for u in self.engine.ues:
            if u.amf_ue_ngap_id == amf:
                return u.idx
        return None

    # --- the session's sending: a sender task per connection drains a bounded queue ------

    async def _session_started(self) -> None:
        self._sender = asyncio.create_task(self._send_loop())

    async def _session_ended(self) -> None:
        if self._sender is not None:
            self._sender.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._sender
            self._sender = None

    def _on_drop(self) -> None:
        while not self._queue.empty():
            self._queue.get_nowait()

    async def _send_loop(self) -> None:
        while True:
            pdu = await self._queue.get()
            if self.conn is None:
                continue
            await self.conn.send(pdu)

    def _enqueue(self, pdu: bytes, droppable: bool = False) -> None:
        """Queue a PDU for the sender task. When the RIC does not keep up (the queue holds
        SEND_QUEUE PDUs), new indications are dropped and counted; procedure answers never."""
        if droppable and self._queue.qsize() >= self.SEND_QUEUE:
            self.stats.send_queue_drops += 1
            return
        self._queue.put_nowait(pdu)

    async def send_pdu(self, pdu: bytes) -> None:
        self._enqueue(pdu)

    def _send(self, msg: e2ap.E2apMessage) -> None:
        self._enqueue(e2ap.encode_e2ap(msg))

    async def on_subscription_request(self, msg: e2ap.RicSubscriptionRequest) -> None:
        self._subscribe(msg)

    async def on_control(self, msg: e2ap.RicControlRequest) -> None:
        self._control(msg)

    # --- subscriptions ------------------------------------------------------------------

    def _subscribe(self, msg: e2ap.RicSubscriptionRequest) -> None:
        rid, rf = msg.request_id, msg.ran_function_id
        sub = Subscription(rid, rf)
        admitted: list[int] = []
        rejected: list[RicActionNotAdmitted] = []
        try:
            if rf == kpm.RAN_FUNCTION_ID:
                trig = kpm.decode_kpm(kpm.KpmEventTrigger, msg.details.event_trigger)
                period_us = trig.reporting_period_ms * 1000
                sub.period_slots = max(1, round(period_us / self.engine.slot_us))
            elif rf == rc.RAN_FUNCTION_ID:
                rtrig = rc.decode_rc(rc.RcEventTrigger, msg.details.event_trigger)
                if rtrig.ue_info is None:
                    raise ActionRejected(_CAUSE_UNSUPPORTED, "only RC event trigger format 4")
                ids = [t.condition_id for t in rtrig.ue_info if t.ue_id_change is not None]
                sub.rc_condition_id = ids[0] if ids else rtrig.ue_info[0].condition_id
            else:
                raise ActionRejected(_CAUSE_BAD_FUNCTION, f"no RAN function {rf}")
        except ActionRejected as e:
            self._send(e2ap.RicSubscriptionFailure(rid, rf, e.cause))
            return
        except E2smError as e:
            log.warning("gNB %d: bad event trigger: %s", self.gnb, e)
            self._send(
                e2ap.RicSubscriptionFailure(
                    rid, rf, Cause("ricRequest", "eventTriggerNotSupported")
                )
            )
            return
        for act in msg.details.actions:
            try:
                if act.action_type != "report":
                    raise ActionRejected(_CAUSE_UNSUPPORTED, "only REPORT actions")
                if rf == kpm.RAN_FUNCTION_ID:
                    sub.kpm_actions.append(self._kpm_action(act.action_id, act.definition))
                else:
                    if sub.rc_action_id is not None:
                        raise ActionRejected(_CAUSE_UNSUPPORTED, "one RC report action")
                    if act.definition is not None:
                        d = rc.decode_rc(rc.RcActionDefinition, act.definition)
                        if d.style != rc.REPORT_STYLE_UE_INFORMATION:
                            raise ActionRejected(_CAUSE_UNSUPPORTED, "RC report style 4 only")
                    sub.rc_action_id = act.action_id
                admitted.append(act.action_id)
            except ActionRejected as e:
                log.info("gNB %d: action %d not admitted: %s", self.gnb, act.action_id, e)
                rejected.append(RicActionNotAdmitted(act.action_id, e.cause))
            except E2smError as e:
                log.info("gNB %d: action %d: bad definition: %s", self.gnb, act.action_id, e)
                rejected.append(RicActionNotAdmitted(act.action_id, _CAUSE_UNSUPPORTED))
        if not admitted:
            cause = rejected[0].cause if rejected else _CAUSE_UNSUPPORTED
            self._send(e2ap.RicSubscriptionFailure(rid, rf, cause))
            return
        self._add_subscription(sub)
        self._send(
            e2ap.RicSubscriptionResponse(rid, rf, admitted=admitted, not_admitted=rejected or None)
        )

    def _kpm_action(self, action_id: int, definition: bytes | None) -> KpmAction:
        if definition is None:
            raise ActionRejected(_CAUSE_UNSUPPORTED, "a KPM action needs a definition")
        d = kpm.decode_kpm(kpm.KpmActionDefinition, definition, self.kpm_version)
        f = d.format
        ue_filter: frozenset[int] | None = None
        conditions: tuple[kpm.MeasCond, ...] = ()
        if isinstance(f, kpm.ActionFormat1):
            sub1, cell = f, f.cell
        elif isinstance(f, kpm.ActionFormat2):
            sub1, cell = f.subscription, f.subscription.cell
            ue_filter = frozenset({_amf(f.ue_id)})
        elif isinstance(f, kpm.ActionFormat3):
            conditions = f.conditions
            meas = tuple(c.meas for c in f.conditions)
            sub1 = kpm.ActionFormat1(tuple(kpm.MeasInfo(m) for m in meas), f.granularity_ms)
            cell = f.cell
        elif isinstance(f, kpm.ActionFormat4):
            sub1, cell = f.subscription, f.subscription.cell
        elif isinstance(f, kpm.ActionFormat255):  # KPM v05.00 jobs: not simulated
            raise ActionRejected(_CAUSE_UNSUPPORTED, "multi-report (Format 255) actions")
        else:
            sub1, cell = f.subscription, f.subscription.cell
            ue_filter = frozenset(_amf(u) for u in f.ue_ids)
        names: list[str] = []
        for mi in sub1.measurements:
            if not isinstance(mi.meas, str) or mi.meas not in _COL:
                raise ActionRejected(_CAUSE_UNSUPPORTED, f"measurement {mi.meas!r} not offered")
            names.append(mi.meas)
        if not names:
            raise ActionRejected(_CAUSE_UNSUPPORTED, "no measurements")
        gran_us = sub1.granularity_ms * 1000
        if gran_us % self.engine.slot_us:
            raise ActionRejected(_CAUSE_UNSUPPORTED, "granularity is not a whole number of slots")
        cell_idx = None
        if cell is not None:
            match = [i for i, n in self.cell_nci.items() if n == cell.cell_id and not cell.eutra]
            if not match:
                raise ActionRejected(_CAUSE_UNSUPPORTED, "no such cell at this gNB")
            cell_idx = match[0]
        style = d.style
        enc = fastenc.Format3Encoder(names, sub1.granularity_ms) if style in (4, 5) else None
        return KpmAction(
            action_id, style, tuple(names), sub1.granularity_ms, [_COL[n] for n in names],
            ue_filter, cell_idx, conditions, enc,
        )  # fmt: skip

    # --- KPM reports (KpmSink) ----------------------------------------------------------

    def slot_matrix(self, rep: KpmReport) -> np.ndarray:
        """values[s, u, m] of every measurement in MEASUREMENTS for each slot and UE column
        of ``rep`` (cell-level ones from the UE's serving cell), NaN where the UE is not
        served by this gNB."""
        cells = rep.ue_cell
        safe = np.where(cells >= 0, cells, 0)
        rows = np.arange(rep.n_slots)[:, None]
        served = (cells >= 0) & (self._gnb_of_cell[np.where(cells >= 0, cells, -1)] == self.gnb)
        m = np.empty((rep.n_slots, len(rep.ue_ids), len(MEASUREMENTS)))
        m[:, :, 0] = rep.prb_used_dl
        m[:, :, 1] = rep.prb_avail_dl[rows, safe]
        m[:, :, 2] = rep.active_ues_dl[rows, safe]
        m[:, :, 3] = np.where(rep.mcs_dl >= 0, rep.mcs_dl, np.nan)
        m[:, :, 4] = rep.bits_per_prb_dl
        m[:, :, 5] = rep.dl_buffer_bytes
        m[:, :, 6] = rep.dl_arrived_bytes
        m[:, :, 7] = rep.ue_thp_dl_kbps
        m[:, :, _COL[K.PRB_TOTAL_DL]] = self._prb_of_cell[safe]
        m[~served] = np.nan
        return m

    def on_report(self, report: KpmReport, now_us: int) -> None:
        kpm_subs = [s for s in self.subs.values() if s.kpm_actions]
        if not kpm_subs or self.conn is None:
            return
        m = self.slot_matrix(report)
        cellm = np.stack([report.prb_avail_dl, report.active_ues_dl], axis=2).astype(float)
        for sub in kpm_subs:
            sub.pending.append((report.start_slot, m, report.ue_cell, cellm))
            sub.pending_slots += report.n_slots
            while sub.pending_slots >= sub.period_slots:
                self._emit(sub, report.ue_ids)

    def _emit(self, sub: Subscription, amf_ids: list[int]) -> None:
        start = sub.pending[0][0]
        vals = np.concatenate([p[1] for p in sub.pending], axis=0)
        ue_cell = np.concatenate([p[2] for p in sub.pending], axis=0)
        cellm = np.concatenate([p[3] for p in sub.pending], axis=0)
        n = sub.period_slots
        rest = (vals[n:], ue_cell[n:], cellm[n:])
        vals, ue_cell, cellm = vals[:n], ue_cell[:n], cellm[:n]
        sub.pending = [(start + n, *rest)] if len(rest[0]) else []
        sub.pending_slots = len(rest[0])
        header = fastenc.encode_indication_header(
            ntp_timestamp(self.slot_to_unix(start)), self.kpm_version.timestamp_octets
        )
        for act in sub.kpm_actions:
            t0 = time.perf_counter()
            try:
                message = self._kpm_message(act, vals, ue_cell, cellm, amf_ids)
            except (E2smError, fastenc.Unsupported, ValueError) as e:
                log.warning("gNB %d: KPM indication not encodable: %s", self.gnb, e)
                continue
            self.stats.encode_seconds += time.perf_counter() - t0
            if message is None:
                continue  # no UE of this action at this gNB in the period
            self._send_indication(sub, act.action_id, header, message)
            self.stats.kpm_indications += 1

    def _send_indication(
        self, sub: Subscription, action_id: int, header: bytes, message: bytes
    ) -> None:
        """One RICindication of ``sub``, numbered by its own sequence (RICindicationSN)."""
        self._enqueue(self.indication_pdu(sub, action_id, header, message), droppable=True)

    def _granules(self, act: KpmAction, vals: np.ndarray) -> np.ndarray:
        """(slots, UEs, all measurements) -> (granules, UEs, all measurements), by the one
        aggregation the offline OCC source uses too (``e2sm.granules.aggregate_granules``)."""
        g = act.granularity_ms * 1000 // self.engine.slot_us
        return aggregate_granules(vals, g, MEASUREMENTS)

    def _kpm_message(
        self,
        act: KpmAction,
        vals: np.ndarray,
        ue_cell: np.ndarray,
        cellm: np.ndarray,
        amf_ids: list[int],
    ) -> bytes | None:
        if act.cell is not None:  # only the UEs while in that cell
            vals = np.where((ue_cell == act.cell)[:, :, None], vals, np.nan)
        srv = ~np.isnan(vals[:, :, _COL[K.PRB_USED_DL]])
        if act.style in (4, 5, 2):
            any_srv = srv.any(axis=0).tolist()
            cols = [
                j for j, a in enumerate(amf_ids)
                if any_srv[j] and (act.ue_filter is None or a in act.ue_filter)
            ]  # fmt: skip
            if not cols:
                return None
            g = self._granules(act, vals[:, cols, :])[:, :, act.cols]  # (gran, ue, meas)
            per_ue = np.ascontiguousarray(g.transpose(1, 0, 2))
            ues = [self.ue_id(self.engine.monitored[j]) for j in cols]
            if act.style == 2:
                recs = tuple(
                    kpm.MeasRecord(tuple(fastenc.record_value(x) for x in row)) for row in per_ue[0]
                )
                infos = tuple(kpm.MeasInfo(n) for n in act.measurements)
                f1 = kpm.IndicationFormat1(recs, infos, act.granularity_ms)
                return kpm.encode_kpm(kpm.KpmIndicationMessage(f1))
            assert act.encoder is not None
            try:
                return act.encoder.encode(ues, per_ue)
            except fastenc.Unsupported:
                self.stats.encode_fallbacks += 1
                return kpm.encode_kpm(act.encoder.records(ues, per_ue))
        # styles 1 and 3: node (or cell) level, aggregated over the UEs
        cell_vals = self._cell_level(act, vals, cellm)
        recs = tuple(
            kpm.MeasRecord(tuple(fastenc.record_value(x) for x in row)) for row in cell_vals
        )
        if act.style == 1:
            infos = tuple(kpm.MeasInfo(n) for n in act.measurements)
            f = kpm.IndicationFormat1(recs, infos, act.granularity_ms)
            return kpm.encode_kpm(kpm.KpmIndicationMessage(f))
        matched = tuple(
            self.ue_id(self.engine.monitored[j]) for j in range(len(amf_ids)) if srv[:, j].any()
        )
        conds = tuple(
            kpm.MeasCondUeId(c.meas, c.conditions, matched or None) for c in act.conditions
        )
        f2 = kpm.IndicationFormat2(recs, conds, act.granularity_ms)
        return kpm.encode_kpm(kpm.KpmIndicationMessage(f2))

    def _cell_level(self, act: KpmAction, vals: np.ndarray, cellm: np.ndarray) -> np.ndarray:
        """(granules, measurements) for the gNB (or one of its cells): UE-level counts and
        rates summed over the served UEs, MCS and bits per PRB averaged, idle PRBs, active
        UEs and the carriers' PRBs summed over the cells."""
        cells = self.cells if act.cell is None else [act.cell]
        cm = np.full((cellm.shape[0], 1, len(MEASUREMENTS)), np.nan)
        cm[:, 0, _COL[K.PRB_AVAIL_DL]] = cellm[:, cells, 0].sum(axis=1)
        cm[:, 0, _COL[K.ACTIVE_UES_DL]] = cellm[:, cells, 1].sum(axis=1)
        cm[:, 0, _COL[K.PRB_TOTAL_DL]] = self._prb_of_cell[cells].sum()
        g = self._granules(act, vals)
        gc = self._granules(act, cm)[:, 0, :]
        out = np.full((g.shape[0], len(MEASUREMENTS)), np.nan)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            for name in _UE_LEVEL:
                m = _COL[name]
                col = g[:, :, m]
                if name in (K.MCS_DL, K.BITS_PER_PRB_DL):
                    out[:, m] = np.nanmean(col, axis=1)
                else:
                    out[:, m] = np.where(np.isnan(col).all(axis=1), np.nan, np.nansum(col, axis=1))
        for name in _CELL_LEVEL:
            out[:, _COL[name]] = gc[:, _COL[name]]
        return out[:, act.cols]

    # --- RC: mobility reports (MobilitySink) --------------------------------------------

    def on_mobility(self, ev: MobilityEvent) -> None:
        rc_subs = [s for s in self.subs.values() if s.rc_action_id is not None]
        if not rc_subs or self.conn is None:
            return
        cell = ev.source_cell if ev.kind == "ho_start" else ev.target_cell
        if self.engine.cells[cell].gnb != self.gnb:
            return  # the other gNB reports it
        tgt = self.engine.cells[ev.target_cell]
        src = self.engine.cells[ev.source_cell]
        phase = 1 if ev.kind == "ho_start" else (3 if ev.failed else 2)
        params: tuple[rc.RanParam, ...] = (
            rc.RanParam(R.PARAM_RRC_STATE, rc.Element(0)),
            rc.RanParam(R.PARAM_NR_CELL, rc.Element(rc.Bits(self._nci(tgt.gnb, tgt.cell_id), 36))),
            rc.RanParam(R.PARAM_HO_PHASE, rc.Element(phase)),
            rc.RanParam(
                R.PARAM_SOURCE_CELL, rc.Element(rc.Bits(self._nci(src.gnb, src.cell_id), 36))
            ),
        )
        if ev.kind == "ho_end":  # the target gNB knows how long the UE was cut off
            params += (
                rc.RanParam(R.PARAM_INTERRUPTION_MS, rc.Element(ev.interruption_us // 1000)),
            )
        ue = self.ue_id(ev.ue)
        msg = rc.encode_rc(rc.RcIndicationMessage(ue_params=((ue, params),)))
        for sub in rc_subs:
            assert sub.rc_action_id is not None
            hdr = rc.encode_rc(rc.RcIndicationHeader(1, sub.rc_condition_id))
            self._send_indication(sub, sub.rc_action_id, hdr, msg)
            self.stats.rc_indications += 1

    def _nci(self, gnb: int, cell_id: int) -> int:
        return nr_cell_identity(self.gnb_id - self.gnb + gnb, cell_id)

    # --- RC control: action 100 configures the dropper ----------------------------------

    def _control(self, msg: e2ap.RicControlRequest) -> None:
        def fail(cause: Cause, why: str) -> None:
            self.stats.controls_failed += 1
            log.info("gNB %d: control failed: %s", self.gnb, why)
            self._send(e2ap.RicControlFailure(msg.request_id, msg.ran_function_id, cause))

        if msg.ran_function_id != rc.RAN_FUNCTION_ID:
            return fail(_CAUSE_BAD_FUNCTION, f"no control in RAN function {msg.ran_function_id}")
        try:
            hdr = rc.decode_rc(rc.RcControlHeader, msg.header)
            body = rc.decode_rc(rc.RcControlMessage, msg.message)
            if hdr.style != rc.CONTROL_STYLE_RADIO_BEARER or hdr.action_id != rc.OCTOPUS_ACTION_ID:
                return fail(_CAUSE_UNSUPPORTED, f"style {hdr.style} action {hdr.action_id}")
            adapt = rc.OctopusAdaptation.from_message(body)
        except (E2smError, ValueError) as e:
            return fail(_CAUSE_BAD_CONTROL, str(e))
        ue = None if hdr.ue_id.amf_ue_ngap_id is None else self._ue_of_amf(hdr.ue_id.amf_ue_ngap_id)
        if ue is None:
            return fail(_CAUSE_CONTROL_FAILED, f"unknown UE {hdr.ue_id.amf_ue_ngap_id}")
        u = self.engine.ues[ue]
        cur = u.cell if u.cell >= 0 else -1 - u.cell
        if self.engine.cells[cur].gnb != self.gnb:
            return fail(_CAUSE_CONTROL_FAILED, f"UE {hdr.ue_id.amf_ue_ngap_id} is at another gNB")
        if adapt.drb_id != OCTOPUS_DRB_ID:
            return fail(_CAUSE_CONTROL_FAILED, f"UE has no DRB {adapt.drb_id}")
        if adapt.enable and not adapt.protect_in_flight:
            # the queue never cuts a message it has started sending (no half messages)
            return fail(_CAUSE_UNSUPPORTED, "dropping a message in transmission is not supported")
        apply_adaptation(self.engine, ue, adapt)
        self.stats.controls_applied += 1
        if msg.ack_request != "noAck":
            values: tuple[tuple[int, rc.ParamValue], ...] = (
                (rc.PARAM_DRB_ID, adapt.drb_id), (rc.PARAM_ENABLE, adapt.enable),
            )  # fmt: skip
            d = u.queue.dropper
            if d is not None:  # the counters since the dropper was switched on
                st = d.stats
                values += (
                    (R.OUTCOME_DROPPED_PACKETS, st.dropped_packets),
                    (R.OUTCOME_DROPPED_BYTES, st.dropped_bytes),
                    (R.OUTCOME_DROPPED_MSGS_BY_MESSAGE, st.dropped_msgs_by_msg),
                    (R.OUTCOME_DROPPED_MSGS_BY_BITRATE, st.dropped_msgs_by_bitrate),
                )
            outcome = rc.encode_rc(rc.RcControlOutcome(values))
            self._send(
                e2ap.RicControlAcknowledge(msg.request_id, msg.ran_function_id, outcome=outcome)
            )
        return None

    def status(self) -> dict[str, Any]:
        return {
            "meid": self.meid,
            "gnb": self.gnb,
            "cells": self.cells,
            "connected": self.connected,
            "setup": self.setup_done.is_set(),
            "subscriptions": len(self.subs),
            "indications": self.stats.indications,
            "controls_applied": self.stats.controls_applied,
        }


def apply_adaptation(engine: Engine, ue: int, a: rc.OctopusAdaptation) -> None:
    """Action 100 on UE ``ue``'s DL queue: enable (a dropper with the given window and
    switches; kept as is when nothing changed) or disable (no dropper)."""
    q = engine.ues[ue].queue
    if not a.enable:
        q.dropper = None
        return
    cfg = DropperConfig(
        window_ms=float(a.bitrate_window_ms),
        drop_by_msg=a.drop_by_message,
        drop_by_bitrate=a.drop_by_bitrate,
        levels=a.priority_levels,
    )
    if q.dropper is not None and q.dropper.cfg == cfg:
        return
    q.dropper = OctopusDropper(engine.slot_us, cfg)


def _records(rows: np.ndarray) -> tuple[kpm.MeasRecord, ...]:
    """One MeasRecord per row (granule) of a (granules, measurements) array."""
    return tuple(kpm.MeasRecord(tuple(fastenc.record_value(x) for x in row)) for row in rows)


def _amf(ue: UeId) -> int:
    return -1 if ue.amf_ue_ngap_id is None else ue.amf_ue_ngap_id


__all__ = ["AgentStats", "E2Agent", "apply_adaptation", "nr_cell_identity"]
