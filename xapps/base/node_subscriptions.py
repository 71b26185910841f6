"""Per-node E2 subscriptions through submgr, shared by octoric's xApps.

Every discovery round reads the R-NIB. For each connected node the xApp says, with
``wants(node)``, which subscriptions it should hold there: one ``Wanted`` per kind ("kpm",
"rc", ...), built from what the node offers in its RAN function definitions. The manager then

- subscribes what is wanted and not held (REST body: ``SubscriptionRequest``, the O-RAN SC
  submgr contract), asks again when a request got no outcome within ``timeout_s`` (at once)
  or failed (submgr unreachable, or the node refused it): after two rounds the first time,
  then backing off per (node, kind), doubling with each failure in a row up to
  ``retry_max_s`` (60 s; at one round a second: 2, 4, 8, 16, 32, 60, 60 ... s), so a node that
  refuses what it is asked for is not asked every two rounds forever. A request without an
  outcome counts in the row; the row ends (the next failure waits two rounds again) when a
  subscription succeeds, the node's offer changes, the node reconnects (a failed request is
  then asked again at once) or the xApp resubscribes everything. ``NodeSub.failures`` and
  ``retry_at`` (``retry_in_s`` in ``snapshot``) show it; ``subscription_retries_backed_off``
  counts the failures that put the next request off beyond two rounds;
- resubscribes when the node's offer changed (``Wanted.measurements`` differs from what the
  subscription asked for: the node set up again with other measurements);
- after a node reconnects, resubscribes what submgr no longer holds (the embedded submgr
  re-establishes its subscriptions itself; other platforms may drop them);
- deletes what is no longer wanted: nodes the configuration leaves out, kinds a connected node
  is no longer wanted for; a node that vanished keeps its subscriptions (submgr waits for it);
- keeps one SDL record per subscription (``<prefix><kind>.<meid>``): a restarted process of
  the xApp (same RMR endpoint) adopts the active ones submgr still holds for it, so
  indications keep flowing with nothing asked again; what it cannot adopt it deletes at
  submgr (``adopt_or_clear``); ``stop`` deletes them all.

Outcomes arrive at the xApp's ``/ric/v1/subscriptions/response`` (``on_response``). Counters
go to the xApp's own ``Counter`` (status and ``/metrics``).
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Collection
from dataclasses import asdict, dataclass
from typing import Any

from octoric.xapps.base.discovery import E2Node
from octoric.xapps.base.errors import RestError, SubmgrError
from octoric.xapps.base.shell import XappShell
from octoric.xapps.base.subscription import (
    SubmgrClient,
    SubscriptionRequest,
    SubscriptionResponse,
    client_host,
)

log = logging.getLogger("xapps.subscriptions")


@dataclass(frozen=True)
class Wanted:
    """One subscription an xApp wants on a node: a report action on one RAN function."""

    kind: str  # the xApp's name for it, e.g. "kpm" or "rc"; one subscription per kind and node
    ran_function_id: int
    event_trigger: bytes
    action_definition: bytes
    measurements: tuple[str, ...] = ()  # what it asks the node for; a change resubscribes


@dataclass
class NodeSub:
    meid: str
    kind: str
    subscription_id: str
    state: str  # requesting | active | failed
    since: float  # monotonic
    e2_instance_id: int | None = None
    error: str = ""
    measurements: tuple[str, ...] = ()  # what was asked for
    failures: int = 0  # failed requests in a row for this node and kind (this one included)
    retry_at: float | None = None  # monotonic: when a failed one is asked again


WantsFn = Callable[[E2Node], list[Wanted]]
MAX_EARLY = 64  # outcomes kept while their POST has not returned
RETRY_MAX_S = 60.0  # a failed request is asked again after 2, 4, 8 ... rounds, at most this


class NodeSubscriptions:
    def __init__(
        self,
        shell: XappShell,
        wants: WantsFn,
        submgr: SubmgrClient | None = None,
        counters: Counter[str] | None = None,
        sdl_prefix: str = "sub.",
    ) -> None:
        self.shell = shell
        self.wants = wants
        self.submgr = submgr or SubmgrClient()
        self.counters: Counter[str] = Counter() if counters is None else counters
        self.sdl_prefix = sdl_prefix
        self.subs: dict[str, NodeSub] = {}
        self.nodes: tuple[str, ...] = ()  # only these meids; empty: every connected node
        self.period_s = 1.0
        self.timeout_s = 10.0
        self.retry_max_s = RETRY_MAX_S  # the longest wait before a failed request is retried
        self._resubscribe = False
        self._poked = threading.Event()  # poke(): a round now, not at the next period
        self._connected: dict[str, bool] = {}  # per meid, as last seen
        self._lock = threading.Lock()  # subs, _unnamed, _early
        self._unnamed = 0  # requests whose POST has not returned submgr's SubscriptionId yet
        self._early: dict[str, SubscriptionResponse] = {}  # outcomes that came before it

    def configure(self, nodes: tuple[str, ...], period_s: float, timeout_s: float) -> None:
        self.nodes, self.period_s, self.timeout_s = nodes, period_s, timeout_s

    def poke(self) -> None:
        """Run a discovery round now (the nodes this xApp wants changed)."""
        self._poked.set()

    def resubscribe_all(self) -> None:
        """Ask every node again in the next round (e.g. the xApp's report settings changed)."""
        self._resubscribe = True

    def snapshot(self) -> list[dict[str, Any]]:
        """Every subscription as a dict; ``retry_in_s``: seconds until a failed one is asked
        again (None: not failed)."""
        now = time.monotonic()
        with self._lock:
            out = [asdict(s) for s in self.subs.values()]
        for d in out:
            at = d["retry_at"]
            d["retry_in_s"] = None if at is None else round(max(0.0, at - now), 3)
        return out

    def retry_delay_s(self, failures: int) -> float:
        """How long after its ``failures``-th failure in a row a request is asked again: two
        rounds, doubling with each further failure, at most ``retry_max_s`` (never less than
        two rounds)."""
        base = 2 * self.period_s
        return min(max(self.retry_max_s, base), base * 2.0 ** min(max(failures, 1) - 1, 30))

    def states(self) -> Counter[str]:
        with self._lock:
            return Counter(s.state for s in self.subs.values())

    # --- one subscription ------------------------------------------------------------------
    def request(self, meid: str, sid: str | None, want: Wanted) -> SubscriptionRequest:
        return SubscriptionRequest(
            meid, want.ran_function_id, want.event_trigger, want.action_definition,
            client_host(self.shell.host), self.shell.http_port, self.shell.rmr_port,
            xapp_event_instance_id=1, subscription_id=sid,
        )  # fmt: skip

    def _key(self, meid: str, kind: str) -> str:
        return f"{kind}.{meid}"

    def get(self, meid: str, kind: str) -> NodeSub | None:
        """The subscription of ``kind`` this xApp holds (or asked for) on node ``meid``."""
        return self.subs.get(self._key(meid, kind))

    def subscribe(self, meid: str, want: Wanted, failures: int = 0) -> NodeSub:
        """Ask submgr for ``want`` on ``meid``; ``failures``: requests for it that failed in a
        row before this one (the backoff goes on from there).

        The request carries no SubscriptionId: on O-RAN SC's submgr a SubscriptionId names an
        existing REST subscription (a retransmission or an update; 404 when it has none by that
        name), and submgr names a new one in its 201 answer. Until that answer the record holds
        a local id; an outcome that arrives before it is kept and applied then."""
        local = f"{self.shell.name}-{want.kind}-{uuid.uuid4().hex[:12]}"
        sub = NodeSub(meid, want.kind, local, "requesting", time.monotonic(),
                      measurements=want.measurements, failures=failures)  # fmt: skip
        key = self._key(meid, want.kind)
        with self._lock:
            self.subs[key] = sub
            self._unnamed += 1
        try:
            sid = self.submgr.subscribe(self.request(meid, None, want))
        except SubmgrError as e:
            with self._lock:
                self._unnamed -= 1
            self._failed(sub, str(e))
            return sub
        with self._lock:
            sub.subscription_id = sid
            self._unnamed -= 1
            early = self._early.pop(sid, None)
            if not self._unnamed:
                self._early.clear()
        self.shell.sdl.set_json(
            f"{self.sdl_prefix}{key}",
            {"subscription_id": sid, "meid": meid, "kind": want.kind,
             "measurements": list(want.measurements)},
        )  # fmt: skip
        self.counters["subscriptions_requested"] += 1
        asked = ", ".join(want.measurements) or f"RAN function {want.ran_function_id}"
        log.info("%s subscription to %s requested (%s): %s", want.kind, meid, asked, sid)
        if early is not None:
            self.on_response(early)
        return sub

    def _failed(self, sub: NodeSub, error: str) -> None:
        """``sub`` failed: count it and put its next request off (backoff)."""
        sub.failures += 1
        delay = self.retry_delay_s(sub.failures)
        sub.retry_at = time.monotonic() + delay  # before the state: discovery reads both
        sub.state, sub.error = "failed", error
        self.counters["subscription_errors"] += 1
        if delay > 2 * self.period_s:
            self.counters["subscription_retries_backed_off"] += 1
        log.warning("%s subscription to %s failed (%d in a row): %s; asking again in %.3g s",
                    sub.kind, sub.meid, sub.failures, error, delay)  # fmt: skip

    def unsubscribe(self, key: str, timeout_s: float | None = None) -> bool:
        """Delete at submgr and in the SDL; False if submgr could not be told."""
        with self._lock:
            sub = self.subs.pop(key, None)
        if sub is None:
            return True
        ok = True
        try:
            self.submgr.delete(sub.subscription_id, timeout_s)
        except SubmgrError as e:
            ok = False
            log.warning("could not delete subscription %s: %s", sub.subscription_id, e)
        self.shell.sdl.delete(f"{self.sdl_prefix}{key}")
        return ok

    def on_response(self, resp: SubscriptionResponse) -> None:
        with self._lock:
            sub = next(
                (s for s in self.subs.values() if s.subscription_id == resp.subscription_id), None
            )
            if sub is None and self._unnamed and len(self._early) < MAX_EARLY:
                # submgr's outcome before its answer to our POST named the subscription
                self._early[resp.subscription_id] = resp
                self.counters["early_subscription_responses"] += 1
                return
        if sub is None:
            self.counters["unknown_subscription_responses"] += 1
            raise RestError(404, "unknown_subscription", f"no subscription {resp.subscription_id}")
        inst = resp.instances[0] if resp.instances else None
        if inst is not None and inst.ok:
            sub.state, sub.e2_instance_id, sub.error = "active", inst.e2_event_instance_id, ""
            sub.failures, sub.retry_at = 0, None  # the backoff starts over
            self.counters["subscriptions_active"] += 1
            self.shell.sdl.set_json(
                f"{self.sdl_prefix}{self._key(sub.meid, sub.kind)}",
                {"subscription_id": sub.subscription_id, "meid": sub.meid, "kind": sub.kind,
                 "e2_instance_id": inst.e2_event_instance_id,
                 "measurements": list(sub.measurements)},
            )  # fmt: skip
        else:
            self._failed(
                sub, inst.error_cause if inst else "no subscription instance in the response"
            )

    # --- life cycle --------------------------------------------------------------------------
    def adopt_or_clear(self) -> None:
        """What an earlier process of this xApp left in the SDL: adopt each active subscription
        submgr still holds for this xApp's RMR endpoint (a restart: its indications keep
        coming here, so asking again would only open a gap), delete the rest at submgr."""
        records = self.shell.sdl.find_json(self.sdl_prefix)
        if not records:
            return
        held = self._held_endpoints()
        me = f"{self.shell.host}:{self.shell.rmr_port}"
        for key, d in records.items():
            if not isinstance(d, dict) or held is None:
                continue
            sid, meid, kind = d.get("subscription_id"), d.get("meid"), d.get("kind")
            inst, meas = d.get("e2_instance_id"), d.get("measurements")
            ours = key[len(self.sdl_prefix) :]
            if (
                isinstance(sid, str) and isinstance(meid, str) and isinstance(kind, str)
                and isinstance(inst, int) and me in held.get(sid, ())
                and ours == self._key(meid, kind)
                and isinstance(meas, list) and all(isinstance(m, str) for m in meas)
            ):  # fmt: skip
                sub = NodeSub(meid, kind, sid, "active", time.monotonic(), inst,
                              measurements=tuple(meas))  # fmt: skip
                with self._lock:
                    self.subs[ours] = sub
                self.counters["subscriptions_adopted"] += 1
                log.info("%s subscription %s to %s adopted (submgr holds it)", kind, sid, meid)
        self.clear_stale()

    def _held_endpoints(self) -> dict[str, list[str]] | None:
        """submgr's subscriptions: id -> the clients' RMR endpoints (None: cannot tell)."""
        try:
            listed = self.submgr.list()
        except SubmgrError as e:
            log.warning("cannot list submgr's subscriptions: %s", e)
            return None
        out: dict[str, list[str]] = {}
        for s in listed:
            eps = s.get("Endpoint") if isinstance(s, dict) else None
            if isinstance(eps, list):
                out[str(s.get("SubscriptionId"))] = [str(e) for e in eps]
        return out

    def clear_stale(self) -> None:
        """Subscriptions a previous run of this xApp left behind (and this one did not adopt):
        delete them at submgr."""
        with self._lock:
            adopted = {s.subscription_id for s in self.subs.values()}
        n = self.delete_recorded(self.sdl_prefix, keep=adopted)
        self.counters["stale_subscriptions_deleted"] += n

    def delete_recorded(self, prefix: str, keep: Collection[str] = (),
                        timeout_s: float | None = None) -> int:  # fmt: skip
        """The subscriptions recorded under ``prefix`` in the SDL (this process's earlier run,
        or another replica's) but ``keep``: deleted at submgr and in the SDL; how many submgr
        took. One submgr cannot be told of stays for the next try's ``adopt_or_clear``."""
        n = 0
        for key, d in self.shell.sdl.find_json(prefix).items():
            sid = d.get("subscription_id") if isinstance(d, dict) else None
            if sid in keep:
                continue
            if isinstance(sid, str):
                try:
                    self.submgr.delete(sid, timeout_s)
                    n += 1
                except SubmgrError as e:
                    log.warning("could not delete stale subscription %s: %s", sid, e)
            self.shell.sdl.delete(key)
        return n

    def run(self, stop: threading.Event) -> None:
        """The discovery thread: adopt or clear what a previous run left, then a round per
        period."""
        while self.shell.xapp is None and not stop.is_set():  # adopted = receiving: RMR is up
            stop.wait(0.05)
        try:
            self.adopt_or_clear()
        except Exception as e:  # SDL or submgr down: carry on, nodes are subscribed anyway
            log.warning("clearing stale subscriptions failed: %s", e)
        while not stop.is_set():
            try:
                self.discover_once()
            except Exception as e:  # keep discovering whatever one round hit
                self.counters["discovery_errors"] += 1
                log.warning("node discovery failed: %s", e)
            self._poked.wait(self.period_s)
            self._poked.clear()

    def stop(self, timeout_s: float = 1.0) -> None:
        """Delete every subscription (shutdown: a short timeout per call, what submgr could
        not be told is left to the next run's ``adopt_or_clear``)."""
        for key in list(self.subs):
            with self._lock:
                sub = self.subs.get(key)
            if sub is None:
                continue
            try:
                self.submgr.delete(sub.subscription_id, timeout_s)
            except SubmgrError as e:
                log.warning("could not delete subscription %s: %s", sub.subscription_id, e)
                continue
            with self._lock:
                self.subs.pop(key, None)
            self.shell.sdl.delete(f"{self.sdl_prefix}{key}")
            self.counters["subscriptions_deleted_at_stop"] += 1

    # --- discovery ---------------------------------------------------------------------------
    def discover_once(self) -> None:
        if self.shell.xapp is None:
            return
        if self._resubscribe:
            self._resubscribe = False
            for key in list(self.subs):
                self.unsubscribe(key)
        now = time.monotonic()
        held_at_submgr: set[str] | None = None
        for node in self.shell.rnib_nodes():
            was = self._connected.get(node.meid)
            self._connected[node.meid] = node.connected
            if self.nodes and node.meid not in self.nodes:
                continue
            if not node.connected:
                continue
            wanted = {w.kind: w for w in self.wants(node)}
            if was is False:  # reconnected: does submgr still hold what we asked for?
                if held_at_submgr is None:
                    held_at_submgr = self._held_at_submgr()
                self._after_reconnect(node.meid, held_at_submgr, now)
            for kind, want in wanted.items():
                key = self._key(node.meid, kind)
                sub = self.subs.get(key)
                # failed: asked again when its backoff is over; no outcome: at once
                retry = sub is not None and sub.state == "failed" and (
                    sub.retry_at is None or now >= sub.retry_at
                )  # fmt: skip
                timed_out = sub is not None and sub.state == "requesting" and (
                    now - sub.since > self.timeout_s
                )  # fmt: skip
                # the node set up again with another offer: ask for what it offers now
                changed = sub is not None and sub.measurements != want.measurements
                if changed:
                    self.counters["resubscriptions_offer_changed"] += 1
                if sub is None or retry or timed_out or changed:
                    # the row of failures goes on, unless the offer changed
                    failures = 0
                    if sub is not None and not changed:
                        failures = sub.failures + (1 if timed_out else 0)
                    if sub is not None:
                        self.unsubscribe(key)
                    self.subscribe(node.meid, want, failures)
            for key, sub in list(self.subs.items()):
                if sub.meid == node.meid and sub.kind not in wanted:
                    self.unsubscribe(key)
        for key, sub in list(self.subs.items()):
            if self.nodes and sub.meid not in self.nodes:
                self.unsubscribe(key)

    def _held_at_submgr(self) -> set[str] | None:
        try:
            return {str(s.get("SubscriptionId")) for s in self.submgr.list()}
        except SubmgrError as e:
            log.warning("cannot list submgr's subscriptions: %s", e)
            return None

    def _after_reconnect(self, meid: str, held: set[str] | None, now: float) -> None:
        for sub in list(self.subs.values()):
            if sub.meid == meid and sub.state == "failed":  # ask again now, backoff over
                sub.failures, sub.retry_at = 0, now
        if held is None:  # submgr did not answer: keep ours, the next reconnect asks again
            return
        for key, sub in list(self.subs.items()):
            if sub.meid == meid and sub.subscription_id not in held:
                self.counters["resubscriptions_node_reconnect"] += 1
                self.unsubscribe(key)  # forget it: the loop subscribes again this round
