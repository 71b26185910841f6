"""The OCC xApp: KPM indications in, per-UE available bandwidth out.

- subscribes every KPM node to report style 4 (every UE, granularity 1 ms, reporting period
  ``reporting_period_ms``) through the shared per-node manager (``base.node_subscriptions``:
  R-NIB discovery, submgr REST, resubscription); the measurements are the configured ones
  plus OCC.PrbTotalDl (the carrier's PRBs, the engine's P_total) when the node's KPM RAN
  function definition lists it;
- per KPM RIC_INDICATION (12050): columns -> ``OccEngine.ingest`` -> one OCTORIC_ABW_REPORT
  (30500) with every UE of the indication, and feedback datagrams to registered flows;
- OCTORIC_HO_EVENT (30501, from the handover xApp) -> ``OccEngine.on_handover``;
- REST on the HTTP port: ``/occ/v1/flows`` (register / list / delete senders),
  ``/occ/v1/ues``, ``/occ/v1/status``, ``/metrics``, health, submgr's subscription responses;
- SDL ``octoric.occ`` (see ``persist``): flows, UE records and engine checkpoints, so a
  restarted xApp sends feedback again before its first indication and resumes its estimates.

Threads: RMRXapp's dispatch thread runs the engine (indications, handovers, config changes);
HTTP threads, the feedback timer, the SDL writer and node discovery only touch the engine
through state snapshots (``latest``) under a lock.
"""

from __future__ import annotations

import bisect
import json
import logging
import math
import os
import threading
import time
import urllib.parse
import uuid
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import asdict, replace
from typing import Any

import orjson

from octoric import realtime
from octoric.contracts import message_types as mt
from octoric.contracts.ho_event import COMPLETE, HoEventError, parse_ho_event
from octoric.contracts.latency_trace import LatencyTrace, key_of
from octoric.e2sm import kpm
from octoric.e2sm.kpm_version import DEFAULT as DEFAULT_KPM_VERSION
from octoric.e2sm.kpm_version import KpmVersion
from octoric.xapps.base.config import controls_of, typed_controls
from octoric.xapps.base.discovery import E2Node
from octoric.xapps.base.errors import RestError
from octoric.xapps.base.http import Request, Response
from octoric.xapps.base.lifecycle import XappBase
from octoric.xapps.base.metrics import LatencyHistogram, RateMeter, StatsCollector
from octoric.xapps.base.node_subscriptions import NodeSub, NodeSubscriptions, Wanted
from octoric.xapps.base.sdl import SdlStore
from octoric.xapps.base.shell import MessageHandler, RmrMessage
from octoric.xapps.base.subscription import SubmgrClient, SubscriptionRequest
from octoric.xapps.occ import messages, native, persist, shards
from octoric.xapps.occ.batch import AbwBatch
from octoric.xapps.occ.config import OccConfig
from octoric.xapps.occ.degraded import STANDARD, DegradedInputs
from octoric.xapps.occ.engine import OccEngine
from octoric.xapps.occ.errors import OccInputError
from octoric.xapps.occ.feedback import FeedbackSender, UeTarget
from octoric.xapps.occ.flows import MAX_FLOWS, Flow, parse_flow
from octoric.xapps.occ.kpis import HELP as KPI_HELP
from octoric.xapps.occ.kpis import KpiExport
from octoric.xapps.occ.kpm_input import (
    SHOWN,
    EngineInput,
    IndicationError,
    engine_input,
    without_rows,
)
from octoric.xapps.occ.native import NativeEngine, NativeFeedback, NativeOcc
from octoric.xapps.occ.persist import UeRecord
from octoric.xapps.occ.resume import Resumed, fresh_records, resume_feedback
from octoric.xapps.occ.xapp_config import OccXappConfig

log = logging.getLogger("xapps.occ")
RIC_INDICATION = mt.RIC_INDICATION
NAME = "occ"
RX_MESSAGES = (mt.RIC_INDICATION, messages.HO_EVENT)
TX_MESSAGES = (messages.ABW_REPORT,)
NO_ROUTE_BACKOFF_S = 1.0  # a subscriber's new route is used within this
KPM = "kpm"  # the one kind of subscription OCC holds per node
# The SDL writer shares the GIL with the indication thread. It works in slices of tens of us
# (this many UE records, or checkpoint blobs) and sleeps between them, so an indication that
# arrives during a write waits one slice for the GIL, not the switch interval: loop bench
# 1x100@1ms (2026-11-27), the writer held the GIL for 0.7 ms every 100 ms and 4.5 ms every
# second, in 1-2 % of the indications' paths, the p99.
WRITER_SLICE_RECORDS = 8  # A/B 20 s runs: p99 0.92-1.23 ms at 8 (median 1.0), 1.08-1.25 at 25
WRITER_SLICE_BLOBS = 4
WRITER_PAUSE_S = 0.0002
# the native path's results reach the xApp's counters, records and KPIs this often
NATIVE_DRAIN_S = 0.02
# a replica: a UE its node reported without for this long has moved (_sweep_left)
LEFT_AFTER_MS = 200


def warm_up_kernel(config: OccConfig | None = None) -> None:
    """Load the compiled kernel now, not on the first indication (a warm spare does it
    before it waits: it needs no state)."""
    import numpy as np

    from octoric.xapps.occ.metrics import REQUIRED

    e = OccEngine(config or OccXappConfig().occ_config())
    one = np.ones((1, 2))
    e.ingest(np.array([0]), 1, {m: one for m in REQUIRED})


