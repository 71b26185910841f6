"""The handover xApp, first step: E2SM-RC REPORT style 4 in, OCTORIC_HO_EVENT (30501) out.

- subscribes every node that offers E2SM-RC (RAN function 3) to RC REPORT style 4 (UE
  information, octoric's handover phase), through the shared per-node manager
  (``base.node_subscriptions``: R-NIB discovery, submgr REST, resubscription, SDL records);
- per RC RIC_INDICATION (12050): ``rc_input.ue_infos`` -> ``Detector.on_report`` -> one 30501
  per event, sent by route table (the RIC routes 30501 to every xApp whose descriptor lists it
  in ``rxMessages``: OCC, researchers' xApps);
- REST on the HTTP port: ``/handover/v1/status``, ``/metrics``, health, submgr's subscription
  responses; SDL ``octoric.handover``: the subscription records.

Threads: RMRXapp's dispatch thread runs the detector; HTTP threads read it under a lock.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

from octoric.contracts import ho_event
from octoric.contracts import message_types as mt
from octoric.contracts.ho_event import HoEvent
from octoric.contracts.latency_trace import LatencyTrace
from octoric.e2sm import kpm, rc
from octoric.e2sm.envelope import decode_ric_indication
from octoric.e2sm.errors import E2smDecodeError, E2smError
from octoric.e2sm.rc_fast import RcIndicationDecoder
from octoric.xapps.base.config import controls_of, typed_controls
from octoric.xapps.base.discovery import E2Node
from octoric.xapps.base.http import Request, Response
from octoric.xapps.base.lifecycle import XappBase
from octoric.xapps.base.metrics import LatencyHistogram, StatsCollector
from octoric.xapps.base.node_subscriptions import NodeSub, NodeSubscriptions, Wanted
from octoric.xapps.base.sdl import SdlStore
from octoric.xapps.base.shell import MessageHandler, RmrMessage
from octoric.xapps.base.subscription import SubmgrClient
from octoric.xapps.handover import kpm_input, rc_input
from octoric.xapps.handover.detector import Detector
from octoric.xapps.handover.notify import Notifier
from octoric.xapps.handover.notify.webhooks import DeliveryConfig
from octoric.xapps.handover.xapp_config import HandoverXappConfig

log = logging.getLogger("xapps.handover")
NAME = "handover"
RC, KPM = "rc", "kpm"  # the kinds of subscription it holds: one per node, RC or else KPM
SUB = "sub."  # SDL keys of the subscription records
UE = "ue."  # SDL keys of the detector's UE tracks: ue.<AMF-UE-NGAP-ID>.<GUAMI>
PERSIST_EVERY_S = 0.5
RX_MESSAGES = (mt.RIC_INDICATION,)
TX_MESSAGES = (mt.OCTORIC_HO_EVENT,)
EXPIRE_EVERY_S = 1.0
# A node that refused RC REPORT (srsRAN's DU offers E2SM-RC for control only) is followed by
# KPM; after this long RC is asked again (the node may have been upgraded meanwhile).
RC_RETRY_S = 600.0


def unix_ms() -> int:
    return time.time_ns() // 1_000_000


class HandoverXapp(XappBase):
    node_subs: NodeSubscriptions  # set in __init__: RC (or KPM) on every node

    def __init__(
        self,
        rmr_port: int,
        http_port: int,
        host: str = "127.0.0.1",
        sdl: SdlStore | None = None,
        submgr: SubmgrClient | None = None,
        clock: Callable[[], int] = unix_ms,
    ) -> None:
        super().__init__(NAME, rmr_port, http_port, host, sdl, RX_MESSAGES, TX_MESSAGES)
        self.cfg = HandoverXappConfig()
        self.detector = Detector(clock)
        self.counters: Counter[str] = Counter()
        self.rejected: Counter[str] = Counter()  # indications by reason
        self.rc_decoder = RcIndicationDecoder()
        self._trace_in = LatencyTrace("handover_in")
        self._trace = LatencyTrace("handover_out")  # benchmarks only (OCTORIC_LATENCY_TRACE)
        self.events: Counter[str] = Counter()  # published or not, by kind
        self.by_path: Counter[str] = Counter()  # handovers (starts) by detection path
        self.rc_refused: dict[str, float] = {}  # meid -> when it refused RC REPORT (monotonic)
        self.last_errors: deque[dict[str, Any]] = deque(maxlen=20)
        self.recent: deque[dict[str, Any]] = deque(maxlen=50)  # the latest events
        self.latency = LatencyHistogram()  # indication in -> 30501 sent (the 2 ms target)
        self.started_at = time.time()
        self.node_subs = NodeSubscriptions(
            self.shell, self._wants, submgr, self.counters, sdl_prefix=SUB
        )
        self._lock = threading.Lock()  # detector, recent
        # 30501s that found no route yet (the receivers register a few seconds after start):
        # (first try, monotonic s; payload; meid), resent in order
        self._unsent: deque[tuple[float, bytes, str]] = deque(maxlen=1000)
        self._send_lock = threading.Lock()
        self._last_expire = time.monotonic()
        self.shell.http.add("GET", "/handover/v1/status", lambda r: Response.json(self.status()))
        self.shell.http.add("GET", "/handover/v1/ues", self._ues)
        self.notify = Notifier(self.shell.sdl)  # webhooks and the event stream
        self.notify.routes(self.shell.http)
        self.shell.registry.register(
            StatsCollector(
                "octoric_handover", self._stats, _LABELS, _HELP, levels=("subscriptions",)
            )
        )

    @property
    def subs(self) -> dict[str, NodeSub]:
        return self.node_subs.subs

    # --- configuration -------------------------------------------------------------------------
    def apply_config(self, descriptor: dict[str, Any]) -> None:
        """The descriptor's ``controls`` (raises XappConfigError, keeping the old config)."""
        new = typed_controls(HandoverXappConfig, controls_of(descriptor))
        self.cfg = new
        self.detector.forget_ms = int(new.forget_s * 1000)
        self.detector.max_handover_ms = int(new.max_handover_s * 1000)
        self.detector.ping_pong_ms = int(new.ping_pong_s * 1000)
        self.notify.configure(
            DeliveryConfig(new.webhook_timeout_s, new.webhook_max_retries,
                           expire_after_s=new.webhook_expire_after_s, allow=new.webhook_allow)
        )  # fmt: skip
        self.node_subs.configure(new.nodes, new.discovery_period_s, new.subscription_timeout_s)
        self.counters["config_loads"] += 1
        log.info("configuration applied: %s", asdict(new))

    # --- the life cycle's hooks (XappBase owns start and stop) --------------------------------
    def handlers(self) -> dict[int, MessageHandler]:
        return {mt.RIC_INDICATION: self.on_indication}

    def inline(self) -> tuple[int, ...]:
        return (mt.RIC_INDICATION,)  # detection in RMR's receive thread: the 2 ms budget

    def workers(self) -> dict[str, Callable[[], None]]:
        return {"resend": self._resender, "checkpoint": self._checkpointer}

    def halt(self) -> None:
        self.notify.stop()

    # --- state in SDL -------------------------------------------------------------------------
    def restore(self) -> None:
        """The UE tracks and the webhooks a previous run of the xApp kept (after a crash or
        kill -9): a handover that started before completes with the source it started from."""
        self._restore_tracks()
        self.notify.restore()

    def _restore_tracks(self) -> None:
        try:
            saved = self.shell.sdl.find_json(UE)
        except Exception as e:  # SDL down at start: begin empty, counted
            self.counters["sdl_errors"] += 1
            log.warning("cannot read the UE tracks from SDL: %s", e)
            return
        with self._lock:
            n = self.detector.restore(saved.values())
        if n:
            log.info("restored %d UE tracks from SDL", n)

    def checkpoint(self) -> None:
        """Write the tracks changed since the last call (and delete forgotten ones)."""
        with self._lock:  # held for copies only: the dispatch thread waits on this lock
            tracks, gone = self.detector.take_changes()
        if not tracks and not gone:
            return
        changed = [asdict(t) for t in tracks]
        try:
            if changed:
                self.shell.sdl.set_many_json({f"{UE}{d['ue']}.{d['guami']}": d for d in changed})
            if gone:
                self.shell.sdl.delete(*(f"{UE}{ue}.{guami}" for ue, guami in gone))
            self.counters["tracks_persisted"] += len(changed)
        except Exception as e:  # Redis away: keep them for the next try
            self.counters["sdl_errors"] += 1
            log.warning("cannot persist %d UE tracks: %s", len(changed), e)
            with self._lock:
                self.detector.touched.update((d["ue"], d["guami"]) for d in changed)
                self.detector.forgotten.update(gone)

    def _checkpointer(self) -> None:
        while not self._stop.wait(PERSIST_EVERY_S):
            self.checkpoint()

    # --- subscriptions ---------------------------------------------------------------------
    @staticmethod
    def rc_wanted() -> Wanted:
        return Wanted(
            RC, rc.RAN_FUNCTION_ID, rc_input.event_trigger(), rc_input.action_definition()
        )

    def kpm_wanted(self) -> Wanted:
        return Wanted(
            KPM, kpm.RAN_FUNCTION_ID, kpm_input.event_trigger(self.cfg.kpm_period_ms),
            kpm_input.action_definition(self.cfg.kpm_granularity_ms), (kpm_input.MEASUREMENT,),
        )  # fmt: skip

    def _wants(self, node: E2Node) -> list[Wanted]:
        """RC REPORT where the node offers E2SM-RC (unless ``detection`` is kpm), else UE-level
        KPM where it offers E2SM-KPM (unless ``detection`` is rc)."""
        how = self.cfg.detection
        # a node whose RC definition lists no REPORT style 4 (srsRAN's DU: RC for control) is
        # not asked for it; one whose definition is not known is asked, and KPM follows it
        # after a refusal
        offers = node.rc_report_styles
        if (
            how != KPM
            and node.has_function(rc.OID, rc.RAN_FUNCTION_ID)
            and (offers is None or rc.REPORT_STYLE_UE_INFORMATION in offers or how == RC)
        ):
            if how != RC and node.has_kpm() and self._rc_refused(node.meid):
                return [self.kpm_wanted()]
            return [self.rc_wanted()]
        if how != RC and node.has_kpm():
            return [self.kpm_wanted()]
        return []

    def _rc_refused(self, meid: str) -> bool:
        """With ``detection: auto``: did ``meid`` refuse RC REPORT lately? A node answers a
        subscription it cannot serve with a failure and a cause (not a timeout); then KPM
        follows its UEs, for ``RC_RETRY_S``, instead of asking for RC again and again."""
        sub = self.node_subs.get(meid, RC)
        now = time.monotonic()
        error = sub.error if sub is not None and sub.state == "failed" else ""
        last = self.rc_refused.get(meid)
        if error and (last is None or now - last >= RC_RETRY_S):
            self.counters["rc_refused_kpm_instead"] += 1
            log.warning("%s refused RC REPORT (%s): following its UEs by KPM for %.0f s",
                        meid, error, RC_RETRY_S)  # fmt: skip
            self.rc_refused[meid] = now
        t = self.rc_refused.get(meid)
        return t is not None and now - t < RC_RETRY_S

    # --- RMR (dispatch thread) ---------------------------------------------------------------
    def _reject(self, reason: str, message: str, meid: str) -> None:
        self.rejected[reason] += 1
        self.last_errors.append({"at": time.time(), "meid": meid, "reason": reason,
                                 "error": message})  # fmt: skip
        if self.rejected[reason] in (1, 10, 100) or self.rejected[reason] % 1000 == 0:
            log.warning("indication from %s rejected (%d so far): %s", meid,
                        self.rejected[reason], message)  # fmt: skip

    def on_indication(self, msg: RmrMessage) -> None:
        t_in = time.perf_counter()
        if self._trace_in.enabled:
            self._trace_in.mark(msg.payload)
        self.counters["indications"] += 1
        try:
            ind = decode_ric_indication(msg.payload)  # the envelope read directly: ~10 us
        except E2smDecodeError as e:
            reason = "not_indication" if "expected a RICindication" in str(e) else "undecodable"
            self._reject(reason, str(e), msg.meid)
            return
        except E2smError as e:
            self._reject("undecodable", str(e), msg.meid)
            return
        try:
            if ind.ran_function_id == rc.RAN_FUNCTION_ID:
                infos = rc_input.ue_infos(ind, msg.meid, self.rc_decoder)
                with self._lock:
                    events = self.detector.on_report(infos)
            elif ind.ran_function_id == kpm.RAN_FUNCTION_ID:
                seen = kpm_input.sightings(ind, msg.meid, self.cfg.kpm_granularity_ms)
                with self._lock:
                    events = self.detector.on_sighting(seen)
            else:
                self._reject("ran_function", f"RAN function {ind.ran_function_id}", msg.meid)
                return
        except (rc_input.RcInputError, kpm_input.KpmInputError) as e:
            self._reject(e.reason, str(e), msg.meid)
            return
        with self._lock:
            if time.monotonic() - self._last_expire >= EXPIRE_EVERY_S:
                self._last_expire = time.monotonic()
                self.detector.expire()
        sent = True
        bodies = []
        for ev in events:
            body, ok = self._publish_rmr(ev, msg.meid)
            bodies.append(body)
            sent = ok and sent
        if events and sent and self._trace.enabled:
            self._trace.mark(msg.payload)
        # webhooks and the stream after every RMR send: a pipe write to the webhook worker
        # (~100 us) would otherwise sit in RMR subscribers' detection latency
        for body in bodies:
            self.notify.offer(body)
        if events:
            self.latency.observe(time.perf_counter() - t_in)
            self.by_path.update(ev.path or "rc" for ev in events if ev.is_start)
            self._log_events(events)

    def _log_events(self, events: list[HoEvent]) -> None:
        """Append to ``event_log`` (a run's record of what was detected); a failure is
        counted and logged once, never raised into detection."""
        path = self.cfg.event_log
        if not path:
            return
        try:
            with open(path, "a", encoding="utf-8") as f:
                f.writelines(json.dumps(e.to_json(), separators=(",", ":")) + "\n" for e in events)
        except OSError as e:
            self.counters["event_log_errors"] += 1
            if self.counters["event_log_errors"] == 1:
                log.warning("cannot append to the event log %s: %s", path, e)

    def publish(self, ev: HoEvent, meid: str) -> bool:
        """One 30501, after any still unsent (order kept). One that finds no route or peer is
        counted and tried again for ``event_retry_s`` (receivers join a few seconds after the
        xApp starts), then dropped; never raised. True if it (and all before it) went out."""
        body, sent = self._publish_rmr(ev, meid)
        self.notify.offer(body)
        return sent

    def _publish_rmr(self, ev: HoEvent, meid: str) -> tuple[dict[str, Any], bool]:
        """The RMR half of ``publish``: the event's JSON body and whether it went out."""
        body = ev.to_json()
        with self._lock:
            self.recent.append(body)
        self.events[ev.event] += 1
        if not self.cfg.publish_events:
            return body, False
        payload = json.dumps(body, separators=(",", ":")).encode()
        with self._send_lock:
            if len(self._unsent) == self._unsent.maxlen:
                self.counters["events_dropped"] += 1
            self._unsent.append((time.monotonic(), payload, meid))
            return body, self._send_unsent()

    def _send_unsent(self) -> bool:
        """Send the queue in order (caller holds ``_send_lock``); True once it is empty."""
        while self._unsent:
            first, payload, meid = self._unsent[0]
            if time.monotonic() - first > self.cfg.event_retry_s:
                self._unsent.popleft()
                self.counters["events_dropped"] += 1
                continue
            if not self.shell.send(mt.OCTORIC_HO_EVENT, payload, meid=meid, retries=2, xact=False):
                self.counters["events_unsent"] += 1  # send attempts that failed
                return False
            self._unsent.popleft()
            self.counters["events_sent"] += 1
        return True

    def _resender(self) -> None:
        while not self._stop.wait(0.05):
            if self._unsent:
                with self._send_lock:
                    self._send_unsent()

    # --- REST --------------------------------------------------------------------------------
    def _ues(self, req: Request) -> Response:
        with self._lock:
            tracks = [asdict(t) for t in self.detector.tracks.values()]
        return Response.json(sorted(tracks, key=lambda t: (t["ue"], t["guami"] or "")))

    def status(self) -> dict[str, Any]:
        with self._lock:
            in_ho = [asdict(t) for t in self.detector.in_handover()]
            detector = dict(self.detector.counters)
            recent = list(self.recent)
            ues = len(self.detector.tracks)
        return {
            "xapp": NAME,
            "uptime_s": round(time.time() - self.started_at, 3),
            "subscriptions": self.node_subs.snapshot(),
            "counters": dict(self.counters),
            "ho_events": dict(self.events),
            "handovers_by_path": dict(self.by_path),
            # nodes followed by KPM because they refused RC REPORT, seconds since the refusal
            "rc_refused": {m: round(time.monotonic() - t, 1) for m, t in self.rc_refused.items()},
            "detector": detector,
            "ues_followed": ues,
            "in_handover": in_ho,
            "events_waiting": len(self._unsent),
            "recent_events": recent,
            "rejected_indications": dict(self.rejected),
            "rc_decode": {"fast": self.rc_decoder.fast, "generic": self.rc_decoder.fallbacks},
            "rest_errors": dict(self.shell.http.counters.errors),
            "rmr": dict(self.shell.rmr_counters),
            "overloaded": self.shell.overloaded(),
            "config_errors": self.shell.config_errors,
            "last_config_error": self.shell.last_config_error,
            "last_errors": list(self.last_errors),
            "latency_ms": {
                q: None if (v := self.latency.quantile(float(q))) is None else round(v * 1e3, 3)
                for q in ("0.5", "0.99")
            },
            "config": asdict(self.cfg),
            **self.notify.snapshot(),
        }

    def _stats(self) -> dict[str, Any]:
        with self._lock:
            ues, in_ho = len(self.detector.tracks), len(self.detector.in_handover())
            detector = Counter(self.detector.counters)
        # every kind and path from 0, so a dashboard's rate() has a series before the first
        events = Counter(dict.fromkeys(EVENT_KINDS, 0))
        events.update(self.events)
        by_path = Counter(dict.fromkeys(("rc", "kpm"), 0))
        by_path.update(self.by_path)
        return {
            "indications_total": self.counters["indications"],
            "events": events,
            "handovers_by_path": by_path,
            "webhook_deliveries": self.notify.deliverer.counters,
            "webhook_delivery_latency_seconds": self.notify.deliverer.latency,
            "webhook_subscriptions": len(self.notify.subs),
            "webhook_subscriptions_rejected": self.notify.rejected,
            "stream_clients": self.notify.stream.clients,
            "events_unsent_total": self.counters["events_unsent"],
            "events_dropped_total": self.counters["events_dropped"],
            "detection_latency_seconds": self.latency,
            "ues": ues,
            "ues_in_handover": in_ho,
            "detector": detector,
            "rejected_indications": self.rejected,
            "rest_errors": self.shell.http.counters.errors,
            "rmr": Counter(self.shell.rmr_counters),
            "subscriptions": self.node_subs.states(),
            "config_errors_total": self.shell.config_errors,
        }


