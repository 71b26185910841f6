"""The first thing a (re)started OCC xApp does, before numpy and the engine load: read the
registered flows and the UEs' latest estimates from the SDL and start sending feedback again.
Flows hear their UE's last estimate (``ts`` says when it was sent) until fresh indications
replace it."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from octoric.xapps.base.sdl import SdlStore
from octoric.xapps.occ.feedback import FeedbackSender, UeTarget
from octoric.xapps.occ.flows import Flow
from octoric.xapps.occ.records import FLOW, UE, UeRecord

if TYPE_CHECKING:
    from octoric.xapps.occ.native import NativeFeedback

log = logging.getLogger("xapps.occ.resume")


@dataclass
class Resumed:
    flows: int = 0
    records: dict[int, UeRecord] = field(default_factory=dict)
    stale_keys: set[str] = field(default_factory=set)  # expired or unreadable SDL entries


def resume_feedback(
    sdl: SdlStore,
    feedback: FeedbackSender | NativeFeedback,
    expire_s: float,
    targets: bool = True,
) -> Resumed:
    """The flows, and the fresh UE records with their targets (``targets``: sent to the flows
    at once; a replica leaves that to the owner of each UE's node)."""
    out = Resumed()
    for key, d in sdl.find_json(FLOW).items():
        try:
            feedback.add(Flow.from_json(d))
            out.flows += 1
        except (TypeError, ValueError, KeyError) as e:
            log.warning("SDL flow %s unreadable, ignored: %s", key, e)
            out.stale_keys.add(key)
    out.records, stale = fresh_records(sdl, expire_s)
    out.stale_keys |= stale
    if targets:
        for rec in out.records.values():
            feedback.update(rec.ue, UeTarget(rec.target_bps, rec.fallback, rec.guami, rec.t_ms))
    return out


def fresh_records(sdl: SdlStore, expire_s: float) -> tuple[dict[int, UeRecord], set[str]]:
    """The UE records in the SDL updated within ``expire_s``, by UE; and the keys of the
    others (expired or unreadable)."""
    now = time.time()
    records: dict[int, UeRecord] = {}
    stale: set[str] = set()
    for key, d in sdl.find_json(UE).items():
        try:
            rec = UeRecord.from_json(d)
        except (TypeError, KeyError) as e:
            log.warning("SDL UE record %s unreadable, ignored: %s", key, e)
            stale.add(key)
            continue
        if now - rec.updated_at > expire_s:
            stale.add(key)
            continue
        records[rec.ue] = rec
    return records, stale