class OccXapp(XappBase):
    node_subs: NodeSubscriptions  # set in __init__: OCC subscribes to KPM on every node

    def __init__(
        self,
        rmr_port: int,
        http_port: int,
        host: str = "127.0.0.1",
        sdl: SdlStore | None = None,
        submgr: SubmgrClient | None = None,
        feedback: FeedbackSender | NativeFeedback | None = None,
        resumed: Resumed | None = None,
        native_path: bool | None = None,
    ) -> None:
        super().__init__(NAME, rmr_port, http_port, host, sdl, RX_MESSAGES, TX_MESSAGES)
        self.sdl = self.shell.sdl
        self.cfg = OccXappConfig()
        # the native hot path (issue #44, xapps/occ/native.py): one handle holds the engine
        # state and the feedback sender, and takes indications in RMR's receive thread.
        # ``native_path`` None: native when built and no sender is given (a caller's own
        # Python FeedbackSender keeps the Python path: tests); True: native when built, taking
        # over the given sender's flows (the process entry point resumes feedback with a light
        # Python sender first). OCTORIC_OCC_NATIVE=0 keeps the Python path.
        want = native_path if native_path is not None else feedback is None
        self.native: NativeOcc | None = None
        if isinstance(feedback, NativeFeedback):
            self.native = feedback.occ
        elif want and native.available():
            self.native = NativeOcc(self.cfg.occ_config(), SHOWN)
            nf = NativeFeedback(self.native)
            if isinstance(feedback, FeedbackSender):
                nf.adopt(feedback)
            feedback = nf
        self.engine = self._new_engine(self.cfg.occ_config())
        self.fp = persist.fingerprint(self.engine.config)
        self.feedback: FeedbackSender | NativeFeedback = feedback or FeedbackSender()
        self.feedback.lookup = self._target_of
        self.resumed = resumed  # what resume_feedback read before this object existed
        # the newest estimate per UE: indications leave their batch in _pending (per node,
        # newest last) and the records are built when something reads them (REST, the SDL
        # writer every state_period_ms, handovers), not 100 objects per indication
        self._latest: dict[int, UeRecord] = {}
        self._pending: dict[str, tuple[AbwBatch, list[str | None], float]] = {}
        self.counters: Counter[str] = Counter()
        # replicas (shards.py): this one's ID, the live set, the nodes it owns
        self.shard_id = shards.replica_id()
        self.members: shards.Membership | None = None
        sub_prefix = persist.SUB
        if self.shard_id is not None:
            ends = {"http": f"{host}:{http_port}", "rmr": f"{host}:{rmr_port}"}
            self.members = shards.Membership(self.sdl, self.shard_id, ends)
            sub_prefix = f"{persist.SUB}{self.shard_id}."  # each replica's own subscriptions
        self._engine_lock = threading.Lock()  # the Python path's engine vs a takeover's imports
        self.node_subs = NodeSubscriptions(
            self.shell, self._wants, submgr, self.counters, sdl_prefix=sub_prefix
        )
        self.rejected: Counter[str] = Counter()  # indications by reason
        # indications by RIC instance (RMR sub_id): what a gNB sent on each subscription can be
        # checked against what arrived, even for one held only briefly (octoric testbed live)
        self.by_instance: Counter[int] = Counter()
        self.unsupported: dict[str, tuple[str, ...]] = {}  # meid -> measurements it lacks
        self.unsupported_why: dict[str, str] = {}  # meid -> why it is not subscribed, said once
        self.degraded_nodes: dict[str, tuple[str, ...]] = {}  # the same, in degraded mode
        self.kpm_versions: dict[str, KpmVersion] = {}  # meid -> what its E2 Setup announced
        self._next_t0: dict[str, int] = {}  # meid -> end of its last report
        # benchmarks only (OCTORIC_LATENCY_TRACE): indication in, feedback sent
        self._trace_in, self._trace_out = LatencyTrace("occ_in"), LatencyTrace("occ_out")
        self.degraded = DegradedInputs(self.engine.config.dl_slots_per_ms)
        self.dropped_rows: Counter[str] = Counter()  # UE rows by reason
        # indications the native path left to the Python one, by why (native.py)
        self.native_declined: Counter[str] = Counter()
        self.ho_errors: Counter[str] = Counter()
        self.last_errors: deque[dict[str, Any]] = deque(maxlen=20)
        self.latency = LatencyHistogram()  # the loop: KPM indication in -> feedback out
        self.kpis = KpiExport(self.engine.config.prb_total_dl)
        self.rate = RateMeter()
        self.restored = {"flows": 0, "ues": 0, "checkpoints": 0}
        self.started_at = time.time()
        self._lock = threading.Lock()  # latest
        # GET /occ/v1/flows: (feedback.version, ids, each flow's JSON), sorted by id
        self._flows_rendered: tuple[int, list[str], list[str]] | None = None
        self._flow_json: dict[str, tuple[Flow, str]] = {}  # id -> the flow, its JSON
        self._dirty: set[int] = set()
        # the newest checkpoint not yet written: (UE ids, their state arrays, fingerprint)
        self._ckpt_out: tuple[list[int], dict[str, Any], str] | None = None
        self._sdl_delete: set[str] = set()
        self._last_ckpt = time.monotonic()
        self._no_route_until = 0.0  # reports are not built before this (monotonic)
        self._routes()
        self.shell.registry.register(
            StatsCollector("octoric_occ", self._stats, _LABELS, _HELP, levels=("subscriptions",))
        )

    def _new_engine(self, cfg: OccConfig) -> OccEngine | NativeEngine:
        if self.native is not None:
            return NativeEngine(self.native, cfg)
        return OccEngine(cfg)

    # --- configuration -------------------------------------------------------------------------
    def apply_config(self, descriptor: dict[str, Any]) -> None:
        """The descriptor's ``controls`` (raises XappConfigError, keeping the old config)."""
        new = typed_controls(OccXappConfig, controls_of(descriptor))
        if new == self.cfg and self.counters["config_loads"]:
            return
        old = self.cfg
        new_engine_cfg = new.occ_config()
        if new_engine_cfg != self.engine.config:
            # different parameters: fresh estimates (checkpoints of the old config are ignored)
            self.engine = self._new_engine(new_engine_cfg)
            self.degraded = DegradedInputs(new_engine_cfg.dl_slots_per_ms)
            self.kpis.prb_total = new_engine_cfg.prb_total_dl
            self.fp = persist.fingerprint(new_engine_cfg)
            self.counters["engine_resets"] += 1
        self.cfg = new
        self.feedback.set_policy(new.feedback_min_change, new.feedback_max_interval_ms / 1000.0)
        if self.native is not None:
            self.native.configure(new.granularity_ms, float(new.max_clock_ahead_ms),
                                  new.max_time_overlap_ms, new.publish_reports)  # fmt: skip
        self.node_subs.configure(new.nodes, new.discovery_period_s, new.subscription_timeout_s)
        if self.counters["config_loads"] and (
            (old.reporting_period_ms, old.measurements)
            != (new.reporting_period_ms, new.measurements)
        ):
            self.node_subs.resubscribe_all()
        self.counters["config_loads"] += 1
        log.info("configuration applied: %s", asdict(new))

    # --- start / stop ------------------------------------------------------------------------
    # --- the life cycle's hooks (XappBase owns start and stop) --------------------------------
    def handlers(self) -> dict[int, MessageHandler]:
        return {RIC_INDICATION: self.on_indication, messages.HO_EVENT: self.on_ho_event}

    def inline(self) -> tuple[int, ...]:
        # Both handlers run in RMR's receive thread (one thread hand-off less per indication;
        # both in one thread, so the engine sees them in order, as from one dispatch thread).
        # While one runs, RMR's ring holds what arrives and TCP pushes back to e2term.
        # OCTORIC_OCC_INLINE=0 puts them behind ricxappframe's queue (the A/B switch).
        if os.environ.get("OCTORIC_OCC_INLINE") == "0":
            return ()
        return (RIC_INDICATION, messages.HO_EVENT)

    def prepare(self) -> None:
        if not self.feedback.timer_running:
            self.feedback.start_timer(self._stop)
        warm_up_kernel(self.engine.config)  # compiled before the first indication needs it

    def workers(self) -> dict[str, Callable[[], None]]:
        w = {"sdl-writer": self._sdl_writer}
        if self.native is not None:
            w["native-drain"] = self._native_drain
        if self.members is not None:
            w["shards"] = self._shard_loop
        return w

    def announce(self) -> None:
        """With the native path: RMR's receive thread hands it the KPM indications from now
        on (what it declines still reaches ``on_indication``)."""
        if self.native is None or self.shell.xapp is None:
            return
        from ricxappframe.rmr.rmrclib.rmrclib import rmr_c_lib

        ctx = self.shell.xapp._mrc
        if self.native.attach(rmr_c_lib, ctx, RIC_INDICATION, messages.ABW_REPORT):
            log.info("native indication path on (OCTORIC_OCC_NATIVE=0 turns it off)")
        else:
            log.warning("the RMR library has no taps (not octoric's): Python indication path")

    def halt(self) -> None:
        if self.native is not None:
            self.native.detach()
        if self.members is not None:  # a planned stop: the others take over at once
            try:
                self.sdl.delete(f"{shards.MEMBER}{self.shard_id}")
            except Exception as e:
                log.warning("could not leave the replica set: %s", e)

    # --- replicas (shards.py) ------------------------------------------------------------------
    def _owns(self, meid: str) -> bool:
        """This replica owns node ``meid`` (always, unsharded)."""
        if self.members is None:
            return True
        view = self.members.view
        return view is not None and view.owns(meid)

    def _shard_loop(self) -> None:
        realtime.background_thread()
        last_gen: bytes | None = None
        while not self._stop.is_set():
            try:
                change = self.members.tick() if self.members is not None else None
                if change is not None:
                    self._on_view(*change)
                gen = self.sdl.get(shards.FLOWS_GEN)
                if gen != last_gen:
                    last_gen = gen
                    self._sync_flows()
            except Exception:  # SDL away for a moment: the next beat tries again
                self.counters["shard_errors"] += 1
                log.exception("replica set round failed")
            self._stop.wait(shards.HEARTBEAT_S)

    def _on_view(self, old: shards.View | None, new: shards.View) -> None:
        log.info("replica %s: live replicas %s", self.shard_id, ", ".join(new.live))
        self.counters["shard_changes"] += 1
        records: dict[str, list[UeRecord]] | None = None  # by node, read once per change
        for node in self.shell.rnib_nodes():
            was = old is not None and old.owns(node.meid)
            now = new.owns(node.meid)
            if now and not was:
                if records is None:
                    records = self._records_by_node()
                self._take_node(node.meid, records.get(node.meid, []))
            elif was and not now:
                self._release_node(node.meid)
        if old is not None:
            dead = set(old.live) - set(new.live)
            if dead and new.live[0] == self.shard_id:  # one replica cleans up after the dead
                for d in dead:
                    self._clear_subscriptions_of(d)
        self.node_subs.poke()

    def _records_by_node(self) -> dict[str, list[UeRecord]]:
        """The fresh UE records in the SDL, by node (one read for every node taken)."""
        records, _ = fresh_records(self.sdl, self.engine.config.expire_ms / 1000.0)
        out: dict[str, list[UeRecord]] = {}
        for rec in records.values():
            out.setdefault(rec.meid, []).append(rec)
        return out

    def _take_node(self, meid: str, recs: list[UeRecord]) -> None:
        """Node ``meid`` is ours now: its UEs (``recs``, their SDL records) resume from the
        SDL's engine checkpoints, and their flows hear the last target at once."""
        self.sdl.set_json(f"{shards.OWNER}{meid}", {"replica": self.shard_id, "at": time.time()})
        n_ckpt = 0
        for rec in recs:
            blob = self.sdl.get(f"{persist.CKPT}{rec.ue}")
            if blob is not None and self._import_checkpoint(rec.ue, blob):
                n_ckpt += 1
            with self._lock:
                self._materialize()
                self._latest[rec.ue] = rec
            self.feedback.update(rec.ue, UeTarget(rec.target_bps, rec.fallback, rec.guami,
                                                  rec.t_ms))  # fmt: skip
        self.counters["nodes_taken"] += 1
        self.counters["ues_taken"] += len(recs)
        self.counters["checkpoints_taken"] += n_ckpt
        log.info("node %s taken: %d UEs resumed (%d checkpoints)", meid, len(recs), n_ckpt)

    def _release_node(self, meid: str) -> None:
        """Node ``meid`` went to another replica: its UEs get no more feedback from here."""
        gone = self._release(lambda r: r.meid == meid)
        self.counters["nodes_released"] += 1
        log.info("node %s released (%d UEs)", meid, gone)

    def _release(self, which: Callable[[UeRecord], bool]) -> int:
        """Forget the records of the UEs ``which`` selects, and their flows' targets."""
        with self._lock:
            self._materialize()
            gone = [u for u, r in self._latest.items() if which(r)]
            for u in gone:
                del self._latest[u]
        for u in gone:
            self.feedback.forget(u)
        return len(gone)

    def _clear_subscriptions_of(self, replica: str) -> None:
        """A dead replica's subscriptions: deleted at submgr (its indications would go to an
        endpoint nobody reads) and in the SDL."""
        n = self.node_subs.delete_recorded(f"{persist.SUB}{replica}.", timeout_s=2.0)
        self.counters["dead_replica_subscriptions_deleted"] += n

    def _sync_flows(self) -> None:
        """The flows in the SDL (any replica may have registered or deleted one)."""
        stored = {}
        for d in self.sdl.find_json(persist.FLOW).values():
            try:
                f = Flow.from_json(d)
            except (TypeError, ValueError, KeyError):
                continue
            stored[f.id] = f
        have = set(self.feedback.flows)
        for fid in sorted(stored.keys() - have):
            self.feedback.add(stored[fid])
            self.counters["flows_synced_in"] += 1
        for fid in sorted(have - stored.keys()):
            self.feedback.remove(fid)
            self.counters["flows_synced_out"] += 1

    def _flows_changed(self) -> None:
        if self.members is not None:
            self.sdl.set_json(shards.FLOWS_GEN, uuid.uuid4().hex)

    # --- the native path's results ---------------------------------------------------------------
    def _native_drain(self) -> None:
        """Every ``NATIVE_DRAIN_S``: the native path's counters, latencies, each node's latest
        results (records, KPIs) into the xApp's own; the engine checkpoint when due."""
        realtime.background_thread()
        while not self._stop.wait(NATIVE_DRAIN_S):
            try:
                self.drain_native()
            except Exception:  # the drain must outlive any one bad read
                self.counters["native_drain_errors"] += 1
                log.exception("native drain failed")

    def drain_native(self) -> None:
        occ = self.native
        if occ is None:
            return
        taken, lat = occ.take()
        now = time.monotonic()
        for k in ("indications", "ue_samples", "time_overlap_shifted", "reports_sent",
                  "reports_unsent", "reports_skipped_no_route"):  # fmt: skip
            if taken[k]:
                self.counters[k] += taken[k]
        self.counters["native_indications"] += taken["indications"]
        self.counters["native_declined"] += taken["declined"]
        for why, n in taken["declined_by"].items():
            self.native_declined[why] += n
        self.counters["native_latency_dropped"] += taken["latency_dropped"]
        for inst, n in taken["by_instance"].items():
            self.by_instance[int(inst)] += n
        for v in (lat / 1e9).tolist():
            self.latency.observe(v)
        if taken["ue_samples"]:
            self.rate.add(now, taken["ue_samples"])
        for meid in taken["fresh"]:
            got = occ.latest(meid)
            if not self._owns(meid):  # a node just handed to another replica
                continue
            if got is None:
                continue
            g = got.batch.target_bps_granules.shape[1]
            inp = EngineInput(got.sn, kpm.RAN_FUNCTION_ID, got.t0_ms, got.batch.ue_ids,
                              got.guamis, got.metrics, g)  # fmt: skip
            self.kpis.note(meid, inp)
            with self._lock:
                self._pending.pop(meid, None)
                self._pending[meid] = (got.batch, got.guamis, got.at)
        if time.monotonic() - self._last_ckpt >= self.cfg.checkpoint_period_ms / 1000.0:
            self._snapshot_engine()

    def restore(self) -> None:
        """Flows and UE records (unless ``resume`` ran already), engine checkpoints. A replica
        restores the flows only: its nodes' UEs resume when it takes the nodes (_take_node)."""
        sharded = self.members is not None
        if self.resumed is None:
            self.resumed = resume_feedback(
                self.sdl, self.feedback, self.engine.config.expire_ms / 1000.0,
                targets=not sharded,
            )  # fmt: skip
        if sharded:
            self.restored["flows"] = self.resumed.flows
            log.info("restored from SDL: %s (UEs follow their nodes)", self.restored)
            return
        with self._lock:
            self._materialize()
            self._latest.update(self.resumed.records)
        self._sdl_delete.update(self.resumed.stale_keys)
        self.restored["flows"] = self.resumed.flows
        self.restored["ues"] = len(self.resumed.records)
        for key, blob in self.sdl.find(persist.CKPT).items():
            ue_s = key[len(persist.CKPT) :]
            done = self._import_checkpoint(int(ue_s), blob) if ue_s.isdigit() else None
            if done is None:
                self._sdl_delete.add(key)
            elif done:
                self.restored["checkpoints"] += 1
        log.info("restored from SDL: %s", self.restored)

    def _import_checkpoint(self, ue: int, blob: bytes) -> bool | None:
        """A UE's engine state from its SDL checkpoint: True imported, False refused by the
        engine (said in the log), None unreadable or of another configuration."""
        state = persist.unpack_state(blob, self.fp)
        if state is None:
            return None
        try:
            with self._engine_lock:
                self.engine.import_ue(ue, state)
        except OccInputError as e:
            log.warning("checkpoint of UE %d not restored: %s", ue, e)
            return False
        return True

    # --- RMR handlers (dispatch thread) ---------------------------------------------------------
    def _reject(self, reason: str, message: str, meid: str) -> None:
        self.rejected[reason] += 1
        self.last_errors.append(
            {"at": time.time(), "meid": meid, "reason": reason, "error": message}
        )
        if self.rejected[reason] in (1, 10, 100) or self.rejected[reason] % 1000 == 0:
            log.warning(
                "indication from %s rejected (%d so far): %s", meid, self.rejected[reason], message
            )

    def on_indication(self, msg: RmrMessage) -> None:
        t_start = time.perf_counter()
        t_in = time.monotonic_ns() if self._trace_in.enabled else 0
        self.counters["indications"] += 1
        self.by_instance[msg.sub_id] += 1
        try:
            version = self.kpm_versions.get(msg.meid)
            inp = engine_input(
                msg.payload,
                self.cfg.granularity_ms,
                self.degraded if self.cfg.degraded_mode else None,
                version,
                msg.meid,
            )
        except IndicationError as e:
            self._reject(e.reason, str(e), msg.meid)
            return
        if version is KpmVersion.V2_03:
            self._whole_second_start(msg.meid, inp)
        self._continue_small_overlap(msg.meid, inp)
        ahead_ms = inp.t0_ms + inp.n_granules * self.cfg.granularity_ms - time.time() * 1000.0
        if ahead_ms > self.cfg.max_clock_ahead_ms:
            # checked before the engine sees it: its per-UE "latest sample" never moves ahead
            self._reject("clock_ahead", f"time stamps {ahead_ms / 1000:.1f} s ahead", msg.meid)
            return
        with self._engine_lock:
            batch, used = self._ingest(inp, msg.meid)
        if batch is None or used is None:
            return
        # the senders first: they are what the loop is for (the report is for subscribers)
        self.feedback.update_batch(
            batch.ue_ids, batch.target_bps, batch.fallback, used.guamis, batch.t_ms
        )
        if t_in:  # both marks written after the sends: they cost the measured span nothing
            t_out = time.monotonic_ns()
            key = key_of(msg.payload)
            self._trace_in.mark(msg.payload, t_in, key)
            self._trace_out.mark(msg.payload, t_out, key)
        self.kpis.note(msg.meid, used)
        for reason, n in used.dropped.items():
            self.dropped_rows[reason] += n
        if used.no_value_filled:
            self.counters["no_value_filled"] += used.no_value_filled
        sent_at = time.time()
        with self._lock:
            self._pending.pop(msg.meid, None)  # re-inserted last: the dict is in time order
            self._pending[msg.meid] = (batch, used.guamis, sent_at)
        if self.cfg.publish_reports:
            self._report(batch, used, msg, sent_at)
        n = len(batch) * used.n_granules
        self.counters["ue_samples"] += n
        self.rate.add(time.monotonic(), n)
        self.latency.observe(time.perf_counter() - t_start)
        if time.monotonic() - self._last_ckpt >= self.cfg.checkpoint_period_ms / 1000.0:
            self._snapshot_engine()

    def _report(self, batch: AbwBatch, used: EngineInput, msg: RmrMessage, at: float) -> None:
        """One 30500 with every UE of the indication. While RMR has no route for it (nobody
        subscribed) reports are not built for ``NO_ROUTE_BACKOFF_S``, only counted."""
        now = time.monotonic()
        if now < self._no_route_until:
            self.counters["reports_skipped_no_route"] += 1
            return
        report = messages.abw_report(
            batch, msg.meid, msg.sub_id, used.sn, used.n_granules, used.guamis, at
        )
        # one-way publication: no transaction ID (ricxappframe would make a UUID per message)
        if self.shell.send(
            messages.ABW_REPORT, messages.encode(report), meid=msg.meid, retries=2, xact=False
        ):
            self.counters["reports_sent"] += 1
            return
        self.counters["reports_unsent"] += 1
        if self.shell.last_tx_failure == "no_route":
            self._no_route_until = now + NO_ROUTE_BACKOFF_S

    def _whole_second_start(self, meid: str, inp: EngineInput) -> None:
        """A KPM v02.03 time stamp has whole seconds only, so two reports within a second
        would start at the same ms. A report whose second holds the end of the node's previous
        report continues it (periodic reports do); others start on their second. A node that
        announces v02's OID but writes 8-octet stamps (srsRAN_Project) is untouched except at
        .000 starts, where continuing gives the same ms."""
        if inp.t0_ms % 1000 == 0:
            nxt = self.native.next_t0(meid) if self.native is not None else self._next_t0.get(meid)
            if nxt is not None and inp.t0_ms <= nxt < inp.t0_ms + 1000:
                inp.t0_ms = nxt

    def _continue_small_overlap(self, meid: str, inp: EngineInput) -> None:
        """A report starting at most ``max_time_overlap_ms`` before the end of the node's previous
        one continues it: the node's clock rounding, not data out of order, which the engine
        would reject whole (``time``) and lose its granules. Larger overlaps are left to it. The
        reports after a continued one are continued too until the node's stamps leave a gap."""
        if self.native is not None:
            span = inp.n_granules * self.cfg.granularity_ms
            inp.t0_ms, shifted = self.native.continue_(meid, inp.t0_ms, span)
            if shifted:
                self.counters["time_overlap_shifted"] += 1
            return
        nxt = self._next_t0.get(meid)
        if nxt is not None and 0 < nxt - inp.t0_ms <= self.cfg.max_time_overlap_ms:
            inp.t0_ms = nxt
            self.counters["time_overlap_shifted"] += 1
        self._next_t0[meid] = inp.t0_ms + inp.n_granules * self.cfg.granularity_ms

    def _ingest(self, inp: EngineInput, meid: str) -> tuple[AbwBatch | None, EngineInput | None]:
        """Ingest; rows the engine faults by UE are dropped and the rest retried once."""
        cur: EngineInput | None = inp
        for _ in range(2):
            assert cur is not None
            try:
                return self.engine.ingest(cur.ue_ids, cur.t0_ms, cur.metrics), cur
            except OccInputError as e:
                if not e.bad_ue_ids:
                    self._reject(e.reason, str(e), meid)
                    return None, None
                self.last_errors.append(
                    {"at": time.time(), "meid": meid, "reason": e.reason, "error": str(e),
                     "ues": list(e.bad_ue_ids)}
                )  # fmt: skip
                cur = without_rows(cur, e.bad_ue_ids, e.reason)
                if cur is None:
                    self._reject(e.reason, str(e), meid)
                    return None, None
        self._reject("internal", "rows still rejected after dropping the faulty ones", meid)
        return None, None

    def _materialize(self) -> None:
        """Turn the pending batches into UE records, oldest first (hold ``_lock``)."""
        if not self._pending:
            return
        names = messages.BOTTLENECK_NAMES
        pending, self._pending = self._pending, {}
        for meid, (batch, guamis, now) in pending.items():
            rows = zip(
                batch.ue_ids.tolist(), batch.target_bps.tolist(), batch.fallback.tolist(),
                batch.handover.tolist(), batch.bottleneck.tolist(), batch.cp_bps.tolist(),
                batch.frame_abw_bps.tolist(), batch.fair_share_bps.tolist(),
                batch.frame_interval_ms.tolist(), guamis, strict=True,
            )  # fmt: skip
            for ue, tgt, fb, ho, bn, cp, b, cf, d, guami in rows:
                self._latest[ue] = UeRecord(
                    ue, guami, meid, batch.t_ms, tgt, fb, ho, names.get(bn, "unknown"), cp, b,
                    cf, d, now,
                )  # fmt: skip
                self._dirty.add(ue)
        if self.members is not None:
            self._sweep_left({m: b.t_ms for m, (b, _, _) in pending.items()})

    def _sweep_left(self, newest: dict[str, int]) -> None:
        """A replica: UEs whose node reported without them for ``LEFT_AFTER_MS`` moved to
        another node, maybe another replica's; their feedback stops here (the node they are on
        now sends it). Unsharded, a UE that moves stays in this xApp. (Hold ``_lock``.)"""
        left = [
            u for u, r in self._latest.items()
            if (t := newest.get(r.meid)) is not None and t - r.t_ms >= LEFT_AFTER_MS
        ]  # fmt: skip
        for u in left:
            del self._latest[u]
            self.feedback.forget(u)
        self.counters["ues_left_node"] += len(left)

    @property
    def latest(self) -> dict[int, UeRecord]:
        """The newest record per UE (built from the pending batches on read)."""
        with self._lock:
            self._materialize()
            return self._latest

    def _target_of(self, ue: int) -> UeTarget | None:
        """The UE's current target, for a flow registered after its last indication."""
        with self._lock:
            self._materialize()
            r = self._latest.get(ue)
        return None if r is None else UeTarget(r.target_bps, r.fallback, r.guami, r.t_ms)

    def on_ho_event(self, msg: RmrMessage) -> None:
        try:
            ev = parse_ho_event(msg.payload)
        except HoEventError as e:
            self.ho_errors[e.reason] += 1
            self.last_errors.append(
                {"at": time.time(), "meid": msg.meid, "reason": f"ho_{e.reason}", "error": str(e)}
            )
            return
        self.counters[f"ho_{ev.event}"] += 1
        if ev.is_start or ev.is_end:  # a ping_pong follows its complete: nothing more to do
            self._handover(ev.ue, ev.is_start, ev.t_ms)
        if ev.event == COMPLETE and ev.target_meid and not self._owns(ev.target_meid):
            self._release_ue(ev.ue)  # its new node is another replica's

    def _release_ue(self, ue: int) -> None:
        self.counters["ues_handed_to_replica"] += self._release(lambda r: r.ue == ue)

    def _handover(self, ue: int, start: bool, t_ms: int | None) -> None:
        if self.members is not None and ue not in self.latest:
            self.counters["ho_events_not_owned"] += 1  # another replica's UE (all get a copy)
            return
        with self._engine_lock:
            self.engine.on_handover(ue, start, t_ms)
        latest = self.engine.latest(ue)
        if latest is None:
            return
        fallback = latest[1]
        with self._lock:
            self._materialize()
            rec = self._latest.get(ue)
            if rec is not None:
                rec = replace(rec, fallback=fallback, handover=start, updated_at=time.time())
                self._latest[ue] = rec
                self._dirty.add(ue)
        if rec is not None:
            self.feedback.update(ue, UeTarget(rec.target_bps, fallback, rec.guami, rec.t_ms))

    def _snapshot_engine(self) -> None:
        """Engine state of every UE -> the SDL writer; forget UEs the engine expired."""
        self._last_ckpt = time.monotonic()
        ues, states = self.engine.export_states()  # copies; packed by the SDL writer
        known = set(ues)
        horizon = time.time() - self.engine.config.expire_ms / 1000.0
        with self._lock:
            # no _materialize() (it runs on the indication thread here): a UE in a pending
            # batch was just ingested, so the engine knows it and it is not gone
            gone = [u for u, r in self._latest.items() if u not in known and r.updated_at < horizon]
            for u in gone:
                del self._latest[u]
                self._sdl_delete.update({f"{persist.UE}{u}", f"{persist.CKPT}{u}"})
            self._ckpt_out = (ues, states, self.fp)  # a newer one replaces one not written
        for u in gone:
            self.feedback.forget(u)
        self.counters["checkpoints"] += 1

    # --- SDL writer -------------------------------------------------------------------------------
    def checkpoint(self, pause_s: float = 0.0) -> None:
        """UE records, the newest checkpoint and deletions -> SDL. ``pause_s``: sleep between
        slices of the work (the writer thread; ``stop`` flushes at once)."""
        with self._lock:
            self._materialize()
            recs = [self._latest[u] for u in self._dirty if u in self._latest]
            self._dirty.clear()
            ckpt, self._ckpt_out = self._ckpt_out, None
            if self.members is not None:  # only what this replica owns: a node's new owner
                recs = [r for r in recs if self._owns(r.meid)]  # writes the others
                if ckpt is not None:
                    ues_c, states_c, fp_c = ckpt
                    mine = {u for u, r in self._latest.items() if self._owns(r.meid)}
                    keep = [i for i, u in enumerate(ues_c) if u in mine]
                    ckpt = ([ues_c[i] for i in keep], {k: v[keep] for k, v in states_c.items()},
                            fp_c)  # fmt: skip
            deletes, self._sdl_delete = self._sdl_delete, set()
        try:
            for at in range(0, len(recs), WRITER_SLICE_RECORDS):
                if at and pause_s:
                    time.sleep(pause_s)
                part = recs[at : at + WRITER_SLICE_RECORDS]
                self.sdl.set_many({f"{persist.UE}{r.ue}": _record_bytes(r.to_json()) for r in part})
            if ckpt is not None:
                ues, states, fp = ckpt
                for at in range(0, len(ues), WRITER_SLICE_BLOBS):
                    if pause_s:
                        time.sleep(pause_s)
                    blobs = {}
                    for i in range(at, min(at + WRITER_SLICE_BLOBS, len(ues))):
                        one = {k: v[i] for k, v in states.items()}
                        blobs[f"{persist.CKPT}{ues[i]}"] = persist.pack_state(one, fp)
                    self.sdl.set_many(blobs)
            self.sdl.delete(*deletes)
        except Exception as e:  # Redis down: keep running, retry the UE records next time
            self.counters["sdl_errors"] += 1
            log.warning("SDL write failed: %s", e)

    def _sdl_writer(self) -> None:
        realtime.background_thread()  # off the indication path: no SCHED_FIFO (realtime.py)
        while not self._stop.wait(self.cfg.state_period_ms / 1000.0):
            self.checkpoint(WRITER_PAUSE_S)

    # --- subscriptions (the shared per-node manager) ---------------------------------------------
    @property
    def subs(self) -> dict[str, NodeSub]:
        return self.node_subs.subs

    @property
    def submgr(self) -> SubmgrClient:
        return self.node_subs.submgr

    @submgr.setter
    def submgr(self, client: SubmgrClient) -> None:
        self.node_subs.submgr = client

    def kpm_measurements(
        self, offered: tuple[str, ...] = (), base: tuple[str, ...] | None = None
    ) -> tuple[str, ...]:
        """What to subscribe a node to: the configured measurements (or ``base``), plus the
        optional ones (OCC.PrbTotalDl) the node offers (``offered``: the names its KPM RAN
        function definition lists for our report style) and those do not name."""
        first = self.cfg.measurements if base is None else base
        extra = tuple(m for m in kpm.OCC_OPTIONAL_MEASUREMENTS if m in offered and m not in first)
        return first + extra

    def kpm_wanted(
        self, measurements: tuple[str, ...] | None = None, version: KpmVersion | None = None
    ) -> Wanted:
        """The KPM style-4 subscription with ``measurements`` (default: the configured ones),
        as the node's KPM ``version`` reads it (the same bytes in v02.03-v05.00)."""
        meas = self.cfg.measurements if measurements is None else measurements
        v = version or DEFAULT_KPM_VERSION
        trigger = kpm.encode_kpm(kpm.KpmEventTrigger(self.cfg.reporting_period_ms), v)
        action = kpm.encode_kpm(
            kpm.action_definition_style4(meas, granularity_ms=self.cfg.granularity_ms), v
        )
        return Wanted(KPM, kpm.RAN_FUNCTION_ID, trigger, action, meas)

    def subscription_request(
        self, meid: str, sid: str, measurements: tuple[str, ...] | None = None
    ) -> SubscriptionRequest:
        """The submgr request for a KPM subscription of ``meid``."""
        return self.node_subs.request(meid, sid, self.kpm_wanted(measurements))

    def _wants(self, node: E2Node) -> list[Wanted]:
        if not node.has_kpm() or not self._owns(node.meid):
            return []
        version = node.kpm_version or DEFAULT_KPM_VERSION
        if self.kpm_versions.get(node.meid) is not version:
            log.info("node %s announces E2SM-KPM %s", node.meid, version.label)
            self.kpm_versions[node.meid] = version
            if self.native is not None:  # whole-second stamps (_whole_second_start)
                self.native.set_whole_second(node.meid, version is KpmVersion.V2_03)
        style = self.cfg.report_style
        offered = node.kpm_measurements(style)
        # A node that lists its measurements and lacks some OCC needs (a stock srsRAN gNB has
        # no OCC.* vendor measurements) cannot serve OCC's subscription. With the standard
        # ones it gets the degraded mode (degraded.py); without, it is left alone. Either is
        # said once, instead of a subscription that fails and is asked again forever. So is a
        # node whose KPM definition was read and lists nothing in OCC's report style
        # (srsRAN's CU-CP: a KPM function without report styles, which refuses every
        # subscription). A node whose definition is not known is asked, as before.
        known = bool(offered) or node.kpm_offer_known()
        missing = tuple(m for m in self.cfg.measurements if known and m not in offered)
        if not missing:
            self.unsupported.pop(node.meid, None)
            self.unsupported_why.pop(node.meid, None)
            self.degraded_nodes.pop(node.meid, None)
            return [self.kpm_wanted(self.kpm_measurements(offered), version)]
        degraded = self.cfg.degraded_mode and all(m in offered for m in STANDARD)
        seen = self.degraded_nodes if degraded else self.unsupported
        if seen.get(node.meid) != missing:
            if offered:
                why = f"does not offer {', '.join(missing)} in KPM report style {style}"
            else:
                styles = ", ".join(str(s) for s in sorted({s for s, _ in node.kpm_styles}))
                lists = f"report styles {styles}" if styles else "no report style"
                why = (f"offers no KPM measurement in report style {style} (its KPM RAN "
                       f"function definition lists {lists})")  # fmt: skip
            if degraded:
                what = ("OCC runs in its degraded mode for it: R_mcs, N_user and arrivals "
                        "estimated from throughput and PRB usage")  # fmt: skip
            else:
                what = "OCC cannot estimate its UEs' bandwidth; not subscribing"
                self.unsupported_why[node.meid] = f"{why}; {what}"
            log.warning("node %s %s; %s", node.meid, why, what)
        seen[node.meid] = missing
        (self.unsupported if degraded else self.degraded_nodes).pop(node.meid, None)
        if not degraded:
            return []
        self.unsupported_why.pop(node.meid, None)
        return [self.kpm_wanted(self.kpm_measurements(offered, base=STANDARD), version)]

    # --- REST -----------------------------------------------------------------------------
    def _routes(self) -> None:
        h = self.shell.http
        h.add("GET", "/occ/v1/status", self._status)
        h.add(
            "GET", "/occ/v1/ues", lambda r: Response.json([x.to_json() for x in self.ue_records()])
        )
        h.add("GET", "/occ/v1/ues/{ue}", self._get_ue)
        h.add("GET", "/occ/v1/flows", self._list_flows)
        h.add("POST", "/occ/v1/flows", self._post_flow, auth=True)
        h.add("GET", "/occ/v1/flows/{id}", self._get_flow)
        h.add("DELETE", "/occ/v1/flows/{id}", self._delete_flow, auth=True)

    def ue_records(self) -> list[UeRecord]:
        with self._lock:
            self._materialize()
            return sorted(self._latest.values(), key=lambda r: r.ue)

    def flows(self) -> list[Flow]:
        return self.feedback.list_flows()

    def _list_flows(self, req: Request) -> Response:
        """Every flow by id, or a page: ``?limit=N`` (1..4096) from after ``?after=ID``; a
        ``Link: <...>; rel="next"`` header when more follow. The listing is kept rendered
        until a flow is added or removed, and then only that flow is encoded (a GET costs a
        copy, not 4096 encodes)."""
        limit_s = (req.query.get("limit") or [str(MAX_FLOWS)])[-1]
        afters = req.query.get("after")
        after = afters[-1] if afters else None
        if not limit_s.isdigit() or not 1 <= int(limit_s) <= MAX_FLOWS:
            raise RestError(400, "bad_limit", f"limit must be 1..{MAX_FLOWS}, got {limit_s!r}")
        limit = int(limit_s)
        version = self.feedback.version
        cached = self._flows_rendered
        if cached is None or cached[0] != version:
            # a flow is immutable: one added or removed re-renders none of the others
            flows, memo = self.flows(), self._flow_json
            self._flow_json = {
                f.id: (f, hit[1] if (hit := memo.get(f.id)) and hit[0] is f
                       else json.dumps(f.to_json()))
                for f in flows
            }  # fmt: skip
            cached = (version, [f.id for f in flows], [self._flow_json[f.id][1] for f in flows])
            self._flows_rendered = cached
        _, ids, rendered = cached
        start = 0 if after is None else bisect.bisect_right(ids, after)
        page = rendered[start : start + limit]
        resp = Response(200, ("[" + ", ".join(page) + "]").encode(), "application/json")
        if start + limit < len(ids):
            nxt = urllib.parse.quote(ids[start + limit - 1], safe="")
            resp.headers = {"Link": f'</occ/v1/flows?limit={limit}&after={nxt}>; rel="next"'}
        return resp

    def _get_ue(self, req: Request) -> Response:
        ue_s = req.params["ue"]
        if not ue_s.isdigit():
            raise RestError(400, "bad_ue", f"UE id must be a UE key (an integer), got {ue_s!r}")
        with self._lock:
            self._materialize()
            rec = self._latest.get(int(ue_s))
        if rec is None:
            raise RestError(404, "unknown_ue", f"no estimate for UE {ue_s}")
        return Response.json(rec.to_json())

    def _post_flow(self, req: Request) -> Response:
        flow = parse_flow(req.json())
        if flow.id in self.feedback.flows:
            raise RestError(409, "flow_exists", f"flow {flow.id} exists; DELETE it first")
        if len(self.feedback.flows) >= MAX_FLOWS:
            self.counters["flows_refused_too_many"] += 1
            raise RestError(409, "too_many", f"at most {MAX_FLOWS} flows; DELETE unused ones")
        try:  # persisted first: a flow the SDL does not hold would not survive a restart
            self.sdl.set_json(f"{persist.FLOW}{flow.id}", flow.to_json())
        except Exception as e:
            raise RestError(503, "sdl_unavailable", f"cannot store the flow: {e}") from None
        self.feedback.add(flow)
        self._flows_changed()
        self.counters["flows_registered"] += 1
        return Response.json(flow.to_json(), 201)

    def _get_flow(self, req: Request) -> Response:
        flow = self.feedback.flows.get(req.params["id"])
        if flow is None:
            raise RestError(404, "unknown_flow", f"no flow {req.params['id']}")
        return Response.json(flow.to_json())

    def _delete_flow(self, req: Request) -> Response:
        flow = self.feedback.remove(req.params["id"])
        if flow is None:
            raise RestError(404, "unknown_flow", f"no flow {req.params['id']}")
        try:
            self.sdl.delete(f"{persist.FLOW}{flow.id}")
        except Exception as e:  # removed here; the SDL copy would come back after a restart
            self.counters["sdl_errors"] += 1
            log.warning("flow %s removed but not from the SDL: %s", flow.id, e)
        self._flows_changed()
        self.counters["flows_deleted"] += 1
        return Response(204)

    def status(self) -> dict[str, Any]:
        subs = self.node_subs.snapshot()
        return {
            "xapp": NAME,
            "uptime_s": round(time.time() - self.started_at, 3),
            "ues": [r.to_json() for r in self.ue_records()],
            "subscriptions": subs,
            # copies first: discovery's thread may change them while HTTP reads
            "unsupported_nodes": {m: list(v) for m, v in dict(self.unsupported).items()},
            "unsupported_reasons": dict(self.unsupported_why),
            "degraded_nodes": {m: list(v) for m, v in dict(self.degraded_nodes).items()},
            "kpm_versions": {m: v.label for m, v in dict(self.kpm_versions).items()},
            "flows": len(self.feedback.flows),
            "restored": self.restored,
            "counters": dict(self.counters),
            "rejected_indications": dict(self.rejected),
            "indications_by_instance": {str(k): n for k, n in dict(self.by_instance).items()},
            "dropped_ue_rows": dict(self.dropped_rows),
            "native_path": self.native is not None,
            "native_declined": dict(self.native_declined),
            "ho_event_errors": dict(self.ho_errors),
            "rest_errors": dict(self.shell.http.counters.errors),
            "feedback": dict(self.feedback.counters),
            "overloaded": self.shell.overloaded(),  # first: it reads RMR's ring drops
            "rmr": dict(self.shell.rmr_counters),
            "config_errors": self.shell.config_errors,
            "last_config_error": self.shell.last_config_error,
            "last_errors": list(self.last_errors),
            "ue_samples_per_s": round(self.rate.rate(time.monotonic()), 1),
            "latency_ms": {
                q: None if (v := self.latency.quantile(float(q))) is None else round(v * 1e3, 3)
                for q in ("0.5", "0.99")
            },
            "config": asdict(self.cfg),
            "shard": self._shard_status(),
        }

    def _shard_status(self) -> dict[str, Any] | None:
        if self.members is None:
            return None
        view = self.members.view
        nodes = sorted(n.meid for n in self.shell.rnib_nodes()) if self.shell.xapp else []
        return {
            "replica": self.shard_id,
            "live": list(view.live) if view else [],
            "owned_nodes": [m for m in nodes if view is not None and view.owns(m)],
        }

    def _status(self, req: Request) -> Response:
        return Response.json(self.status())

    def _stats(self) -> dict[str, Any]:
        now = time.monotonic()
        subs = self.node_subs.states()
        self.shell.ring_drops()  # RMR's ring drops into rmr_counters before they are read
        return {
            "indications_total": self.counters["indications"],
            "ue_samples_total": self.counters["ue_samples"],
            "ue_samples_per_second": self.rate.rate(now),
            "processing_latency_seconds": self.latency,
            "ues": len(self.latest),
            "engine_ues": len(self.engine.ue_ids),
            "flows": len(self.feedback.flows),
            "reports_sent_total": self.counters["reports_sent"],
            "reports_unsent_total": self.counters["reports_unsent"],
            "rejected_indications": self.rejected,
            "dropped_ue_rows": self.dropped_rows,
            "mcs_carried_total": self.engine.stats.mcs_carried,
            "ho_event_errors": self.ho_errors,
            "rest_errors": self.shell.http.counters.errors,
            "feedback": Counter(self.feedback.counters),
            "rmr": Counter(self.shell.rmr_counters),
            "subscriptions": subs,
            "config_errors_total": self.shell.config_errors,
            **self.kpis.series(self.ue_records()),
        }


