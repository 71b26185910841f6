"""octoric's RMR message payloads for OCC (JSON, versioned; schemas in docs/occ.md and the
``*.schema.json`` files next to this module).

- 30500 OCTORIC_ABW_REPORT: the OCC xApp publishes one per RIC indication, with every UE of it;
- 30501 OCTORIC_HO_EVENT: a handover of one UE starts or ends (the handover xApp sends them;
  OCC uses them as engine handover events). ``parse_ho_event`` raises ``HoEventError``.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np

from octoric.contracts import message_types as mt
from octoric.contracts.schemas import ABW_SCHEMA, VERSION
from octoric.xapps.occ.batch import AbwBatch, Bottleneck

ABW_REPORT = mt.OCTORIC_ABW_REPORT
HO_EVENT = mt.OCTORIC_HO_EVENT
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
