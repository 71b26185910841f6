"""30501 OCTORIC_HO_EVENT: one UE's handover starts or ends (JSON, versioned).

The handover xApp publishes it; the OCC xApp and researchers' xApps consume it. Schema:
``schemas.load("ho_event")`` (contracts/schemas/ho_event.schema.json, docs/handover.md).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from octoric.contracts.schemas import HO_SCHEMA, VERSION


class HoEventError(ValueError):
    """A 30501 payload is malformed; ``reason`` is the counter key."""

    def __init__(self, reason: str, message: str) -> None:
        self.reason = reason
        super().__init__(f"OCTORIC_HO_EVENT rejected ({reason}): {message}")


@dataclass(frozen=True)
class HoEvent:
    """One UE's handover starts (``event == "start"``) or ends (``"end"``)."""

    ue: int  # AMF-UE-NGAP-ID
    event: str
    t_ms: int | None = None  # unix ms; None: "now" in the engine's clock
    guami: str | None = None
    source_meid: str | None = None
    target_meid: str | None = None
    source_cell: str | None = None
    target_cell: str | None = None

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"schema": HO_SCHEMA, "version": VERSION}
        d.update({k: v for k, v in self.__dict__.items() if v is not None})
        return d


def parse_ho_event(payload: bytes) -> HoEvent:
    try:
        obj = json.loads(payload)
    except (ValueError, UnicodeDecodeError) as e:
        raise HoEventError("not_json", str(e)) from None
    if not isinstance(obj, dict):
        raise HoEventError("not_object", "the payload must be a JSON object")
    if obj.get("schema", HO_SCHEMA) != HO_SCHEMA:
        raise HoEventError("schema", f"schema must be {HO_SCHEMA!r}, got {obj.get('schema')!r}")
    if obj.get("version") != VERSION:
        raise HoEventError("version", f"version must be {VERSION}, got {obj.get('version')!r}")
    ue = obj.get("ue")
    if not isinstance(ue, int) or isinstance(ue, bool) or ue < 0:
        raise HoEventError("ue", f"'ue' must be an AMF-UE-NGAP-ID >= 0, got {ue!r}")
    ev = obj.get("event")
    if ev not in ("start", "end"):
        raise HoEventError("event", f"'event' must be 'start' or 'end', got {ev!r}")
    t = obj.get("t_ms")
    if t is not None and (not isinstance(t, int) or isinstance(t, bool) or t < 0):
        raise HoEventError("t_ms", f"'t_ms' must be unix milliseconds, got {t!r}")
    strs = {}
    for k in ("guami", "source_meid", "target_meid", "source_cell", "target_cell"):
        v = obj.get(k)
        if v is not None and not isinstance(v, str):
            raise HoEventError(k, f"'{k}' must be a string")
        strs[k] = v
    return HoEvent(ue, ev, t, **strs)
