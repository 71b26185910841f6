"""The A1-P v2 REST paths (O-RAN.WG2.A1AP-v03.01, as O-RAN SC's A1 mediator serves them, and
octoric's a1-lite): where an operator creates a policy type and puts a policy instance."""

from __future__ import annotations

PREFIX = "/A1-P/v2"


def policy_type_path(type_id: int | str) -> str:
    """``/A1-P/v2/policytypes/{type_id}`` (``type_id`` may be a route placeholder)."""
    return f"{PREFIX}/policytypes/{type_id}"


def policy_path(type_id: int | str, instance_id: str) -> str:
    """``/A1-P/v2/policytypes/{type_id}/policies/{instance_id}``."""
    return f"{policy_type_path(type_id)}/policies/{instance_id}"
