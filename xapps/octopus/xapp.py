"""The octopus xApp: A1 policies in, E2SM-RC CONTROL action 100 out, enforcement reported.

- A1_POLICY_REQ (20010, from a1): CREATE/UPDATE/DELETE of policy type 30500 instances. Each is
  validated (``contracts.octopus_policy``), checked for conflicts (``planner``), kept in SDL
  ``octoric.octopus`` and pushed as one RIC CONTROL (12040, RC action 100, ACK requested) per
  target node, UE and DRB. The answer (12041 ACK / 12042 failure) sets that target's state.
- A1_POLICY_RESP (20011, to a1): OK when every UE/DRB is enforced, ERROR with the reasons per
  node otherwise, DELETED once a deleted policy's droppers are off.
- OCTORIC_OCTOPUS_STATUS (30502): per target, on every change of state and of the gNB's drop
  counters (which ride on the control outcome, RAN parameters 8-11).
- Every ``assert_period_s`` each policy is pushed again: a reconnected or restarted gNB gets
  its state back within that time and the counters stay current. At start the xApp restores
  its policies from SDL and asks a1 for the current ones (A1_POLICY_QUERY, 20012).
- REST: ``/octopus/v1/status``, ``/metrics``, health.

Threads: RMRXapp's dispatch thread handles messages; the ``assert`` thread pushes and times
out; HTTP threads read. One lock guards the policy book.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, fields
from typing import Any

import jsonschema

from octoric.contracts import message_types as mt
from octoric.contracts import rc as R
from octoric.contracts import ue_key
from octoric.contracts.octopus_policy import (
    DropCounters,
    DropPolicy,
    OctopusStatus,
    PolicyError,
)
from octoric.contracts.schemas import OCTOPUS_POLICY_TYPE_ID, load
from octoric.e2sm import e2ap, rc
from octoric.e2sm.common import Guami, UeId
from octoric.e2sm.e2ap_ies import RicRequestId
from octoric.e2sm.errors import E2smError
from octoric.xapps.base.config import controls_of, typed_controls
from octoric.xapps.base.http import Response
from octoric.xapps.base.lifecycle import XappBase
from octoric.xapps.base.metrics import Series, StatsCollector
from octoric.xapps.base.sdl import SdlStore
from octoric.xapps.base.shell import MessageHandler, RmrMessage
from octoric.xapps.octopus import planner
from octoric.xapps.octopus.planner import (
    ENFORCED,
    NOT_ENFORCED,
    PENDING,
    PolicyState,
    Target,
    TargetState,
)
from octoric.xapps.octopus.xapp_config import OctopusXappConfig

log = logging.getLogger("xapps.octopus")
NAME = "octopus"
POLICY = "policy."  # SDL keys: policy.<instance id> -> {"body": ..., "seq": n, "deleting": b}
RX_MESSAGES = (mt.A1_POLICY_REQ, mt.RIC_CONTROL_ACK, mt.RIC_CONTROL_FAILURE)
TX_MESSAGES = (
    mt.A1_POLICY_RESP, mt.A1_POLICY_QUERY, mt.RIC_CONTROL_REQ, mt.OCTORIC_OCTOPUS_STATUS,
)  # fmt: skip
REQUESTOR = OCTOPUS_POLICY_TYPE_ID  # RIC requestor ID (0..65535) of this xApp's controls


def unix_ms() -> int:
    return time.time_ns() // 1_000_000


def control_ue_id(key: int, guami: Guami) -> UeId:
    """How a control names the UE of ``key``: by AMF-UE-NGAP-ID with ``guami``, or for a UE its
    DU reported by F1AP ID only, by that ID (UEID-GNB-DU, what srsRAN's DU resolves)."""
    du = ue_key.du_parts(key)
    if du is not None:
        return UeId("gNB-DU-UEID", f1ap_ids=(du[1],))
    return UeId.gnb(key, guami)


class OctopusXapp(XappBase):
    def __init__(
        self, rmr_port: int, http_port: int, host: str = "127.0.0.1", sdl: SdlStore | None = None
    ) -> None:
        super().__init__(NAME, rmr_port, http_port, host, sdl, RX_MESSAGES, TX_MESSAGES)
        self.cfg = OctopusXappConfig()
        self.policies: dict[str, PolicyState] = {}
        self.counters: Counter[str] = Counter()
        self.rejected: Counter[str] = Counter()  # A1 requests refused, by reason
        self.controls: Counter[str] = Counter()  # sent / acked / failed / timeout / unsent
        self._inflight: dict[int, tuple[str, Target, bool, float]] = {}  # instance -> ...
        self._next_instance = 1
        self._seq = 0
        self._a1_sent: dict[str, tuple[str, str | None]] = {}  # pid -> last (status, reason)
        self._lock = threading.RLock()
        self._wake = threading.Event()
        self.shell.http.add("GET", "/octopus/v1/status", lambda r: Response.json(self.status()))
        self.shell.registry.register(
            StatsCollector("octoric_octopus", self._stats, _LABELS, _HELP, levels=("policies",))
        )

    # --- configuration and life cycle ----------------------------------------------------------
    def apply_config(self, descriptor: dict[str, Any]) -> None:
        self.cfg = typed_controls(OctopusXappConfig, controls_of(descriptor))
        self.counters["config_loads"] += 1
        log.info("configuration applied: %s", asdict(self.cfg))

    # --- the life cycle's hooks (XappBase owns start and stop) --------------------------------
    def handlers(self) -> dict[int, MessageHandler]:
        return {
            mt.A1_POLICY_REQ: self.on_a1_policy,
            mt.RIC_CONTROL_ACK: self.on_control_answer,
            mt.RIC_CONTROL_FAILURE: self.on_control_answer,
        }

    def announce(self) -> None:
        # what a1 holds now (policies created or deleted while this xApp was away)
        self.shell.send(
            mt.A1_POLICY_QUERY, json.dumps({"policy_type_id": OCTOPUS_POLICY_TYPE_ID}).encode()
        )

    def workers(self) -> dict[str, Callable[[], None]]:
        return {"assert": self._asserter}

    def halt(self) -> None:
        self._wake.set()

    # --- A1 ------------------------------------------------------------------------------------
    def on_a1_policy(self, msg: RmrMessage) -> None:
        self.counters["a1_requests"] += 1
        try:
            req = json.loads(msg.payload)
            if not isinstance(req, dict):
                raise ValueError("not a JSON object")
            op = req["operation"]
            tid = int(req["policy_type_id"])
            pid = str(req["policy_instance_id"])
            if op not in ("CREATE", "UPDATE", "DELETE"):
                raise ValueError(f"unknown operation {op!r}")
        except (ValueError, KeyError, TypeError) as e:
            self.rejected["malformed_a1_request"] += 1
            log.warning("malformed A1_POLICY_REQ: %s", e)
            return
        if tid != OCTOPUS_POLICY_TYPE_ID:
            self.rejected["unknown_policy_type"] += 1
            self._a1_reply(pid, "ERROR", f"policy type {tid} is not handled here", tid=tid)
            return
        if op == "DELETE":
            self.delete(pid)
            return
        try:
            policy = _validated(req.get("payload"))
        except PolicyError as e:
            self.rejected[e.reason] += 1
            self._a1_reply(pid, "ERROR", f"invalid policy: {e}")
            return
        self.put(pid, policy)

    def put(self, pid: str, policy: DropPolicy) -> None:
        with self._lock:
            old = self.policies.get(pid)
            if old is not None and old.policy == policy and not old.deleting:
                self._wake.set()  # the same again (a1's answer to our query): nothing new
                return
            self._seq += 1
            p = PolicyState(pid, policy, old.seq if old else self._seq)
            why = planner.unsupported(policy)
            if why:
                self.rejected["unsupported_scope"] += 1
            else:
                why = planner.conflict(p, list(self.policies.values()))
                if why:
                    self.rejected["conflict"] += 1
            p.refused = why
            if old is not None and not why:  # what the old one switched on and this one drops
                self._switch_off_leftovers(old, policy)
            self.policies[pid] = p
            self._persist(p)
        log.info("policy %s %s%s", pid, "refused: " if why else "set", why or "")
        self._wake.set()  # the push thread sends its controls and reports once answered
        if why:
            self._report(pid)

    def delete(self, pid: str) -> None:
        with self._lock:
            p = self.policies.get(pid)
            if p is None:
                self._a1_reply(pid, "DELETED", None)
                return
            # every target a control switched on, not only those ENFORCED now: one whose last
            # control timed out (NOT_ENFORCED) may still be on at the gNB; a live srsRAN gNB
            # kept dropping after such a DELETE (docs/testbed.md)
            on = {t for t, s in p.targets.items() if s.switched_on or s.state == ENFORCED}
            if p.refused or not on:
                del self.policies[pid]
                self._forget(pid)
                self._a1_reply(pid, "DELETED", None)
                return
            p.deleting = True
            p.targets = {t: TargetState() for t in on}
            self._persist(p)
        self._wake.set()

    def _switch_off_leftovers(self, old: PolicyState, new: DropPolicy) -> None:
        keep = {(ue, drb) for ue in new.ues for drb in new.drb_ids}
        for t, s in old.targets.items():
            if s.state == ENFORCED and (t.ue, t.drb) not in keep and old.policy.enable:
                self._send_control(old.pid, t, enable=False, forget=True)

    def _a1_reply(self, pid: str, status: str, reason: str | None, tid: int | None = None) -> None:
        body = {
            "policy_type_id": tid or OCTOPUS_POLICY_TYPE_ID,
            "policy_instance_id": pid,
            "handler_id": self.cfg.handler_id,
            "status": status,
        }
        if reason:
            body["message"] = reason[:1000]
        if self.shell.send(mt.A1_POLICY_RESP, json.dumps(body).encode()):
            self.counters[f"a1_{status.lower()}"] += 1
            self._a1_sent[pid] = (status, reason)
        else:
            self.counters["a1_reply_unsent"] += 1

    def _report(self, pid: str) -> None:
        """Tell a1 where the policy stands, when that changed (and pending is not news)."""
        with self._lock:
            p = self.policies.get(pid)
            if p is None or p.deleting:
                return
            state, reason = planner.verdict(p)
        if state == PENDING:
            return
        status = "OK" if state == ENFORCED else "ERROR"
        if self._a1_sent.get(pid) != (status, reason):
            self._a1_reply(pid, status, reason)

    # --- E2 control ----------------------------------------------------------------------------
    def _guami(self) -> Guami:
        plmn, region, aset, ptr = self.cfg.default_guami.split(":")
        return Guami(bytes.fromhex(plmn), int(region), int(aset), int(ptr))

    def _send_control(self, pid: str, t: Target, enable: bool, forget: bool = False) -> None:
        p = self.policies[pid].policy
        adapt = rc.OctopusAdaptation(
            drb_id=t.drb, enable=enable, priority_levels=p.priority_levels,
            bitrate_window_ms=p.bitrate_window_ms, drop_by_message=p.drop_by_message,
            drop_by_bitrate=p.drop_by_bitrate, protect_in_flight=p.protect_in_flight,
        )  # fmt: skip
        header, message = rc.octopus_control(control_ue_id(t.ue, self._guami()), adapt)
        instance = self._next_instance
        self._next_instance = self._next_instance % 65535 + 1
        req = e2ap.RicControlRequest(
            RicRequestId(REQUESTOR, instance), rc.RAN_FUNCTION_ID, header, message,
            ack_request="ack",
        )  # fmt: skip
        key = "" if forget else pid
        state = self.policies[pid].targets.get(t)
        if enable and state is not None:
            state.switched_on = True
        self._inflight[instance] = (key, t, enable, time.monotonic())
        if self.shell.send(mt.RIC_CONTROL_REQ, e2ap.encode_e2ap(req), meid=t.meid):
            self.controls["sent"] += 1
        else:
            self.controls["unsent"] += 1
            del self._inflight[instance]
            if not forget:
                self._set(pid, t, NOT_ENFORCED, "the RIC did not take the control (no route)")

    def on_control_answer(self, msg: RmrMessage) -> None:
        try:
            pdu = e2ap.decode_e2ap(msg.payload)
        except E2smError as e:
            self.rejected["bad_control_answer"] += 1
            log.warning("undecodable control answer from %s: %s", msg.meid, e)
            return
        if not isinstance(pdu, e2ap.RicControlAcknowledge | e2ap.RicControlFailure):
            self.rejected["unexpected_pdu"] += 1
            return
        rid = pdu.request_id
        with self._lock:
            entry = (
                self._inflight.pop(rid.instance_id, None) if rid.requestor_id == REQUESTOR else None
            )
            if entry is None:
                self.controls["late_or_unknown"] += 1
                return
            pid, t, enabling, _ = entry
            if self._switching_on_a_deleted(pid, enabling):
                # an answer to the switch-on sent before DELETE: not the switch-off it waits for
                acked = isinstance(pdu, e2ap.RicControlAcknowledge)
                self.controls["acked" if acked else "failed"] += 1
                return
            if isinstance(pdu, e2ap.RicControlFailure):
                self.controls["failed"] += 1
                c = pdu.cause
                self._set(pid, t, NOT_ENFORCED, f"gNB refused: {c.group}/{c.value}")
            else:
                self.controls["acked"] += 1
                self._set(pid, t, ENFORCED, None, drop_counters(pdu.outcome))
            self._finish_delete(pid)
        self._report(pid)

    def _set(
        self, pid: str, t: Target, state: str, reason: str | None, drops: DropCounters | None = None
    ) -> None:
        p = self.policies.get(pid)
        if p is None:
            return
        s = p.targets.get(t)
        if s is None:
            return  # the policy changed meanwhile: that target is no longer its own
        changed = (s.state, s.reason) != (state, reason) or (drops is not None and drops != s.drops)
        s.state, s.reason, s.answered = state, reason, True
        if drops is not None:
            s.drops = drops
        if changed and self.cfg.publish_status:
            shown = planner.REMOVED if p.deleting and state == ENFORCED else state
            st = OctopusStatus(pid, t.meid, shown, t.ue, t.drb, reason, unix_ms(), s.drops)
            if self.shell.send(mt.OCTORIC_OCTOPUS_STATUS, st.to_json(), xact=False):
                self.counters["status_published"] += 1
            else:
                self.counters["status_unsent"] += 1

    def _switching_on_a_deleted(self, pid: str, enabling: bool) -> bool:
        p = self.policies.get(pid)
        return enabling and p is not None and p.deleting

    def _finish_delete(self, pid: str) -> None:
        p = self.policies.get(pid)
        if p is None or not p.deleting:
            return
        if all(s.answered for s in p.targets.values()):
            del self.policies[pid]
            self._forget(pid)
            self._a1_reply(pid, "DELETED", None)

    # --- the periodic push -------------------------------------------------------------------
    def _rc_nodes(self) -> list[str]:
        try:
            nodes = self.shell.rnib_nodes()
        except Exception as e:  # R-NIB (SDL) away: try again next round
            self.counters["rnib_errors"] += 1
            log.warning("cannot read the R-NIB: %s", e)
            return []
        return [n.meid for n in nodes if n.connected and n.has_function(rc.OID, rc.RAN_FUNCTION_ID)]

    def assert_once(self) -> None:
        nodes = self._rc_nodes()
        now = time.monotonic()
        touched: set[str] = set()
        with self._lock:
            for inst, (pid, t, enabling, sent) in list(self._inflight.items()):
                if now - sent > self.cfg.control_timeout_s:
                    del self._inflight[inst]
                    self.controls["timeout"] += 1
                    if pid and not self._switching_on_a_deleted(pid, enabling):
                        why = f"no answer from {t.meid} within {self.cfg.control_timeout_s:g} s"
                        self._set(pid, t, NOT_ENFORCED, why)
                        self._finish_delete(pid)
                        touched.add(pid)
            busy = {(pid, t) for pid, t, _, _ in self._inflight.values()}
            for pid, p in list(self.policies.items()):
                if p.refused:
                    continue
                if p.deleting:
                    for t, s in p.targets.items():
                        if not s.answered and (pid, t) not in busy:
                            self._send_control(pid, t, enable=False)
                    continue
                want = planner.targets(p.policy, nodes)
                for t in want:
                    p.targets.setdefault(t, TargetState())
                for t in [t for t in p.targets if t not in want]:
                    if not p.policy.meids:  # the node left: it no longer counts
                        del p.targets[t]
                    elif t.meid not in nodes:
                        self._set(
                            pid,
                            t,
                            NOT_ENFORCED,
                            f"node {t.meid} is not connected (or offers no E2SM-RC)",
                        )
                for t in want:
                    if (pid, t) not in busy:
                        self._send_control(pid, t, enable=p.policy.enable)
                touched.add(pid)
            for pid, p in self.policies.items():
                if p.policy.meids and not p.refused and not p.deleting:
                    for t in p.targets:
                        if t.meid not in nodes:
                            self._set(
                                pid,
                                t,
                                NOT_ENFORCED,
                                f"node {t.meid} is not connected (or offers no E2SM-RC)",
                            )
                            touched.add(pid)
        for pid in touched:
            self._report(pid)

    def _asserter(self) -> None:
        while not self._stop.is_set():
            try:
                self.assert_once()
            except Exception:  # one bad round must not end the loop
                self.counters["assert_errors"] += 1
                log.exception("policy push failed")
            self._wake.wait(self.cfg.assert_period_s)
            self._wake.clear()

    # --- SDL -----------------------------------------------------------------------------------
    def _persist(self, p: PolicyState) -> None:
        body = {"policy": asdict(p.policy), "seq": p.seq, "deleting": p.deleting}
        try:
            self.shell.sdl.set_json(POLICY + p.pid, body)
        except Exception as e:  # Redis away: the policy still works; a1 re-sends it at restart
            self.counters["sdl_errors"] += 1
            log.warning("cannot persist policy %s: %s", p.pid, e)

    def _forget(self, pid: str) -> None:
        self._a1_sent.pop(pid, None)
        try:
            self.shell.sdl.delete(POLICY + pid)
        except Exception as e:
            self.counters["sdl_errors"] += 1
            log.warning("cannot delete policy %s from SDL: %s", pid, e)

    def restore(self) -> None:
        try:
            saved = self.shell.sdl.find_json(POLICY)
        except Exception as e:
            self.counters["sdl_errors"] += 1
            log.warning("cannot read policies from SDL: %s", e)
            return
        with self._lock:
            for key, d in saved.items():
                try:
                    pol = d["policy"]
                    policy = DropPolicy(
                        **{**pol, "meids": tuple(pol["meids"]), "ues": tuple(pol["ues"]),
                           "slices": (), "drb_ids": tuple(pol["drb_ids"])}
                    )  # fmt: skip
                except (KeyError, TypeError) as e:
                    self.counters["sdl_bad_records"] += 1
                    log.warning("ignoring SDL record %s: %s", key, e)
                    continue
                pid = key[len(POLICY) :]
                p = PolicyState(pid, policy, int(d.get("seq", 0)), bool(d.get("deleting")))
                p.refused = planner.unsupported(policy)
                self.policies[pid] = p
                self._seq = max(self._seq, p.seq)
            for p in self.policies.values():
                if not p.refused:
                    p.refused = planner.conflict(p, list(self.policies.values()))
        if saved:
            log.info("restored %d policies from SDL", len(self.policies))

    # --- status --------------------------------------------------------------------------------
    def status(self) -> dict[str, Any]:
        with self._lock:
            pols = []
            for pid, p in sorted(self.policies.items()):
                state, reason = planner.verdict(p)
                targets = sorted(
                    p.targets.items(), key=lambda kv: (kv[0].meid, kv[0].ue, kv[0].drb)
                )
                pols.append(
                    {
                        "id": pid,
                        "state": "deleting" if p.deleting else state,
                        "reason": reason,
                        "policy": asdict(p.policy),
                        "targets": [_target_json(t, s) for t, s in targets],
                    }
                )
        return {
            "xapp": NAME,
            "policies": pols,
            "counters": dict(self.counters),
            "controls": dict(self.controls),
            "rejected": dict(self.rejected),
            "rmr": dict(self.shell.rmr_counters),
        }

    def _stats(self) -> dict[str, Any]:
        with self._lock:
            # every state and dropper counter from 0: a dashboard has a series before the first
            states = Counter(dict.fromkeys(VERDICTS, 0))
            states.update(planner.verdict(p)[0] for p in self.policies.values())
            drops: Counter[str] = Counter({f.name: 0 for f in fields(DropCounters)})
            # per target (node, UE, DRB): as many as the A1 policies name, summed over them
            per: dict[tuple[str, ...], list[float]] = {}
            for p in self.policies.values():
                for t, s in p.targets.items():
                    if s.drops is not None:
                        for k, v in asdict(s.drops).items():
                            drops[k] += v
                        acc = per.setdefault((t.meid, str(t.ue), str(t.drb)), [0.0, 0.0])
                        acc[0] += s.drops.packets
                        acc[1] += s.drops.bytes
        labels = ("meid", "ue", "drb")
        packets = Series("counter", labels, [(k, v[0]) for k, v in sorted(per.items())])
        octets = Series("counter", labels, [(k, v[1]) for k, v in sorted(per.items())])
        return {
            "policies": states, "controls": self.controls, "rejected": self.rejected,
            "gnb_drops": drops, "target_dropped_packets": packets,
            "target_dropped_bytes": octets,
            "status_published_total": self.counters["status_published"],
        }  # fmt: skip


def _validated(body: Any) -> DropPolicy:
    """The policy type's schema again (an RMR sender other than a1 may send anything)."""
    try:
        jsonschema.validate(body, load("octopus_drop_policy"))
    except jsonschema.ValidationError as e:
        where = "/".join(str(p) for p in e.absolute_path) or "(top)"
        raise PolicyError("schema", f"at /{where}: {e.message}") from None
    return DropPolicy.from_json(body)


def _not_connected(meid: str) -> str:
    return f"node {meid} is not connected (or offers no E2SM-RC)"


def _target_json(t: Target, s: TargetState) -> dict[str, Any]:
    return {
        "meid": t.meid,
        "ue": t.ue,
        "drb": t.drb,
        "state": s.state,
        "reason": s.reason,
        "drops": None if s.drops is None else asdict(s.drops),
    }


def drop_counters(outcome: bytes | None) -> DropCounters | None:
    """The gNB's dropper counters in an RC CONTROL ACK's outcome (RAN parameters 8-11), or
    None when it carries none."""
    if not outcome:
        return None
    try:
        vals = dict(rc.decode_rc(rc.RcControlOutcome, outcome).values)
    except E2smError:
        return None

    def num(pid: int) -> int:
        v = vals.get(pid)
        return int(v) if isinstance(v, int) and not isinstance(v, bool) else 0

    if R.OUTCOME_DROPPED_PACKETS not in vals:
        return None
    return DropCounters(
        num(R.OUTCOME_DROPPED_PACKETS), num(R.OUTCOME_DROPPED_BYTES),
        num(R.OUTCOME_DROPPED_MSGS_BY_MESSAGE), num(R.OUTCOME_DROPPED_MSGS_BY_BITRATE),
    )  # fmt: skip


VERDICTS = (planner.ENFORCED, planner.NOT_ENFORCED, planner.PENDING)
_LABELS = {"policies": "state", "controls": "outcome", "rejected": "reason", "gnb_drops": "counter"}
_HELP = {
    "policies": "policies held, by verdict (enforced, not_enforced, pending)",
    "controls": "RIC controls (sent, acked, failed, timeout, unsent, late_or_unknown)",
    "rejected": "A1 requests and E2 answers refused, by reason",
    "gnb_drops": "the gNBs' dropper counters summed over the policies' targets",
    "target_dropped_packets": "packets the gNB's dropper dropped for one policy target "
    "(node, UE, DRB), as its last RIC control ACK said",
    "target_dropped_bytes": "bytes the gNB's dropper dropped for one policy target (node, UE, "
    "DRB), as its last RIC control ACK said",
    "status_published_total": "policy status messages (OCTORIC_OCTOPUS_STATUS, RMR 30502) sent",
}
