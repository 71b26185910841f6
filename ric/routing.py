"""RMR route tables, as O-RAN SC's route manager builds them.

A table is built from three sources: the platform's own routes (submgr <-> e2term, a1 <->
xApps), each registered xApp's descriptor (its rx messages and A1 policy types), and the
subscriptions submgr made (RIC_INDICATION of a sub_id to the subscriber). ``render`` gives the
text the RMR library reads from RMR_SEED_RT or receives in route-manager pushes (mtype 20).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from octoric.contracts import message_types as mt
from octoric.contracts import ports

# A host in a route table: a DNS name or an IPv4 address. Anything else could smuggle route
# syntax ("|", ",", ";", a newline) from a REST body into every RMR peer's table.
_HOST = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,251}[A-Za-z0-9])?")


def check_host(host: object, what: str = "host") -> str:
    """``host`` if it is a DNS name or IPv4 address; ValueError naming ``what`` otherwise."""
    if not isinstance(host, str) or not _HOST.fullmatch(host):
        raise ValueError(f"{what} must be a host name or IPv4 address, got {str(host)[:80]!r}")
    return host


def check_endpoint(endpoint: object, what: str = "endpoint") -> str:
    """``host:port`` with a valid host and a port in 1..65535; ValueError otherwise."""
    if not isinstance(endpoint, str):
        raise ValueError(f"{what} must be a 'host:port' string")
    host, sep, port = endpoint.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(
            f"{what} must be 'host:port' with a port in 1..65535, got {endpoint[:80]!r}"
        )
    check_host(host, what)
    return endpoint


@dataclass(frozen=True)
class Route:
    """``mse|<mtype>[,<sender>]|<sub_id>|<groups>``: each group gets a copy, round robin inside."""

    mtype: int
    groups: tuple[tuple[str, ...], ...]  # endpoints "host:port"; or (("%meid",),)
    sub_id: int = -1
    sender: str | None = None

    def line(self) -> str:
        key = f"{self.mtype},{self.sender}" if self.sender else str(self.mtype)
        targets = ";".join(",".join(g) for g in self.groups)
        return f"mse|{key}|{self.sub_id}|{targets}"


@dataclass(frozen=True)
class PlatformEndpoints:
    """Where the platform components listen for RMR (host:port)."""

    e2term: str = f"{ports.LOOPBACK}:{ports.E2TERM_RMR}"
    submgr: str = f"{ports.LOOPBACK}:{ports.SUBMGR_RMR}"
    a1: str = "127.0.0.1:4562"


@dataclass
class XappRoutes:
    """What a registered xApp receives: from its descriptor (messaging.ports rmr-data)."""

    name: str
    endpoint: str  # "host:port" of its RMR data port
    rx: list[int] = field(default_factory=list)
    tx: list[int] = field(default_factory=list)
    policies: list[int] = field(default_factory=list)

    @classmethod
    def from_descriptor(cls, descriptor: dict[str, Any], endpoint: str) -> XappRoutes:
        """Read rx/tx/policies from an O-RAN SC descriptor (``messaging.ports`` or ``rmr``)."""
        name = str(descriptor.get("xapp_name") or descriptor.get("name") or "xapp")
        rx: list[int] = []
        tx: list[int] = []
        policies: list[int] = []
        sources: list[dict[str, Any]] = []
        ports = (descriptor.get("messaging") or {}).get("ports") or []
        sources += [p for p in ports if isinstance(p, dict)]
        if isinstance(descriptor.get("rmr"), dict):
            sources.append(descriptor["rmr"])
        for src in sources:
            rx += [mt.number(m) for m in src.get("rxMessages", [])]
            tx += [mt.number(m) for m in src.get("txMessages", [])]
            policies += [int(p) for p in src.get("policies", [])]
        return cls(name, endpoint, sorted(set(rx)), sorted(set(tx)), sorted(set(policies)))


@dataclass(frozen=True)
class SubscriptionRoute:
    """RIC_INDICATION (and friends) of one E2 subscription to its subscribers."""

    sub_id: int
    endpoints: tuple[str, ...]


# Messages xApps send that go to the E2 node owning the message's meid.
TO_NODE = (mt.RIC_CONTROL_REQ,)
# Messages the platform handles itself, never routed to xApps by their descriptor alone.
PLATFORM_ONLY = {
    mt.RIC_SUB_RESP,
    mt.RIC_SUB_FAILURE,
    mt.RIC_SUB_DEL_RESP,
    mt.RIC_SUB_DEL_FAILURE,
    mt.RIC_E2_SETUP_REQ,
    mt.A1_POLICY_RESP,
    mt.A1_POLICY_QUERY,
    mt.RIC_INDICATION,
}


def build_routes(
    platform: PlatformEndpoints,
    xapps: Sequence[XappRoutes],
    subscriptions: Iterable[SubscriptionRoute] = (),
) -> list[Route]:
    routes: list[Route] = [
        # submgr -> the node's e2term; e2term's answers -> submgr
        Route(mt.RIC_SUB_REQ, ((platform.e2term,),)),
        Route(mt.RIC_SUB_DEL_REQ, ((platform.e2term,),)),
        Route(mt.RIC_SUB_RESP, ((platform.submgr,),)),
        Route(mt.RIC_SUB_FAILURE, ((platform.submgr,),)),
        Route(mt.RIC_SUB_DEL_RESP, ((platform.submgr,),)),
        Route(mt.RIC_SUB_DEL_FAILURE, ((platform.submgr,),)),
        Route(mt.RIC_SUB_DEL_REQUIRED, ((platform.submgr,),)),
        Route(mt.RAN_CONNECTED, ((platform.submgr,),)),  # e2term's node up/down/reset events
        Route(mt.RIC_CONTROL_REQ, ((platform.e2term,),)),
        Route(mt.A1_POLICY_RESP, ((platform.a1,),)),
        Route(mt.A1_POLICY_QUERY, ((platform.a1,),)),
    ]
    # Descriptor rx messages: every xApp that lists a type gets a copy (one group each).
    by_type: dict[int, list[str]] = {}
    for x in xapps:
        for m in x.rx:
            if m not in PLATFORM_ONLY and m not in TO_NODE:
                by_type.setdefault(m, []).append(x.endpoint)
        for pid in x.policies:
            routes.append(Route(mt.A1_POLICY_REQ, ((x.endpoint,),), sub_id=pid))
    for m, endpoints in sorted(by_type.items()):
        routes.append(Route(m, tuple((e,) for e in dict.fromkeys(endpoints))))
    for s in subscriptions:
        groups = tuple((e,) for e in dict.fromkeys(s.endpoints))
        if groups:
            routes.append(Route(mt.RIC_INDICATION, groups, sub_id=s.sub_id))
    return routes


_last_generation = 0


def next_generation() -> int:
    """A route-table generation larger than any this process made before (microseconds since
    the epoch, or the last one plus one): a restarted route manager's tables stay newer than
    the ones it pushed before."""
    global _last_generation
    _last_generation = max(time.time_ns() // 1000, _last_generation + 1)
    return _last_generation


def render(
    routes: Sequence[Route],
    table_id: str = "octoric",
    key: bytes = b"",
    generation: int | None = None,
) -> str:
    """The full-table text: ``newrt|start|id`` ... ``newrt|end|count``. With ``generation``
    (always when signed: ``next_generation()`` unless given), the end record carries
    ``|gen=<n>``: octoric's librmr installs a pushed table only if its generation is newer
    than the last one's (issue #43: a replayed table is refused). With ``key``, it then carries
    ``|sig=<hex>``, the HMAC-SHA256 of the lines before it and of itself without the
    signature, joined by newlines: octoric's librmr installs only tables signed with the run's
    key (``OCTORIC_RMR_RT_KEY``). O-RAN SC's RMR reads the count and ignores the extra
    fields."""
    if key and generation is None:
        generation = next_generation()
    end = f"newrt|end|{len(routes)}"
    if generation is not None:
        end += f"|gen={generation}"
    lines = [f"newrt|start|{table_id}", *(r.line() for r in routes), end]
    if key:
        sig = hmac.new(key, "\n".join(lines).encode(), hashlib.sha256).hexdigest()
        lines[-1] = f"{end}|sig={sig}"
    return "\n".join(lines) + "\n"
