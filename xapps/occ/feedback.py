"""Sends each registered flow its UE's target rate and fallback flag over UDP.

A flow gets a datagram when the target moved by more than ``min_change`` (2%) since the last
one it got, when the fallback flag flipped, and at least every ``max_interval_s`` (50 ms)
while the UE has an estimate. ``update`` is called per indication (change-driven sends go out
at once); ``tick`` runs from a timer thread for the periodic refresh.
"""

from __future__ import annotations

import logging
import math
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from octoric.contracts.feedback import encode_json_feedback, encode_remb_feedback
from octoric.xapps.occ.flows import Flow

log = logging.getLogger("xapps.occ.feedback")


@dataclass
class UeTarget:
    target_bps: float
    fallback: bool
    guami: str | None
    t_ms: int  # time of the estimate (ms)


@dataclass
class _Sent:
    target_bps: float
    fallback: bool
    at: float  # monotonic


class FeedbackSender:
    def __init__(self, min_change: float = 0.02, max_interval_s: float = 0.05) -> None:
        self.min_change, self.max_interval_s = min_change, max_interval_s
        self.flows: dict[str, Flow] = {}
        self.targets: dict[int, UeTarget] = {}
        self.counters: Counter[str] = Counter()
        self._sent: dict[str, _Sent] = {}
        self.version = 0  # bumped by every add / remove (a cached listing knows it is stale)
        self._by_ue: dict[int, set[str]] = {}
        # UE list bytes -> (registry version, rows with flows): see _rows_with_flows
        self._rows_cache: dict[tuple[str, bytes], tuple[int, list[tuple[int, int]]]] = {}
        self._lock = threading.Lock()
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._sock6: socket.socket | None = None
        # the current target of a UE this sender holds none for (update_batch keeps only
        # those of UEs with flows): the xApp's own records
        self.lookup: Callable[[int], UeTarget | None] | None = None
        self._retired = threading.Event()  # set when another sender took over (retire)

    # --- registry -------------------------------------------------------------------------
    def add(self, flow: Flow) -> None:
        known = self.lookup(flow.ue) if self.lookup is not None else None
        with self._lock:
            old = self.flows.get(flow.id)
            if old is not None:
                self._by_ue.get(old.ue, set()).discard(flow.id)
            self.flows[flow.id] = flow
            self.version += 1
            self._by_ue.setdefault(flow.ue, set()).add(flow.id)
            self._sent.pop(flow.id, None)
            t = self.targets.get(flow.ue)
            if t is None and known is not None and math.isfinite(known.target_bps):
                t = self.targets[flow.ue] = known
            if t is not None:  # a new flow hears the current target at once
                self._send(flow, t, time.monotonic())

    def remove(self, flow_id: str) -> Flow | None:
        with self._lock:
            flow = self.flows.pop(flow_id, None)
            if flow is not None:
                self.version += 1
                self._by_ue.get(flow.ue, set()).discard(flow_id)
                self._sent.pop(flow_id, None)
            return flow

    def list_flows(self) -> list[Flow]:
        with self._lock:
            return sorted(self.flows.values(), key=lambda f: f.id)

    def set_policy(self, min_change: float, max_interval_s: float) -> None:
        with self._lock:
            self.min_change, self.max_interval_s = min_change, max_interval_s

    # --- estimates --------------------------------------------------------------------------
    def update(self, ue: int, target: UeTarget) -> None:
        """A new estimate for ``ue``: send to its flows if it changed enough."""
        if not math.isfinite(target.target_bps):
            return
        with self._lock:
            self._offer(ue, target, time.monotonic())

    def _offer(self, ue: int, target: UeTarget, now: float, stamp: float | None = None) -> None:
        """Keep ``target`` and send it to the UE's flows that are due (hold the lock)."""
        self.targets[ue] = target
        for fid in self._by_ue.get(ue, ()):
            last = self._sent.get(fid)
            if last is None or self._due(last, target, now):
                self._send(self.flows[fid], target, now, stamp)

    def update_batch(
        self,
        ue_ids: npt.NDArray[np.int64],
        target_bps: npt.NDArray[np.float64],
        fallback: npt.NDArray[np.bool_],
        guamis: list[str | None],
        t_ms: int,
    ) -> None:
        """``update`` for every UE of one ingested indication, under one lock; only UEs with
        a registered flow cost anything (their targets are the ones kept)."""
        if not self._by_ue:  # no flows at all (read without the lock: a dict is never torn)
            return
        with self._lock:
            hits = self._rows_with_flows(ue_ids)
            if not hits:
                return
            now = time.monotonic()
            stamp = time.time()  # one wall-clock reading for the batch's datagrams
            for i, u in hits:
                bps = float(target_bps[i])
                if math.isfinite(bps):
                    self._offer(u, UeTarget(bps, bool(fallback[i]), guamis[i], t_ms), now, stamp)

    def _rows_with_flows(self, ue_ids: npt.NDArray[np.int64]) -> list[tuple[int, int]]:
        """(row, UE) of the batch's UEs that have a flow (hold the lock). A node sends the
        same UE list report after report: the answer is kept per list and registry version."""
        key = (ue_ids.dtype.str, ue_ids.tobytes())
        hit = self._rows_cache.get(key)
        if hit is not None and hit[0] == self.version:
            return hit[1]
        by_ue = self._by_ue
        rows = [(i, u) for i, u in enumerate(ue_ids.tolist()) if by_ue.get(u)]
        if len(self._rows_cache) >= 1024:
            self._rows_cache.clear()
        self._rows_cache[key] = (self.version, rows)
        return rows

    def forget(self, ue: int) -> None:
        with self._lock:
            self.targets.pop(ue, None)

    def _due(self, last: _Sent, t: UeTarget, now: float) -> bool:
        if last.fallback != t.fallback or now - last.at >= self.max_interval_s:
            return True
        base = max(last.target_bps, 1.0)
        return abs(t.target_bps - last.target_bps) / base > self.min_change

    def tick(self) -> float:
        """Refresh every flow whose last datagram is ``max_interval_s`` old; the seconds until
        the next flow falls due (``max_interval_s`` when none can: a send only moves a flow's
        due time later, and a flow's first datagram goes out from ``update``/``add``)."""
        with self._lock:
            now = time.monotonic()
            nxt = now + self.max_interval_s
            for fid, flow in self.flows.items():
                t = self.targets.get(flow.ue)
                if t is None:
                    continue
                last = self._sent.get(fid)
                if last is None or now - last.at >= self.max_interval_s:
                    self._send(flow, t, now)
                else:
                    nxt = min(nxt, last.at + self.max_interval_s)
            return max(0.0, nxt - now)

    def _send(self, flow: Flow, t: UeTarget, now: float, stamp: float | None = None) -> None:
        if flow.guami is not None and t.guami is not None and flow.guami != t.guami:
            self.counters["guami_mismatch"] += 1
            return
        if flow.format == "remb":
            data = encode_remb_feedback(flow.sender_ssrc, t.target_bps, t.fallback, flow.ssrcs)
        else:
            data = encode_json_feedback(flow.ue, t.target_bps, t.fallback, stamp, t.t_ms)
        try:
            if ":" in flow.host:
                if self._sock6 is None:
                    self._sock6 = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
                self._sock6.sendto(data, (flow.host, flow.port))
            else:
                self._sock.sendto(data, (flow.host, flow.port))
        except OSError as e:  # e.g. ICMP port unreachable from an earlier datagram
            self.counters[f"send_error_{type(e).__name__}"] += 1
            # count it as sent: retrying at once would only hammer a dead receiver
        else:
            self.counters[f"sent_{flow.format}"] += 1
        self._sent[flow.id] = _Sent(t.target_bps, t.fallback, now)

    timer_running = False

    def retire(self) -> None:
        """Another sender took over this one's flows (the native path's): the timer stops."""
        self._retired.set()

    def start_timer(self, stop: threading.Event, period_s: float = 0.01) -> None:
        self.timer_running = True
        threading.Thread(
            target=self.run_timer, args=(stop, period_s), name="feedback", daemon=True
        ).start()

    def run_timer(self, stop: threading.Event, period_s: float = 0.01) -> None:
        """The refresh loop (run in a thread). It sleeps until the next flow falls due, at
        least ``period_s`` (the refresh's granularity) and at most ``max_interval_s``: with
        estimates driving the sends, it wakes ~20 times a second instead of 100."""
        wait = period_s
        while not stop.wait(wait) and not self._retired.is_set():
            try:
                wait = min(max(self.tick(), period_s), max(self.max_interval_s, period_s))
            except Exception:  # the timer must outlive any one bad send
                self.counters["timer_errors"] += 1
                log.exception("feedback tick failed")
                wait = period_s
