"""Which E2SM-KPM version a node speaks, and what each version may carry.

octoric reads KPM v02.03, v03.00, v04.00 and v05.00 into one typed model (``kpm``). On the wire:

- v03.00 -> v04.00 -> v05.00 add only extension additions (v04: measurement labels
  ``cellGlobalID`` / ``beamID``, ``matchCondReportList``, the ``notSatisfied`` value; v05: jobs,
  ``jobID``, action / indication Format 255, integrated report styles), so one module
  (``asn1/e2sm-kpm.asn``) decodes all three, and what a node of an older version cannot take
  is refused before it is sent (``needs``).
- v02.03 differs from v03.00 in one root type: ``TimeStamp`` is 4 octets (the seconds of an
  NTP time stamp) instead of 8. Only the indication header carries it
  (``asn1/e2sm-kpm-v2.asn``).

What a node announces does not settle it: the RAN function OID ``...1.2.2.2`` is sent by v02.0x
nodes and by srsRAN_Project / OCUDU, which encode v04.00; FlexRIC sends ``...1.3.2.2`` for
v03.00 (the OID was not bumped after v03) and may put the version in the short name. So the
announced version (``announced``) chooses what octoric sends; the indication header's length
says which time stamp a node really writes (``indication.collect_start_of`` reads both).
"""

from __future__ import annotations

import enum
import functools
import re
from typing import Any

from octoric.contracts import kpm as _profile
from octoric.e2sm import codec

OID_V2 = _profile.OID_V2  # KPM v02.0x (also srsRAN_Project / OCUDU, which send v04.00)
OID_V3 = _profile.OID_V3  # KPM v03.00 and later (the module OID stayed at version3)
KPM_OIDS = (OID_V2, OID_V3)
SHORT_NAME = _profile.SHORT_NAME


@functools.total_ordering
class KpmVersion(enum.Enum):
    V2_03 = "02.03"
    V3_00 = "03.00"
    V4_00 = "04.00"
    V5_00 = "05.00"

    @property
    def label(self) -> str:
        return f"v{self.value}"

    @property
    def timestamp_octets(self) -> int:
        return 4 if self is KpmVersion.V2_03 else 8

    @property
    def variant(self) -> str | None:
        """The codec variant of its header types (``codec.VARIANTS``)."""
        return codec.KPM_V2 if self is KpmVersion.V2_03 else None

    def __lt__(self, other: KpmVersion) -> bool:  # "02.03" < "03.00" < ...: release order
        return self.value < other.value

    @classmethod
    def parse(cls, text: str) -> KpmVersion:
        """``"2.03"``, ``"v02.03"``, ``"v2"``, ``"5"`` ... -> the version."""
        m = re.fullmatch(r"v?0?([2-5])(?:\.0?(\d+))?", text.strip().lower())
        if m:
            for v in cls:
                if v.value.startswith(f"0{m.group(1)}.") and (
                    m.group(2) is None or int(v.value[3:]) == int(m.group(2))
                ):
                    return v
        raise ValueError(f"unknown E2SM-KPM version {text!r} (one of 2.03, 3.00, 4.00, 5.00)")


DEFAULT = KpmVersion.V4_00  # octoric's own gNBs; srsRAN_Project / OCUDU encode this one


def is_kpm(oid: str, short_name: str | None = None) -> bool:
    """Is a RAN function with this OID (or short name) E2SM-KPM?"""
    return oid in KPM_OIDS or (short_name or "").upper().startswith(SHORT_NAME)


_NAME_VERSION = re.compile(r"-v(\d\d\.\d\d)$", re.IGNORECASE)  # FlexRIC: ORAN-E2SM-KPM-v02.03


def announced(oid: str, definition: Any = None) -> KpmVersion:
    """The version a node's E2 Setup announces: the short name's suffix where it has one
    (FlexRIC), v05.00 where the definition has v05's integrated report styles, v03.00 for
    ``...1.3.2.2`` (v03.00 or later: octoric sends it nothing a v03.00 node cannot take), v02.03
    for ``...1.2.2.2``. ``definition`` is a ``kpm.KpmRanFunctionDefinition`` or None."""
    name = getattr(definition, "name", None)
    short = getattr(name, "short_name", "") or ""
    m = _NAME_VERSION.search(short)
    if m:
        try:
            return KpmVersion.parse(m.group(1))
        except ValueError:
            pass
    if getattr(definition, "integrated_styles", None):
        return KpmVersion.V5_00
    oid = getattr(name, "oid", None) or oid
    if oid == OID_V3:
        return KpmVersion.V3_00
    return KpmVersion.V2_03


# What a version adds, as the keys it adds appear in codec values (checked by ``needs``).
_V4_LABEL_KEYS = ("cellGlobalID", "beamID")  # MeasurementLabel extension additions 4, 5
_V4_KEYS = ("matchCondReportList", "notSatisfied")
_V5_KEYS = (
    "jobID",
    "actionDefinition-Format255",
    "indicationMessage-Format255",
    "ric-IntegratedReportStyle-List",
)


def needs_v5(value: Any) -> bool:
    """Does a top-level codec value (a KPM PDU's) use what v05.00 added? v05.00's additions
    sit at the top of the PDUs that have them, so this reads one level (``needs`` walks all)."""
    if not isinstance(value, dict):
        return False
    return any(
        k in _V5_KEYS or (isinstance(x, tuple) and x[:1] and x[0] in _V5_KEYS)
        for k, x in value.items()
    )


def needs(value: Any) -> KpmVersion:
    """The oldest KPM version that can carry a codec value (dicts, (name, value) choices,
    lists) of the default module."""
    need = KpmVersion.V2_03
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            for k, x in v.items():
                if k in _V5_KEYS:
                    return KpmVersion.V5_00
                if k in _V4_KEYS or (k == "measLabel" and any(n in x for n in _V4_LABEL_KEYS)):
                    need = KpmVersion.V4_00
                stack.append(x)
        elif isinstance(v, tuple) and len(v) == 2 and isinstance(v[0], str):
            if v[0] in _V5_KEYS:
                return KpmVersion.V5_00
            if v[0] in _V4_KEYS:
                need = KpmVersion.V4_00
            stack.append(v[1])
        elif isinstance(v, list):
            stack.extend(v)
    return need
