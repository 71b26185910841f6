"""Policies -> per-target controls and a verdict per policy (pure: no I/O, no clock).

A *target* is (meid, UE, DRB). A policy names UEs (UE keys, ``contracts.ue_key``), DRBs and
optionally nodes; without nodes it goes to every connected node offering E2SM-RC, and a UE
counts as enforced where one node acknowledged it (the others answer that they do not serve
the UE). A UE keyed by its DU's F1AP ID goes to that DU only. Two live
policies that cover the same UE and DRB on a common node with different settings conflict: the
later one is refused.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from octoric.contracts import ue_key
from octoric.contracts.octopus_policy import DropCounters, DropPolicy

PENDING, ENFORCED, NOT_ENFORCED, REMOVED = "pending", "enforced", "not_enforced", "removed"


@dataclass(frozen=True)
class Target:
    meid: str
    ue: int
    drb: int


@dataclass
class TargetState:
    state: str = PENDING
    reason: str | None = None
    drops: DropCounters | None = None
    answered: bool = False  # some answer (ACK or failure) came since the policy was set
    # a control switching the dropper on went out: whatever its answer (a timeout too), the
    # gNB may have it on, so a DELETE must switch it off
    switched_on: bool = False


@dataclass
class PolicyState:
    pid: str
    policy: DropPolicy
    seq: int  # creation order: the older wins a conflict
    deleting: bool = False
    refused: str | None = None  # refused as a whole (conflict, unsupported scope)
    targets: dict[Target, TargetState] = field(default_factory=dict)


def unsupported(policy: DropPolicy) -> str | None:
    """Why this xApp cannot enforce the policy at all, or None."""
    if not policy.ues:
        return (
            "scope.ues is required: no gNB tells the xApp which UEs it serves "
            "(E2SM-RC has no UE list), so name the UE keys (AMF-UE-NGAP-IDs, or the keys "
            "the OCC xApp lists for UEs a DU names by F1AP ID)"
        )
    if policy.slices:
        return (
            "scope.slices is not supported: no gNB reports a UE's S-NSSAI to this xApp; "
            "name the UEs instead"
        )
    return None


def overlaps(a: DropPolicy, b: DropPolicy) -> bool:
    if not set(a.ues) & set(b.ues) or not set(a.drb_ids) & set(b.drb_ids):
        return False
    return not a.meids or not b.meids or bool(set(a.meids) & set(b.meids))


def conflict(new: PolicyState, others: list[PolicyState]) -> str | None:
    """The first older live policy whose scope overlaps ``new`` with other settings."""
    for o in sorted(others, key=lambda p: p.seq):
        if o.pid == new.pid or o.deleting or o.refused or o.seq > new.seq:
            continue
        if overlaps(new.policy, o.policy) and new.policy.settings() != o.policy.settings():
            common = sorted(set(new.policy.ues) & set(o.policy.ues))
            ues = ", ".join(map(str, common[:5])) + ("..." if len(common) > 5 else "")
            return f"conflicts with policy {o.pid!r} (other settings for UE {ues})"
    return None


def targets(policy: DropPolicy, rc_nodes: list[str]) -> list[Target]:
    """Where the policy goes: its nodes (or every RC node) x UEs x DRBs; a DU's UE key only
    to its DU."""
    meids = list(policy.meids) or rc_nodes
    return [Target(m, ue, drb) for m in meids for ue in policy.ues for drb in policy.drb_ids
            if ue_key.on_node(ue, m)]  # fmt: skip


def verdict(p: PolicyState) -> tuple[str, str | None]:
    """(state, reason) of the policy as a whole: enforced when every (UE, DRB) is enforced on
    some node; pending while answers are missing; otherwise not enforced, with the reasons."""
    if p.refused:
        return NOT_ENFORCED, p.refused
    by_ue: dict[tuple[int, int], list[tuple[Target, TargetState]]] = {}
    for t, s in p.targets.items():
        by_ue.setdefault((t.ue, t.drb), []).append((t, s))
    if not by_ue and not any(ue_key.du_parts(ue) for ue in p.policy.ues):
        return NOT_ENFORCED, "no node to send it to (no connected E2 node offers E2SM-RC)"
    missing = [  # a DU's UE key whose DU is not connected (or not among the policy's nodes)
        f"UE {ue}: its DU is not among the connected E2SM-RC nodes the policy names"
        for ue in p.policy.ues
        if not any((ue, drb) in by_ue for drb in p.policy.drb_ids)
    ]
    pending = False
    for (ue, drb), items in sorted(by_ue.items()):
        if any(s.state == ENFORCED for _, s in items):
            continue
        if any(s.state == PENDING for _, s in items):
            pending = True
            continue
        reasons = "; ".join(f"{t.meid}: {s.reason}" for t, s in items)
        missing.append(f"UE {ue} DRB {drb}: {reasons}")
    if missing:
        return NOT_ENFORCED, " | ".join(missing[:10]) + (" | ..." if len(missing) > 10 else "")
    if pending:
        return PENDING, None
    return ENFORCED, None
