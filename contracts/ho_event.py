"""30501 OCTORIC_HO_EVENT: a UE's handover starts, completes, fails or ping-pongs (JSON).

The handover xApp publishes it (RMR 30501, webhooks, the SSE stream carry the same JSON);
the OCC xApp and application servers consume it. Schema: ``schemas.load("ho_event")``
(contracts/schemas/ho_event.schema.json, docs/handover.md). Version 2: version 1 had one
``end`` where version 2 says ``complete`` or ``failure`` and adds ``ping_pong``; a reader
of version 1 rejects version 2 by its ``version`` (a new major breaks readers).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from octoric.contracts.schemas import HO_SCHEMA

HO_VERSION = 2
START, COMPLETE, FAILURE, PING_PONG = "start", "complete", "failure", "ping_pong"
KINDS = (START, COMPLETE, FAILURE, PING_PONG)
ENDS = (COMPLETE, FAILURE)  # a handover in progress is over
PATHS = ("rc", "kpm")  # how it was detected: E2SM-RC REPORT, or UE-level KPM reports


class HoEventError(ValueError):
    """A 30501 payload is malformed; ``reason`` is the counter key."""

    def __init__(self, reason: str, message: str) -> None:
        self.reason = reason
        super().__init__(f"OCTORIC_HO_EVENT rejected ({reason}): {message}")


@dataclass(frozen=True)
class HoEvent:
    """One handover event of one UE (``event`` one of ``KINDS``)."""

    ue: int  # AMF-UE-NGAP-ID
    event: str
    t_ms: int | None = None  # unix ms of detection; None: "now" in the reader's clock
    guami: str | None = None
    source_meid: str | None = None
    target_meid: str | None = None
    source_cell: str | None = None  # NR CGI ``<PLMN hex>:<NCI hex>``
    target_cell: str | None = None
    id: str | None = None  # unique per event (deduplication across paths and retries)
    path: str | None = None  # "rc" | "kpm"
    interruption_ms: float | None = None  # complete/failure: the UE's interruption at the RAN
    cause: str | None = None  # failure: why
    started_ms: int | None = None  # complete/failure/ping_pong: when its start was detected

    @property
    def is_start(self) -> bool:
        return self.event == START

    @property
    def is_end(self) -> bool:
        return self.event in ENDS

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"schema": HO_SCHEMA, "version": HO_VERSION}
        d.update({k: v for k, v in self.__dict__.items() if v is not None})
        return d


_STRS = ("guami", "source_meid", "target_meid", "source_cell", "target_cell", "id", "cause")
_INTS = ("t_ms", "started_ms")


def parse_ho_event(payload: bytes) -> HoEvent:
    try:
        obj = json.loads(payload)
    except (ValueError, UnicodeDecodeError) as e:
        raise HoEventError("not_json", str(e)) from None
    return ho_event_from_json(obj)


def ho_event_from_json(obj: Any) -> HoEvent:
    if not isinstance(obj, dict):
        raise HoEventError("not_object", "the payload must be a JSON object")
    if obj.get("schema", HO_SCHEMA) != HO_SCHEMA:
        raise HoEventError("schema", f"schema must be {HO_SCHEMA!r}, got {obj.get('schema')!r}")
    if obj.get("version") != HO_VERSION:
        raise HoEventError("version", f"version must be {HO_VERSION}, got {obj.get('version')!r}")
    ue = obj.get("ue")
    if not isinstance(ue, int) or not _is_uint(ue):
        raise HoEventError("ue", f"'ue' must be an AMF-UE-NGAP-ID >= 0, got {ue!r}")
    ev = obj.get("event")
    if ev not in KINDS:
        raise HoEventError("event", f"'event' must be one of {', '.join(KINDS)}, got {ev!r}")
    kw: dict[str, Any] = {}
    for k in _INTS:
        v = obj.get(k)
        if v is not None and not _is_uint(v):
            raise HoEventError(k, f"'{k}' must be unix milliseconds, got {v!r}")
        kw[k] = v
    for k in _STRS:
        v = obj.get(k)
        if v is not None and not isinstance(v, str):
            raise HoEventError(k, f"'{k}' must be a string")
        kw[k] = v
    path = obj.get("path")
    if path is not None and path not in PATHS:
        raise HoEventError("path", f"'path' must be one of {', '.join(PATHS)}, got {path!r}")
    ims = obj.get("interruption_ms")
    if ims is not None and (
        not isinstance(ims, int | float) or isinstance(ims, bool) or not 0 <= ims < 1e9
    ):
        raise HoEventError("interruption_ms", f"'interruption_ms' must be >= 0, got {ims!r}")
    return HoEvent(ue, ev, path=path, interruption_ms=ims, **kw)


def _is_uint(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0
