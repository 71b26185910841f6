"""SDL keys of the OCC xApp (namespace ``octoric.occ``) and ``UeRecord``, a UE's latest
estimate. Standard library only (read by a restarting xApp before the engine loads)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

FLOW, UE, CKPT, SUB = "flow.", "ue.", "ckpt.", "sub."


def guami_str(g: Any) -> str | None:
    """``<PLMN hex>:<AMF region>:<AMF set>:<AMF pointer>`` of an ``e2sm.common.Guami``, e.g.
    ``00f110:1:1:0``."""
    if g is None:
        return None
    return f"{g.plmn.hex()}:{g.amf_region_id}:{g.amf_set_id}:{g.amf_pointer}"


@dataclass
class UeRecord:
    """A UE's latest OCC estimate (rates bit/s), as ``GET /occ/v1/ues`` and the SDL hold it."""

    ue: int
    guami: str | None
    meid: str
    t_ms: int
    target_bps: float
    fallback: bool
    handover: bool
    bottleneck: str
    cp_bps: float
    frame_abw_bps: float
    fair_share_bps: float
    frame_interval_ms: int
    updated_at: float  # unix s

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> UeRecord:
        return cls(**{k: d[k] for k in cls.__dataclass_fields__})
