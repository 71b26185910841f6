"""OCC replicas sharing the E2 nodes (issue #44).

An operator runs several replicas of the OCC xApp (the chart's ``replicaCount``; ``octoric run
--set xapps.replicas.occ=N``), each named by ``OCTORIC_OCC_REPLICA`` (a pod's name). Each one
beats in the SDL every ``HEARTBEAT_S`` (``member.<id>``: the time and its endpoints); a replica
whose beat is older than ``DEAD_AFTER_S`` is gone. A node belongs to the live replica that
ranks highest for it (rendezvous hashing of node ID and replica ID): every replica computes the
same owner from the same member list, a node moves only when its owner leaves or a replica
that outranks it joins, and the nodes spread evenly. Each replica subscribes only to its own
nodes; the owners are written to ``owner.<meid>`` for operators and tools.

A replica that takes a node over resumes its UEs from the SDL (their records and engine
checkpoints, which the old owner wrote every ``state_period_ms`` / ``checkpoint_period_ms``)
and deletes the subscriptions a dead replica left at submgr. Flows are shared: a sender may
register with any replica; every replica holds every flow (``flows.gen`` tells them to re-read
the SDL) and only the owner of a UE's node has estimates to send it.

Clocks: the beats carry wall-clock time, so replicas on different hosts need their clocks
within a fraction of ``DEAD_AFTER_S`` (NTP keeps them to milliseconds).
"""

from __future__ import annotations

import hashlib
import logging
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass

from octoric.xapps.base.sdl import SdlStore

log = logging.getLogger("xapps.occ.shards")

ENV = "OCTORIC_OCC_REPLICA"
MEMBER = "member."
OWNER = "owner."
FLOWS_GEN = "flows.gen"  # changed by every flow registered or deleted
HEARTBEAT_S = 0.25
DEAD_AFTER_S = 1.0  # a takeover: <= DEAD_AFTER_S + HEARTBEAT_S + one subscription
SETTLE_S = 2 * HEARTBEAT_S  # a starting replica listens this long before it owns anything
FORGET_AFTER_S = 60.0  # a dead replica's member key is deleted after this
_ID_OK = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")


def replica_id(environ: dict[str, str] | None = None) -> str | None:
    """This process's replica ID (``OCTORIC_OCC_REPLICA``), None when it runs unsharded.
    Raises ValueError for an ID that could not be an SDL key part."""
    v = (environ if environ is not None else os.environ).get(ENV, "").strip()
    if not v:
        return None
    if len(v) > 63 or not set(v) <= _ID_OK:
        raise ValueError(f"{ENV}={v!r}: 1-63 characters of A-Z a-z 0-9 - _ .")
    return v


def rank(meid: str, replica: str) -> int:
    """The replica's weight for the node (rendezvous hashing)."""
    h = hashlib.blake2b(f"{meid}\0{replica}".encode(), digest_size=8).digest()
    return int.from_bytes(h, "big")


def owner_of(meid: str, live: Iterable[str]) -> str | None:
    """The live replica that owns node ``meid`` (None when there is none)."""
    best = None
    for r in live:
        key = (rank(meid, r), r)
        if best is None or key > best[0]:
            best = (key, r)
    return None if best is None else best[1]


@dataclass(frozen=True)
class View:
    """The live replicas as one replica sees them."""

    me: str
    live: tuple[str, ...]

    def owns(self, meid: str) -> bool:
        return owner_of(meid, self.live) == self.me


class Membership:
    """This replica's beat and its view of the others (``tick`` from one thread)."""

    def __init__(self, sdl: SdlStore, me: str, endpoints: dict[str, str]) -> None:
        self.sdl, self.me, self.endpoints = sdl, me, endpoints
        self.view: View | None = None  # None until the first read: owns nothing before it
        self.started = time.time()
        self.members: dict[str, dict[str, object]] = {}

    def tick(self) -> tuple[View | None, View] | None:
        """Beat, read the members; (old view, new view) when the live set changed."""
        now = time.time()
        self.sdl.set_json(f"{MEMBER}{self.me}",
                          {"at": now, "since": self.started, **self.endpoints})  # fmt: skip
        members = self.sdl.find_json(MEMBER)
        live, gone = [self.me], []
        self.members = {}
        for key, d in members.items():
            rid = key[len(MEMBER) :]
            at = d.get("at") if isinstance(d, dict) else None
            if not isinstance(at, int | float):
                continue
            self.members[rid] = d
            if rid != self.me and now - at <= DEAD_AFTER_S:
                live.append(rid)
            elif now - at > FORGET_AFTER_S:
                gone.append(key)
        if gone:
            self.sdl.delete(*gone)
        if self.view is None and now - self.started < SETTLE_S:
            return None  # a new replica first hears the others' beats: it claims no node early
        new = View(self.me, tuple(sorted(live)))
        old = self.view
        if old is not None and old.live == new.live:
            return None
        self.view = new
        return old, new
