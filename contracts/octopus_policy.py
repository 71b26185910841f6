"""A1 policy type 30500 "octopus-drop-policy" and RMR 30502 OCTORIC_OCTOPUS_STATUS.

The policy's JSON schema is ``schemas.load("octopus_drop_policy")`` (the ``create_schema`` a1
validates instances against); :func:`policy_type` is the whole A1 policy type an operator (or
``octoric run``) creates. :class:`DropPolicy` is the parsed instance the octopus xApp plans
with; :class:`OctopusStatus` is one 30502 message. docs/octopus.md has examples.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from octoric.contracts.schemas import (
    OCTOPUS_POLICY_TYPE_ID,
    OCTOPUS_POLICY_TYPE_NAME,
    OCTOPUS_STATUS_SCHEMA,
    load,
)

DEFAULT_DRB = 1
STATES = ("pending", "enforced", "not_enforced", "removed")


class PolicyError(ValueError):
    """An instance that does not fit the policy type; ``reason`` is the counter key."""

    def __init__(self, reason: str, message: str) -> None:
        self.reason = reason
        super().__init__(message)


def policy_type() -> dict[str, Any]:
    """The A1 policy type (``PUT /A1-P/v2/policytypes/30500`` body)."""
    return {
        "name": OCTOPUS_POLICY_TYPE_NAME,
        "description": "Octopus in-network content adaptation: the gNB drops whole "
        "application messages by the priority and bitrate thresholds in their headers",
        "policy_type_id": OCTOPUS_POLICY_TYPE_ID,
        "create_schema": load("octopus_drop_policy"),
    }


@dataclass(frozen=True)
class Slice:
    sst: int
    sd: str | None = None


@dataclass(frozen=True)
class DropPolicy:
    """One policy instance, defaults filled in. ``meids``/``ues`` empty: not restricted."""

    enable: bool
    meids: tuple[str, ...] = ()
    ues: tuple[int, ...] = ()
    slices: tuple[Slice, ...] = ()
    drb_ids: tuple[int, ...] = (DEFAULT_DRB,)
    priority_levels: int = 8
    bitrate_window_ms: int = 50
    drop_by_message: bool = True
    drop_by_bitrate: bool = True
    protect_in_flight: bool = True

    @classmethod
    def from_json(cls, body: Any) -> DropPolicy:
        """An instance already validated against ``load("octopus_drop_policy")`` (a1 does;
        the xApp checks again with jsonschema, as this module is standard library only)."""
        if not isinstance(body, dict) or not isinstance(body.get("enable"), bool):
            raise PolicyError("schema", "a policy is a JSON object with a boolean 'enable'")
        scope = body.get("scope") or {}
        return cls(
            enable=body["enable"],
            meids=tuple(scope.get("meids") or ()),
            ues=tuple(scope.get("ues") or ()),
            slices=tuple(Slice(s["sst"], s.get("sd")) for s in scope.get("slices") or ()),
            drb_ids=tuple(scope.get("drb_ids") or (DEFAULT_DRB,)),
            priority_levels=body.get("priority_levels", 8),
            bitrate_window_ms=body.get("bitrate_window_ms", 50),
            drop_by_message=body.get("drop_by_message", True),
            drop_by_bitrate=body.get("drop_by_bitrate", True),
            protect_in_flight=body.get("protect_in_flight", True),
        )

    def settings(self) -> tuple[bool, int, int, bool, bool, bool]:
        """What the gNB is told (RC action 100 parameters 2-7): equal settings never conflict."""
        return (
            self.enable, self.priority_levels, self.bitrate_window_ms, self.drop_by_message,
            self.drop_by_bitrate, self.protect_in_flight,
        )  # fmt: skip


@dataclass(frozen=True)
class DropCounters:
    packets: int = 0
    bytes: int = 0
    msgs_by_message: int = 0
    msgs_by_bitrate: int = 0


@dataclass(frozen=True)
class OctopusStatus:
    """One 30502 message: a policy's state on one node for one UE and DRB."""

    policy_id: str
    meid: str
    state: str  # one of STATES
    ue: int | None = None
    drb_id: int | None = None
    reason: str | None = None
    t_ms: int | None = None
    drops: DropCounters | None = field(default=None)

    def to_json(self) -> bytes:
        d: dict[str, Any] = {
            "schema": OCTOPUS_STATUS_SCHEMA,
            "version": 1,
            "policy_type_id": OCTOPUS_POLICY_TYPE_ID,
        }
        for k, v in asdict(self).items():
            if v is not None:
                d[k] = v
        return json.dumps(d, separators=(",", ":")).encode()

    @classmethod
    def from_json(cls, payload: bytes) -> OctopusStatus:
        try:
            d = json.loads(payload)
            if not isinstance(d, dict) or d.get("state") not in STATES:
                raise ValueError("not a status object with a known state")
            for k in ("policy_id", "meid"):
                if not isinstance(d.get(k), str):
                    raise ValueError(f"{k} missing")
        except ValueError as e:
            raise PolicyError("bad_status", f"OCTORIC_OCTOPUS_STATUS rejected: {e}") from None
        drops = d.get("drops")
        return cls(
            d["policy_id"], d["meid"], d["state"], d.get("ue"), d.get("drb_id"), d.get("reason"),
            d.get("t_ms"), None if drops is None else DropCounters(**drops),
        )  # fmt: skip
