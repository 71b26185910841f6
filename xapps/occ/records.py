"""SDL keys of the OCC xApp (namespace ``octoric.occ``) and ``UeRecord``, a UE's latest
estimate. Standard library only (read by a restarting xApp before the engine loads)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from octoric.xapps.base.identity import guami_str

FLOW, UE, CKPT, SUB = "flow.", "ue.", "ckpt.", "sub."
__all__ = ["CKPT", "FLOW", "SUB", "UE", "UeRecord", "guami_str"]


@dataclass
class UeRecord:
    """A UE's latest OCC estimate (rates bit/s), as ``GET /occ/v1/ues`` and the SDL hold it.
    ``ue`` is the UE key (``contracts.ue_key``); ``guami`` is None for a UE keyed by its DU
    (its F1AP ID is the key's low 32 bits, its node ``meid``)."""

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
        """``dataclasses.asdict(self)`` (every field is a scalar), without its deep copy: the
        SDL writer calls it for every UE every ``state_period_ms``."""
        return {
            "ue": self.ue, "guami": self.guami, "meid": self.meid, "t_ms": self.t_ms,
            "target_bps": self.target_bps, "fallback": self.fallback, "handover": self.handover,
            "bottleneck": self.bottleneck, "cp_bps": self.cp_bps,
            "frame_abw_bps": self.frame_abw_bps, "fair_share_bps": self.fair_share_bps,
            "frame_interval_ms": self.frame_interval_ms, "updated_at": self.updated_at,
        }  # fmt: skip

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> UeRecord:
        return cls(**{k: d[k] for k in cls.__dataclass_fields__})