_FLOATS = ("target_bps", "cp_bps", "frame_abw_bps", "fair_share_bps", "updated_at")


def _record_bytes(rec: dict[str, Any]) -> bytes:
    """A UE record as the SDL stores it: what ``json.dumps`` reads back the same, written by
    orjson (~15x faster; ~1000 records every ``state_period_ms`` at 10 nodes x 100 UEs).
    orjson writes NaN and infinities as null, so such a record goes through ``json``."""
    if all(math.isfinite(rec[k]) for k in _FLOATS):
        return orjson.dumps(rec)
    return json.dumps(rec).encode()


_LABELS = {
    "rejected_indications": "reason",
    "dropped_ue_rows": "reason",
    "ho_event_errors": "reason",
    "rest_errors": "reason",
    "subscriptions": "state",
}
_HELP = {
    "indications_total": "KPM indications (RMR 12050) received from the E2 nodes",
    "ue_samples_total": "UE x 1 ms samples the engine processed",
    "ue_samples_per_second": "UE x 1 ms samples processed per second (last 10 s)",
    "mcs_carried_total": "UE rows of an indication without an MCS (no PDSCH in it) that took "
    "the UE's last reported one",
    "processing_latency_seconds": "OCC's loop latency per indication: KPM indication in -> "
    "feedback sent and ABW report out (the 1 ms target)",
    "ues": "UEs with an estimate",
    "engine_ues": "UEs the engine holds state for",
    "flows": "senders registered for feedback",
    "reports_sent_total": "ABW reports (RMR 30500) sent to subscribers",
    "reports_unsent_total": "ABW reports that could not be sent (no route or peer)",
    "rejected_indications": "indications rejected, by reason",
    "dropped_ue_rows": "UE rows dropped from otherwise valid indications, by reason",
    "ho_event_errors": "handover events (RMR 30501) refused, by reason",
    "rest_errors": "REST requests answered with an error, by reason",
    "feedback": "feedback datagrams to registered senders, by outcome",
    "rmr": "RMR messages by direction, type and outcome (rx_*, tx_*, shed, refused)",
    "subscriptions": "KPM subscriptions held now, by state",
    "config_errors_total": "descriptor edits refused (the previous configuration stays)",
    **KPI_HELP,
}