EVENT_KINDS = (ho_event.START, ho_event.COMPLETE, ho_event.FAILURE, ho_event.PING_PONG)
_LABELS = {
    "events": "kind",
    "handovers_by_path": "path",
    "webhook_deliveries": "outcome",
    "webhook_subscriptions_rejected": "reason",
    "detector": "counter",
    "rejected_indications": "reason",
    "rest_errors": "reason",
    "subscriptions": "state",
}
_HELP = {
    "indications_total": "RC and KPM indications (RMR 12050) received from the E2 nodes",
    "events": "handover events detected, by kind (start, complete, failure, ping_pong)",
    "handovers_by_path": "handovers detected, by path (rc: E2SM-RC REPORT, kpm: UE-level KPM)",
    "webhook_deliveries": "webhook outcomes (offered, delivered, given_up, expired_*, ...)",
    "webhook_delivery_latency_seconds": "event offered -> its webhook delivered (2xx)",
    "webhook_subscriptions": "webhook subscriptions held",
    "webhook_subscriptions_rejected": "webhook subscriptions refused, by reason "
    "(target_not_allowed: a loopback, link-local or private URL not in controls.webhook_allow)",
    "stream_clients": "clients of the event stream",
    "events_unsent_total": "30501 send attempts that found no route or peer (tried again)",
    "events_dropped_total": "30501 messages given up after event_retry_s",
    "detection_latency_seconds": "handover detection latency: the RC (or KPM) indication "
    "that shows a handover in -> its event (RMR 30501) sent (the 2 ms target)",
    "ues": "UEs the detector follows",
    "ues_in_handover": "UEs in a handover now",
    "detector": "detector counters (entries, starts, ends, duplicates, ...)",
    "rejected_indications": "indications rejected, by reason",
    "rest_errors": "REST requests answered with an error, by reason",
    "rmr": "RMR messages by direction, type and outcome (rx_*, tx_*, shed, refused)",
    "subscriptions": "RC or KPM subscriptions held now, by state",
    "config_errors_total": "descriptor edits refused (the previous configuration stays)",
}
