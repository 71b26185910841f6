"""E2SM-RC REPORT style 4 (UE information) indications -> handover events for the engine.

octoric's gNBs (docs/sim.md, "RC REPORT") report, per UE, the RAN parameter 30001 "octoric
handover phase" (1 started, 2 completed, 3 failed and re-established) with the serving cell
(17011) and the source cell (30002). Phase 1 is a handover start, 2 and 3 its end. A report
without the phase parameter (another vendor's UE-information change) is not a handover event
and is counted as ``no_phase``. Faults raise ``RcInputError`` with a reason.
"""

from __future__ import annotations

from dataclasses import dataclass

from octoric.contracts.rc import PARAM_HO_PHASE, REPORT_PARAMS
from octoric.e2sm import rc
from octoric.e2sm.e2ap import RicIndication
from octoric.e2sm.errors import E2smError
from octoric.xapps.base.errors import XappError
from octoric.xapps.occ.records import guami_str


class RcInputError(XappError):
    def __init__(self, reason: str, message: str) -> None:
        self.reason = reason
        super().__init__(f"RC indication rejected ({reason}): {message}")


@dataclass(frozen=True)
class RcHandover:
    ue: int  # AMF-UE-NGAP-ID
    start: bool
    guami: str | None
    phase: int


def event_trigger() -> bytes:
    return rc.encode_rc(rc.event_trigger_ue_info())


def action_definition() -> bytes:
    return rc.encode_rc(rc.RcActionDefinition(rc.REPORT_STYLE_UE_INFORMATION, tuple(REPORT_PARAMS)))


def handovers(ind: RicIndication) -> tuple[list[RcHandover], int]:
    """The handover events of one RC indication, and how many UE entries carried none."""
    try:
        msg = rc.decode_rc(rc.RcIndicationMessage, ind.message)
    except (E2smError, ValueError, KeyError, TypeError) as e:
        raise RcInputError("undecodable", str(e)) from None
    entries = msg.ue_params or ()
    if not entries:
        raise RcInputError("not_ue_level", "no per-UE parameters (RC indication format 2 expected)")
    out: list[RcHandover] = []
    skipped = 0
    for ue, params in entries:
        phase = next(
            (
                p.value.value
                for p in params
                if p.id == PARAM_HO_PHASE and isinstance(p.value, rc.Element)
            ),
            None,
        )
        if ue.kind != "gNB-UEID" or ue.amf_ue_ngap_id is None or not isinstance(phase, int):
            skipped += 1
            continue
        if phase not in (1, 2, 3):
            skipped += 1
            continue
        out.append(RcHandover(ue.amf_ue_ngap_id, phase == 1, guami_str(ue.guami), phase))
    return out, skipped
