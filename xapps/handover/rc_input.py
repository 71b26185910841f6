"""E2SM-RC REPORT style 4 (UE information) for the handover xApp: the subscription it asks
for and the decoding of its indications into the detector's ``UeInfo`` entries.

octoric's gNBs (docs/sim.md, "RC REPORT") report, per UE, octoric's handover phase
(``contracts.rc.PARAM_HO_PHASE``) with the serving cell (``PARAM_NR_CELL``) and the source
cell (``PARAM_SOURCE_CELL``). Faults raise ``RcInputError`` with a reason (a counter key).
"""

from __future__ import annotations

from octoric.contracts.rc import (
    PARAM_HO_PHASE,
    PARAM_INTERRUPTION_MS,
    PARAM_NR_CELL,
    PARAM_SOURCE_CELL,
    REPORT_PARAMS,
)
from octoric.e2sm import rc
from octoric.e2sm.e2ap import RicIndication
from octoric.e2sm.errors import E2smError
from octoric.e2sm.rc_fast import RcIndicationDecoder
from octoric.xapps.base.errors import XappError
from octoric.xapps.base.identity import guami_str
from octoric.xapps.handover.detector import UeInfo


class RcInputError(XappError):
    def __init__(self, reason: str, message: str) -> None:
        self.reason = reason
        super().__init__(f"RC indication rejected ({reason}): {message}")


def event_trigger() -> bytes:
    return rc.encode_rc(rc.event_trigger_ue_info())


def action_definition() -> bytes:
    return rc.encode_rc(rc.RcActionDefinition(rc.REPORT_STYLE_UE_INFORMATION, tuple(REPORT_PARAMS)))


def _element(params: tuple[rc.RanParam, ...], pid: int) -> object:
    return next(
        (p.value.value for p in params if p.id == pid and isinstance(p.value, rc.Element)), None
    )


def _nci(v: object) -> int | None:
    return v.value if isinstance(v, rc.Bits) else None


def ue_infos(ind: RicIndication, meid: str, decoder: RcIndicationDecoder) -> list[UeInfo]:
    """The UE entries of one RC indication from node ``meid`` (``decoder`` reads Format 2
    directly and hands anything else to the generic codec)."""
    try:
        msg = decoder.decode(ind.message)
    except E2smError as e:
        raise RcInputError("undecodable", str(e)) from None
    entries = msg.ue_params or ()
    if not entries:
        raise RcInputError("not_ue_level", "no per-UE parameters (RC indication format 2 expected)")
    out = []
    for ue, params in entries:
        phase = _element(params, PARAM_HO_PHASE)
        gap = _element(params, PARAM_INTERRUPTION_MS)
        known = ue.kind == "gNB-UEID" and ue.amf_ue_ngap_id is not None
        out.append(
            UeInfo(
                ue.amf_ue_ngap_id if known else None,
                guami_str(ue.guami) if known else None,
                meid,
                _nci(_element(params, PARAM_NR_CELL)),
                phase if isinstance(phase, int) else None,
                _nci(_element(params, PARAM_SOURCE_CELL)),
                float(gap)
                if isinstance(gap, int) and not isinstance(gap, bool) and gap >= 0
                else None,
            )
        )
    return out
