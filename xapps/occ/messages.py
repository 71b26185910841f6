"""octoric's RMR message payloads for OCC (JSON, versioned; schemas in docs/occ.md and the
``*.schema.json`` files next to this module).

- 30500 OCTORIC_ABW_REPORT: the OCC xApp publishes one per RIC indication, with every UE of it;
- 30501 OCTORIC_HO_EVENT: a handover of one UE starts or ends (the handover xApp sends them;
  OCC uses them as engine handover events). ``parse_ho_event`` raises ``HoEventError``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import orjson

from octoric.contracts import message_types as mt
from octoric.contracts.schemas import ABW_SCHEMA, VERSION
from octoric.xapps.occ.batch import AbwBatch, Bottleneck

ABW_REPORT = mt.OCTORIC_ABW_REPORT
HO_EVENT = mt.OCTORIC_HO_EVENT
BOTTLENECK_NAMES = {int(b): b.name.lower() for b in Bottleneck}


def _rates(a: npt.NDArray[np.float64]) -> list[int | None]:
    """Rates as integer bit/s (Python's round(): half to even), None where not finite or
    beyond int64."""
    ok = np.isfinite(a) & (np.abs(a) < 2.0**62)
    out: list[int | None] = np.rint(np.where(ok, a, 0.0)).astype(np.int64).tolist()
    if not ok.all():
        # beyond 2^62: the int itself while JSON's int64 (orjson) holds it, else None, as for
        # inf: a corrupted indication's absurd rate must not fail the report's encoding
        out = [
            v if good else (round(x) if -(2.0**63) <= x < 2.0**63 else None)
            for v, good, x in zip(out, ok.tolist(), a.tolist(), strict=True)
        ]
    return out


def abw_report(
    batch: AbwBatch,
    meid: str,
    sub_id: int,
    sn: int | None,
    n_granules: int,
    guamis: list[str | None],
    sent_at: float,
) -> dict[str, Any]:
    """The 30500 payload of one ingested indication (rates bit/s; None where not finite).
    Columns are converted whole (numpy), then zipped into the per-UE objects the schema has."""
    t0 = batch.t_ms - n_granules + 1
    g = batch.target_bps_granules
    ok = np.isfinite(g) & (g >= 0) & (g < 2.0**62)
    gran: list[list[int | None]] = np.rint(np.where(ok, g, 0.0)).astype(np.int64).tolist()
    if not ok.all():
        gran = [
            [v if k else None for v, k in zip(row, krow, strict=True)]
            for row, krow in zip(gran, ok.tolist(), strict=True)
        ]
    names = [BOTTLENECK_NAMES.get(b, "unknown") for b in batch.bottleneck.tolist()]
    cols = (
        batch.ue_ids.tolist(), guamis, _rates(batch.target_bps), batch.fallback.tolist(),
        batch.handover.tolist(), batch.outage.tolist(), names, _rates(batch.cp_bps),
        _rates(batch.frame_abw_bps), _rates(batch.fair_share_bps), _rates(batch.cp_prime_bps),
        batch.frame_interval_ms.tolist(), batch.frame_aware.tolist(), gran,
    )  # fmt: skip
    ues = [
        {"ue": ue, "guami": gm, "target_bps": tgt, "fallback": fb, "handover": ho,
         "outage": out, "bottleneck": bn, "cp_bps": cp, "frame_abw_bps": b,
         "fair_share_bps": cf, "cp_prime_bps": cpp, "frame_interval_ms": d,
         "frame_aware": aware, "target_bps_granules": gr}
        for ue, gm, tgt, fb, ho, out, bn, cp, b, cf, cpp, d, aware, gr in zip(*cols, strict=True)
    ]  # fmt: skip
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
    """Compact JSON (orjson: the report is encoded per indication; ~10x json's speed, the same
    bytes for these payloads)."""
    return orjson.dumps(obj)
