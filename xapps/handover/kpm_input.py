"""UE-level E2SM-KPM for the handover xApp's KPM path (gNBs without RC reports, such as a
stock srsRAN_Project): the subscription it asks for and the decoding of an indication into
the detector's ``UeSighting``s.

The subscription: REPORT style 4 (UE-level, every UE matching "isStat present"), one
measurement every gNB offers (``RRU.PrbUsedDl``), ``granularity_ms`` granules, one report
every ``period_ms``. A UE's sighting spans its first to its last granule with a value:
granules in which the gNB did not serve it carry no value (noValue), so the span's ends are
where the UE arrived or left, to a granule. Faults raise ``KpmInputError`` with a reason.
"""

from __future__ import annotations

import math

import numpy as np

from octoric.contracts import kpm as K
from octoric.e2sm import kpm
from octoric.e2sm.e2ap import RicIndication
from octoric.e2sm.errors import E2smError
from octoric.e2sm.indication import parse_indication
from octoric.xapps.base.errors import XappError
from octoric.xapps.base.identity import guami_str
from octoric.xapps.handover.detector import UeSighting

MEASUREMENT = K.PRB_USED_DL


class KpmInputError(XappError):
    def __init__(self, reason: str, message: str) -> None:
        self.reason = reason
        super().__init__(f"KPM indication rejected ({reason}): {message}")


def event_trigger(period_ms: int) -> bytes:
    return kpm.encode_kpm(kpm.KpmEventTrigger(period_ms))


def action_definition(granularity_ms: int) -> bytes:
    return kpm.encode_kpm(kpm.action_definition_style4((MEASUREMENT,), granularity_ms))


def sightings(ind: RicIndication, meid: str, granularity_ms: int) -> list[UeSighting]:
    """The UEs one KPM indication from node ``meid`` saw served, with their RAN-time spans."""
    try:
        cols = parse_indication(ind.header, ind.message, granularity_ms=granularity_ms)
    except E2smError as e:
        raise KpmInputError("undecodable", str(e)) from None
    gran = cols.granularity_ms or granularity_ms
    if not math.isfinite(cols.collect_start) or cols.collect_start <= 0:
        raise KpmInputError("no_time", "the indication header has no collection start time")
    served = np.asarray(~np.isnan(cols.values).all(axis=1))  # (ue, granule): any value at all
    out = []
    for i, ue in enumerate(cols.ue_ids):
        if ue is None:
            raise KpmInputError("not_ue_level", "a cell-level report (style 4 expected)")
        if ue.kind != "gNB-UEID" or ue.amf_ue_ngap_id is None:
            continue  # no identity that survives a handover
        idx = np.flatnonzero(served[i])
        if not len(idx):
            continue
        first = round(float(cols.timestamps[idx[0]]) * 1000)
        last = round(float(cols.timestamps[idx[-1]]) * 1000) + gran
        out.append(UeSighting(ue.amf_ue_ngap_id, guami_str(ue.guami), meid, first, last))
    return out
