"""octoric's RMR message payloads for OCC (JSON, versioned; schemas in docs/occ.md and the
``*.schema.json`` files next to this module).

- 30500 OCTORIC_ABW_REPORT: the OCC xApp publishes one per RIC indication, with every UE of it;
- 30501 OCTORIC_HO_EVENT: a handover of one UE starts or ends (the handover xApp sends them;
  OCC uses them as engine handover events). ``parse_ho_event`` raises ``HoEventError``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from octoric.xapps.base.errors import XappError
from octoric.xapps.occ.batch import AbwBatch, Bottleneck

ABW_REPORT = 30500
HO_EVENT = 30501
ABW_SCHEMA = "octoric.abw_report"
HO_SCHEMA = "octoric.ho_event"
VERSION = 1
SCHEMA_DIR = Path(__file__).parent
BOTTLENECK_NAMES = {int(b): b.name.lower() for b in Bottleneck}


def _rate(x: float) -> int | None:
    return round(x) if math.isfinite(x) else None


def abw_report(
    batch: AbwBatch,
    meid: str,
    sub_id: int,
    sn: int | None,
    n_granules: int,
    guamis: list[str | None],
    sent_at: float,
) -> dict[str, Any]:
    """The 30500 payload of one ingested indication (rates bit/s; None where not finite)."""
    t0 = batch.t_ms - n_granules + 1
    ues = []
    tg = np.where(np.isfinite(batch.target_bps_granules), batch.target_bps_granules, -1.0)
    tg_list = np.rint(tg).astype(np.int64).tolist()
    rows = zip(
        batch.ue_ids.tolist(), batch.target_bps.tolist(), batch.cp_bps.tolist(),
        batch.frame_abw_bps.tolist(), batch.fair_share_bps.tolist(),
        batch.cp_prime_bps.tolist(), batch.frame_interval_ms.tolist(),
        batch.frame_aware.tolist(), batch.bottleneck.tolist(), batch.handover.tolist(),
        batch.fallback.tolist(), batch.outage.tolist(), tg_list, guamis, strict=True,
    )  # fmt: skip
    for ue, tgt, cp, b, cf, cpp, d, aware, bn, ho, fb, out, gran, guami in rows:
        ues.append(
            {
                "ue": ue,
                "guami": guami,
                "target_bps": _rate(tgt),
                "fallback": fb,
                "handover": ho,
                "outage": out,
                "bottleneck": BOTTLENECK_NAMES.get(bn, "unknown"),
                "cp_bps": _rate(cp),
                "frame_abw_bps": _rate(b),
                "fair_share_bps": _rate(cf),
                "cp_prime_bps": _rate(cpp),
                "frame_interval_ms": d,
                "frame_aware": aware,
                "target_bps_granules": [None if v < 0 else v for v in gran],
            }
        )
    return {
        "schema": ABW_SCHEMA,
        "version": VERSION,
        "meid": meid,
        "sub_id": sub_id,
        "sn": sn,
        "t0_ms": t0,
        "t_ms": batch.t_ms,
        "granule_ms": 1,
        "n_granules": n_granules,
        "sent_at": round(sent_at, 6),
        "ues": ues,
    }


def encode(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


class HoEventError(XappError):
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


def load_schema(name: str) -> dict[str, Any]:
    """``abw_report`` or ``ho_event``: the JSON schema (draft 2020-12) shipped here."""
    data: dict[str, Any] = json.loads((SCHEMA_DIR / f"{name}.schema.json").read_text())
    return data
