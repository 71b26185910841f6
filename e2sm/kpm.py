"""E2SM-KPM as octoric uses it (v04.00, and v02.03 / v03.00 / v05.00 on the same model:
``kpm_version``): dataclasses, builders and parsers.

- ``KpmEventTrigger``: event trigger format 1 (reporting period, ms).
- ``KpmActionDefinition`` + ``action_definition_style1..5``: the action definitions of report
  styles 1-5 (formats 1-5). octoric's xApps use styles 4 and 5 (UE-level).
- ``KpmIndicationHeader`` (format 1) and ``KpmIndicationMessage`` (formats 1-3).
- ``KpmRanFunctionDefinition`` and ``octoric_ran_function_definition()``.
- ``encode_kpm`` / ``decode_kpm`` for every one of them (``version=`` the node's KPM version:
  what that version cannot carry is refused, the v02.03 header has its 4-octet time stamp),
  and ``indication.parse_indication`` for the columnar view (UE x metric x granule numpy
  arrays) of an indication.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass
from typing import Any, TypeVar, Union

# the KPM profile gNBs and xApps share lives in contracts; re-exported here
from octoric.contracts import kpm as _profile
from octoric.e2sm import codec
from octoric.e2sm.common import Cgi, RanFunctionName, UeId, ntp_to_unix
from octoric.e2sm.errors import E2smDecodeError, E2smEncodeError
from octoric.e2sm.kpm_version import DEFAULT as DEFAULT_VERSION
from octoric.e2sm.kpm_version import KpmVersion, needs, needs_v5

OCC_MEASUREMENTS = _profile.OCC_MEASUREMENTS
OCC_OPTIONAL_MEASUREMENTS = _profile.OCC_OPTIONAL_MEASUREMENTS
OID = _profile.OID
RAN_FUNCTION_ID = _profile.RAN_FUNCTION_ID
SHORT_NAME = _profile.SHORT_NAME


class NotSatisfied(enum.Enum):
    """MeasurementRecordItem ``notSatisfied`` (a reporting condition was not met)."""

    NOT_SATISFIED = "notSatisfied"


NOT_SATISFIED = NotSatisfied.NOT_SATISFIED
# A measurement value: integer, real, None (noValue) or NOT_SATISFIED.
MeasValue = Union[int, float, None, NotSatisfied]  # noqa: UP007 (a runtime alias)


# --- small IEs -----------------------------------------------------------------------------


def real_to_asn(x: float) -> tuple[int, int, int]:
    """pycrate REAL value (mantissa, 2, exponent) with an odd mantissa, as DER/CER want."""
    if math.isnan(x) or math.isinf(x):
        raise ValueError("NaN and infinities are not encodable here")
    if x == 0:
        return (0, 2, 0)
    num, den = x.as_integer_ratio()
    exp = -(den.bit_length() - 1)
    while num % 2 == 0:
        num //= 2
        exp += 1
    return (num, 2, exp)


def real_from_asn(v: Any) -> float:
    m, base, e = v
    if m is None or base is None or e is None:
        # pycrate's special values: (1|-1, None, None) the infinities, (0, None, None) NaN
        if m is None or m == 0:
            return float("nan")
        return math.inf if m > 0 else -math.inf
    try:
        if base == 2:
            return math.ldexp(float(m), int(e))
        return float(m) * float(base) ** int(e)
    except OverflowError:
        return math.inf if m > 0 else -math.inf


@dataclass(frozen=True)
class MeasLabel:
    """MeasurementLabel. ``no_label`` is what octoric uses; the other fields octoric knows
    are typed, anything else is kept in ``other`` (pycrate's value) so it round-trips."""

    no_label: bool = True
    plmn_id: bytes | None = None
    slice_sst: bytes | None = None
    slice_sd: bytes | None = None
    five_qi: int | None = None
    qfi: int | None = None
    other: dict[str, Any] | None = None

    def to_asn(self) -> dict[str, Any]:
        v: dict[str, Any] = dict(self.other or {})
        if self.no_label:
            v["noLabel"] = "true"
        if self.plmn_id is not None:
            v["plmnID"] = self.plmn_id
        if self.slice_sst is not None:
            s: dict[str, Any] = {"sST": self.slice_sst}
            if self.slice_sd is not None:
                s["sD"] = self.slice_sd
            v["sliceID"] = s
        if self.five_qi is not None:
            v["fiveQI"] = self.five_qi
        if self.qfi is not None:
            v["qFI"] = self.qfi
        return v

    @classmethod
    def from_asn(cls, v: dict[str, Any]) -> MeasLabel:
        known = ("noLabel", "plmnID", "sliceID", "fiveQI", "qFI")
        other = {k: x for k, x in v.items() if k not in known}
        sl = v.get("sliceID")
        return cls(
            "noLabel" in v,
            v.get("plmnID"),
            None if sl is None else sl["sST"],
            None if sl is None else sl.get("sD"),
            v.get("fiveQI"),
            v.get("qFI"),
            other or None,
        )


def _meas_type_to_asn(m: str | int) -> tuple[str, Any]:
    return ("measName", m) if isinstance(m, str) else ("measID", m)


def _meas_type_from_asn(v: tuple[str, Any]) -> str | int:
    kind, x = v
    return str(x) if kind == "measName" else int(x)


@dataclass(frozen=True)
class MeasInfo:
    """MeasurementInfoItem: a measurement (name, or numeric ID) and its labels."""

    meas: str | int
    labels: tuple[MeasLabel, ...] = (MeasLabel(),)

    def to_asn(self) -> dict[str, Any]:
        return {
            "measType": _meas_type_to_asn(self.meas),
            "labelInfoList": [{"measLabel": lab.to_asn()} for lab in self.labels],
        }

    @classmethod
    def from_asn(cls, v: dict[str, Any]) -> MeasInfo:
        # matchCondReportList (extension) is not used by octoric and is dropped
        return cls(
            _meas_type_from_asn(v["measType"]),
            tuple(MeasLabel.from_asn(i["measLabel"]) for i in v["labelInfoList"]),
        )


def _test_value_to_asn(v: bool | int | float | bytes | str) -> tuple[str, Any]:
    if isinstance(v, bool):
        return ("valueBool", v)
    if isinstance(v, int):
        return ("valueInt", v)
    if isinstance(v, float):
        return ("valueReal", real_to_asn(v))
    if isinstance(v, bytes):
        return ("valueOctS", v)
    return ("valuePrtS", v)


def _test_value_from_asn(v: tuple[str, Any]) -> bool | int | float | bytes | str:
    kind, x = v
    if kind == "valueReal":
        return real_from_asn(x)
    if kind == "valueBitS":
        return bytes(x[0].to_bytes((x[1] + 7) // 8, "big")) if x[1] else b""
    return x  # type: ignore[no-any-return]


@dataclass(frozen=True)
class TestCond:
    """TestCondInfo: ``test_type`` is the TestCond-Type alternative (gBR, aMBR, isStat, isCatM,
    rSRP, rSRQ, ul-rSRP, cQI, fiveQI, qCI, sNSSAI), ``expr`` equal / greaterthan / lessthan /
    contains / present, ``value`` the comparison value (None with ``present``)."""

    __test__ = False  # not a pytest class

    test_type: str
    expr: str | None = None
    value: bool | int | float | bytes | str | None = None

    def to_asn(self) -> dict[str, Any]:
        v: dict[str, Any] = {"testType": (self.test_type, "true")}
        if self.expr is not None:
            v["testExpr"] = self.expr
        if self.value is not None:
            v["testValue"] = _test_value_to_asn(self.value)
        return v

    @classmethod
    def from_asn(cls, v: dict[str, Any]) -> TestCond:
        tv = v.get("testValue")
        return cls(
            v["testType"][0], v.get("testExpr"), None if tv is None else _test_value_from_asn(tv)
        )


@dataclass(frozen=True)
class MatchingCond:
    """MatchingCondItem: either a label or a test condition (exactly one is set)."""

    label: MeasLabel | None = None
    test: TestCond | None = None
    logical_or: bool = False

    def to_asn(self) -> dict[str, Any]:
        if self.label is not None:
            ch: tuple[str, Any] = ("measLabel", self.label.to_asn())
        elif self.test is not None:
            ch = ("testCondInfo", self.test.to_asn())
        else:
            raise ValueError("a MatchingCond needs a label or a test")
        v: dict[str, Any] = {"matchingCondChoice": ch}
        if self.logical_or:
            v["logicalOR"] = "true"
        return v

    @classmethod
    def from_asn(cls, v: dict[str, Any]) -> MatchingCond:
        kind, x = v["matchingCondChoice"]
        lor = "logicalOR" in v
        if kind == "measLabel":
            return cls(label=MeasLabel.from_asn(x), logical_or=lor)
        return cls(test=TestCond.from_asn(x), logical_or=lor)


@dataclass(frozen=True)
class MeasCond:
    """MeasurementCondItem (action definition format 3)."""

    meas: str | int
    conditions: tuple[MatchingCond, ...]

    def to_asn(self) -> dict[str, Any]:
        return {
            "measType": _meas_type_to_asn(self.meas),
            "matchingCond": [c.to_asn() for c in self.conditions],
        }

    @classmethod
    def from_asn(cls, v: dict[str, Any]) -> MeasCond:
        return cls(
            _meas_type_from_asn(v["measType"]),
            tuple(MatchingCond.from_asn(c) for c in v["matchingCond"]),
        )


# --- event trigger -------------------------------------------------------------------------


@dataclass(frozen=True)
class KpmEventTrigger:
    """E2SM-KPM-EventTriggerDefinition format 1: report every ``reporting_period_ms``."""

    reporting_period_ms: int = 10

    ASN_TYPE = "E2SM-KPM-EventTriggerDefinition"

    def to_asn(self) -> dict[str, Any]:
        return {
            "eventDefinition-formats": (
                "eventDefinition-Format1",
                {"reportingPeriod": self.reporting_period_ms},
            )
        }

    @classmethod
    def from_asn(cls, v: dict[str, Any]) -> KpmEventTrigger:
        kind, body = v["eventDefinition-formats"]
        if kind != "eventDefinition-Format1":
            raise ValueError(f"unsupported event trigger format {kind}")
        return cls(int(body["reportingPeriod"]))


# --- action definitions --------------------------------------------------------------------


@dataclass(frozen=True)
class ActionFormat1:
    """E2SM-KPM-ActionDefinition-Format1: measurements, granularity period (ms), optional cell."""

    measurements: tuple[MeasInfo, ...]
    granularity_ms: int = 1
    cell: Cgi | None = None

    def to_asn(self) -> dict[str, Any]:
        v: dict[str, Any] = {
            "measInfoList": [m.to_asn() for m in self.measurements],
            "granulPeriod": self.granularity_ms,
        }
        if self.cell is not None:
            v["cellGlobalID"] = self.cell.to_asn()
        return v

    @classmethod
    def from_asn(cls, v: dict[str, Any]) -> ActionFormat1:
        c = v.get("cellGlobalID")
        return cls(
            tuple(MeasInfo.from_asn(m) for m in v["measInfoList"]),
            int(v["granulPeriod"]),
            None if c is None else Cgi.from_asn(c),
        )


@dataclass(frozen=True)
class ActionFormat2:
    """Format 2 (style 2): one UE."""

    ue_id: UeId
    subscription: ActionFormat1

    def to_asn(self) -> dict[str, Any]:
        return {"ueID": self.ue_id.to_asn(), "subscriptInfo": self.subscription.to_asn()}

    @classmethod
    def from_asn(cls, v: dict[str, Any]) -> ActionFormat2:
        return cls(UeId.from_asn(v["ueID"]), ActionFormat1.from_asn(v["subscriptInfo"]))


@dataclass(frozen=True)
class ActionFormat3:
    """Format 3 (style 3): condition-based, UE-level measurements."""

    conditions: tuple[MeasCond, ...]
    granularity_ms: int = 1
    cell: Cgi | None = None

    def to_asn(self) -> dict[str, Any]:
        v: dict[str, Any] = {
            "measCondList": [c.to_asn() for c in self.conditions],
            "granulPeriod": self.granularity_ms,
        }
        if self.cell is not None:
            v["cellGlobalID"] = self.cell.to_asn()
        return v

    @classmethod
    def from_asn(cls, v: dict[str, Any]) -> ActionFormat3:
        c = v.get("cellGlobalID")
        return cls(
            tuple(MeasCond.from_asn(x) for x in v["measCondList"]),
            int(v["granulPeriod"]),
            None if c is None else Cgi.from_asn(c),
        )


@dataclass(frozen=True)
class ActionFormat4:
    """Format 4 (style 4): common condition-based, UE-level (every UE matching the tests)."""

    ue_conditions: tuple[TestCond, ...]
    subscription: ActionFormat1

    def to_asn(self) -> dict[str, Any]:
        return {
            "matchingUeCondList": [{"testCondInfo": t.to_asn()} for t in self.ue_conditions],
            "subscriptionInfo": self.subscription.to_asn(),
        }

    @classmethod
    def from_asn(cls, v: dict[str, Any]) -> ActionFormat4:
        return cls(
            tuple(TestCond.from_asn(c["testCondInfo"]) for c in v["matchingUeCondList"]),
            ActionFormat1.from_asn(v["subscriptionInfo"]),
        )


@dataclass(frozen=True)
class ActionFormat5:
    """Format 5 (style 5): a list of (at least two) UEs."""

    ue_ids: tuple[UeId, ...]
    subscription: ActionFormat1

    def to_asn(self) -> dict[str, Any]:
        return {
            "matchingUEidList": [{"ueID": u.to_asn()} for u in self.ue_ids],
            "subscriptionInfo": self.subscription.to_asn(),
        }

    @classmethod
    def from_asn(cls, v: dict[str, Any]) -> ActionFormat5:
        return cls(
            tuple(UeId.from_asn(u["ueID"]) for u in v["matchingUEidList"]),
            ActionFormat1.from_asn(v["subscriptionInfo"]),
        )


@dataclass(frozen=True)
class ReportJob:
    """MultiReportActionDefinitionItem (v05.00): one job of a Format 255 action."""

    job_id: int
    action: KpmActionDefinition | None = None
    cell: Cgi | None = None
    ue_id: UeId | None = None
    ue_ids: tuple[UeId, ...] | None = None  # jobMatchingUEidList (at least two)

    def to_asn(self) -> dict[str, Any]:
        v: dict[str, Any] = {"jobID": self.job_id}
        if self.action is not None:
            v["jobActionDefinition"] = self.action.to_asn()
        if self.cell is not None:
            v["jobCellGlobalID"] = self.cell.to_asn()
        if self.ue_id is not None:
            v["jobUEID"] = self.ue_id.to_asn()
        if self.ue_ids is not None:
            v["jobMatchingUEidList"] = [{"ueID": u.to_asn()} for u in self.ue_ids]
        return v

    @classmethod
    def from_asn(cls, v: dict[str, Any]) -> ReportJob:
        a, c, u, us = (v.get(k) for k in ("jobActionDefinition", "jobCellGlobalID", "jobUEID",
                                           "jobMatchingUEidList"))  # fmt: skip
        return cls(
            int(v["jobID"]),
            None if a is None else KpmActionDefinition.from_asn(a),
            None if c is None else Cgi.from_asn(c),
            None if u is None else UeId.from_asn(u),
            None if us is None else tuple(UeId.from_asn(x["ueID"]) for x in us),
        )


@dataclass(frozen=True)
class ActionFormat255:
    """Format 255 (v05.00): several jobs in one action, reported in one indication
    (``approach`` "single") or one each ("multiple"), with an optional common definition."""

    jobs: tuple[ReportJob, ...]
    approach: str = "single"
    common: KpmActionDefinition | None = None

    def to_asn(self) -> dict[str, Any]:
        v: dict[str, Any] = {
            "multiReportActionDefinitionList": [j.to_asn() for j in self.jobs],
            "multiReportApproach": self.approach,
        }
        if self.common is not None:
            v["commonActionDefinition"] = self.common.to_asn()
        return v

    @classmethod
    def from_asn(cls, v: dict[str, Any]) -> ActionFormat255:
        c = v.get("commonActionDefinition")
        return cls(
            tuple(ReportJob.from_asn(j) for j in v["multiReportActionDefinitionList"]),
            str(v["multiReportApproach"]),
            None if c is None else KpmActionDefinition.from_asn(c),
        )


ActionFormat = (
    ActionFormat1 | ActionFormat2 | ActionFormat3 | ActionFormat4 | ActionFormat5 | ActionFormat255
)
_ACTION_FORMATS: dict[str, Any] = {
    "actionDefinition-Format1": ActionFormat1,
    "actionDefinition-Format2": ActionFormat2,
    "actionDefinition-Format3": ActionFormat3,
    "actionDefinition-Format4": ActionFormat4,
    "actionDefinition-Format5": ActionFormat5,
    "actionDefinition-Format255": ActionFormat255,
}
_ACTION_ALT = {cls: alt for alt, cls in _ACTION_FORMATS.items()}


@dataclass(frozen=True)
class KpmActionDefinition:
    """E2SM-KPM-ActionDefinition: a report style (1-5) and the matching format (255: jobs)."""

    style: int
    format: ActionFormat

    ASN_TYPE = "E2SM-KPM-ActionDefinition"

    def to_asn(self) -> dict[str, Any]:
        return {
            "ric-Style-Type": self.style,
            "actionDefinition-formats": (_ACTION_ALT[type(self.format)], self.format.to_asn()),
        }

    @classmethod
    def from_asn(cls, v: dict[str, Any]) -> KpmActionDefinition:
        alt, body = v["actionDefinition-formats"]
        if alt not in _ACTION_FORMATS:
            raise ValueError(f"unsupported action definition format {alt}")
        return cls(int(v["ric-Style-Type"]), _ACTION_FORMATS[alt].from_asn(body))


def _meas_infos(measurements: tuple[str | int, ...] | list[str | int]) -> tuple[MeasInfo, ...]:
    return tuple(MeasInfo(m) for m in measurements)


def action_definition_style1(
    measurements: list[str | int] | tuple[str | int, ...],
    granularity_ms: int = 1,
    cell: Cgi | None = None,
) -> KpmActionDefinition:
    """Style 1, E2 node measurement (cell level)."""
    return KpmActionDefinition(1, ActionFormat1(_meas_infos(measurements), granularity_ms, cell))


def action_definition_style2(
    ue_id: UeId,
    measurements: list[str | int] | tuple[str | int, ...],
    granularity_ms: int = 1,
    cell: Cgi | None = None,
) -> KpmActionDefinition:
    """Style 2, measurements of one UE."""
    sub = ActionFormat1(_meas_infos(measurements), granularity_ms, cell)
    return KpmActionDefinition(2, ActionFormat2(ue_id, sub))


def action_definition_style3(
    conditions: list[MeasCond] | tuple[MeasCond, ...],
    granularity_ms: int = 1,
    cell: Cgi | None = None,
) -> KpmActionDefinition:
    """Style 3, condition-based UE-level measurements."""
    return KpmActionDefinition(3, ActionFormat3(tuple(conditions), granularity_ms, cell))


def action_definition_style4(
    measurements: list[str | int] | tuple[str | int, ...] = OCC_MEASUREMENTS,
    granularity_ms: int = 1,
    ue_conditions: tuple[TestCond, ...] = (TestCond("isStat", "present"),),
    cell: Cgi | None = None,
) -> KpmActionDefinition:
    """Style 4, every UE matching ``ue_conditions`` (default: all UEs, as srsRAN reads it).
    This is what the OCC xApp subscribes with, granularity 1 ms."""
    sub = ActionFormat1(_meas_infos(measurements), granularity_ms, cell)
    return KpmActionDefinition(4, ActionFormat4(tuple(ue_conditions), sub))


def action_definition_style5(
    ue_ids: list[UeId] | tuple[UeId, ...],
    measurements: list[str | int] | tuple[str | int, ...] = OCC_MEASUREMENTS,
    granularity_ms: int = 1,
    cell: Cgi | None = None,
) -> KpmActionDefinition:
    """Style 5, a given list of at least two UEs."""
    if len(ue_ids) < 2:
        raise ValueError("report style 5 needs at least two UEs (use style 2 for one)")
    sub = ActionFormat1(_meas_infos(measurements), granularity_ms, cell)
    return KpmActionDefinition(5, ActionFormat5(tuple(ue_ids), sub))


# --- indication header / message -----------------------------------------------------------


@dataclass(frozen=True)
class KpmIndicationHeader:
    """E2SM-KPM-IndicationHeader format 1. ``collect_start_time`` is the 8-byte NTP TimeStamp
    (``common.ntp_timestamp(unix_s)`` builds one); KPM v02.03 carries its first 4 octets (whole
    seconds), read back with a zero fraction."""

    collect_start_time: bytes
    file_format_version: str | None = None
    sender_name: str | None = None
    sender_type: str | None = None
    vendor_name: str | None = None

    ASN_TYPE = "E2SM-KPM-IndicationHeader"

    @property
    def unix_time(self) -> float:
        return ntp_to_unix(self.collect_start_time)

    def to_asn(self) -> dict[str, Any]:
        v: dict[str, Any] = {"colletStartTime": self.collect_start_time}
        for attr, key in (
            ("file_format_version", "fileFormatversion"),
            ("sender_name", "senderName"),
            ("sender_type", "senderType"),
            ("vendor_name", "vendorName"),
        ):
            x = getattr(self, attr)
            if x is not None:
                v[key] = x
        return {"indicationHeader-formats": ("indicationHeader-Format1", v)}

    @classmethod
    def from_asn(cls, v: dict[str, Any]) -> KpmIndicationHeader:
        kind, b = v["indicationHeader-formats"]
        if kind != "indicationHeader-Format1":
            raise ValueError(f"unsupported indication header format {kind}")
        return cls(
            b["colletStartTime"],
            b.get("fileFormatversion"),
            b.get("senderName"),
            b.get("senderType"),
            b.get("vendorName"),
        )


def _value_to_asn(x: MeasValue) -> tuple[str, Any]:
    if x is None:
        return ("noValue", 0)
    if x is NOT_SATISFIED:
        return ("notSatisfied", 0)
    if isinstance(x, bool):
        raise TypeError("a measurement value is an int or a float, not a bool")
    if isinstance(x, int):
        return ("integer", x)
    if isinstance(x, float):
        return ("real", real_to_asn(x))
    raise TypeError(f"bad measurement value {x!r}")


def _value_from_asn(v: tuple[str, Any]) -> MeasValue:
    kind, x = v
    if kind == "integer":
        return int(x)
    if kind == "real":
        return real_from_asn(x)
    if kind == "noValue":
        return None
    if kind == "notSatisfied":
        return NOT_SATISFIED
    raise ValueError(f"unknown MeasurementRecordItem {kind}")


@dataclass(frozen=True)
class MeasRecord:
    """MeasurementDataItem: one granule's values (one per measurement x label)."""

    values: tuple[MeasValue, ...]
    incomplete: bool = False

    def to_asn(self) -> dict[str, Any]:
        v: dict[str, Any] = {"measRecord": [_value_to_asn(x) for x in self.values]}
        if self.incomplete:
            v["incompleteFlag"] = "true"
        return v

    @classmethod
    def from_asn(cls, v: dict[str, Any]) -> MeasRecord:
        return cls(tuple(_value_from_asn(x) for x in v["measRecord"]), "incompleteFlag" in v)


@dataclass(frozen=True)
class IndicationFormat1:
    """E2SM-KPM-IndicationMessage-Format1: records (one per granule) and what they hold."""

    records: tuple[MeasRecord, ...]
    measurements: tuple[MeasInfo, ...] | None = None
    granularity_ms: int | None = None

    def to_asn(self) -> dict[str, Any]:
        v: dict[str, Any] = {"measData": [r.to_asn() for r in self.records]}
        if self.measurements is not None:
            v["measInfoList"] = [m.to_asn() for m in self.measurements]
        if self.granularity_ms is not None:
            v["granulPeriod"] = self.granularity_ms
        return v

    @classmethod
    def from_asn(cls, v: dict[str, Any]) -> IndicationFormat1:
        mi = v.get("measInfoList")
        gp = v.get("granulPeriod")
        return cls(
            tuple(MeasRecord.from_asn(r) for r in v["measData"]),
            None if mi is None else tuple(MeasInfo.from_asn(m) for m in mi),
            None if gp is None else int(gp),
        )


@dataclass(frozen=True)
class MeasCondUeId:
    """MeasurementCondUEidItem (indication format 2): a measurement, its conditions and the
    UEs that matched them."""

    meas: str | int
    conditions: tuple[MatchingCond, ...]
    matched_ues: tuple[UeId, ...] | None = None

    def to_asn(self) -> dict[str, Any]:
        v: dict[str, Any] = {
            "measType": _meas_type_to_asn(self.meas),
            "matchingCond": [c.to_asn() for c in self.conditions],
        }
        if self.matched_ues is not None:
            v["matchingUEidList"] = [{"ueID": u.to_asn()} for u in self.matched_ues]
        return v

    @classmethod
    def from_asn(cls, v: dict[str, Any]) -> MeasCondUeId:
        ues = v.get("matchingUEidList")
        return cls(
            _meas_type_from_asn(v["measType"]),
            tuple(MatchingCond.from_asn(c) for c in v["matchingCond"]),
            None if ues is None else tuple(UeId.from_asn(u["ueID"]) for u in ues),
        )


@dataclass(frozen=True)
class IndicationFormat2:
    """E2SM-KPM-IndicationMessage-Format2 (report style 3)."""

    records: tuple[MeasRecord, ...]
    conditions: tuple[MeasCondUeId, ...]
    granularity_ms: int | None = None

    def to_asn(self) -> dict[str, Any]:
        v: dict[str, Any] = {
            "measData": [r.to_asn() for r in self.records],
            "measCondUEidList": [c.to_asn() for c in self.conditions],
        }
        if self.granularity_ms is not None:
            v["granulPeriod"] = self.granularity_ms
        return v

    @classmethod
    def from_asn(cls, v: dict[str, Any]) -> IndicationFormat2:
        gp = v.get("granulPeriod")
        return cls(
            tuple(MeasRecord.from_asn(r) for r in v["measData"]),
            tuple(MeasCondUeId.from_asn(c) for c in v["measCondUEidList"]),
            None if gp is None else int(gp),
        )


@dataclass(frozen=True)
class UeReport:
    """UEMeasurementReportItem: one UE's format-1 report."""

    ue_id: UeId
    report: IndicationFormat1

    def to_asn(self) -> dict[str, Any]:
        return {"ueID": self.ue_id.to_asn(), "measReport": self.report.to_asn()}

    @classmethod
    def from_asn(cls, v: dict[str, Any]) -> UeReport:
        return cls(UeId.from_asn(v["ueID"]), IndicationFormat1.from_asn(v["measReport"]))


@dataclass(frozen=True)
class IndicationFormat3:
    """E2SM-KPM-IndicationMessage-Format3 (report styles 4 and 5): per-UE reports."""

    reports: tuple[UeReport, ...]

    def to_asn(self) -> dict[str, Any]:
        return {"ueMeasReportList": [r.to_asn() for r in self.reports]}

    @classmethod
    def from_asn(cls, v: dict[str, Any]) -> IndicationFormat3:
        return cls(tuple(UeReport.from_asn(r) for r in v["ueMeasReportList"]))


@dataclass(frozen=True)
class IndicationFormat255:
    """E2SM-KPM-IndicationMessage-Format255 (v05.00): one message per job of a Format 255
    action, as (job ID, message)."""

    jobs: tuple[tuple[int, KpmIndicationMessage], ...]

    def to_asn(self) -> dict[str, Any]:
        return {
            "multiReportIndicationMessageList": [
                {"jobID": j, "indicationMessage": m.to_asn()} for j, m in self.jobs
            ]
        }

    @classmethod
    def from_asn(cls, v: dict[str, Any]) -> IndicationFormat255:
        return cls(
            tuple(
                (int(i["jobID"]), KpmIndicationMessage.from_asn(i["indicationMessage"]))
                for i in v["multiReportIndicationMessageList"]
            )
        )


IndicationFormat = IndicationFormat1 | IndicationFormat2 | IndicationFormat3 | IndicationFormat255
_IND_FORMATS: dict[str, Any] = {
    "indicationMessage-Format1": IndicationFormat1,
    "indicationMessage-Format2": IndicationFormat2,
    "indicationMessage-Format3": IndicationFormat3,
    "indicationMessage-Format255": IndicationFormat255,
}
_IND_ALT = {cls: alt for alt, cls in _IND_FORMATS.items()}


@dataclass(frozen=True)
class KpmIndicationMessage:
    """E2SM-KPM-IndicationMessage (formats 1-3, and v05.00's 255 and job ID)."""

    format: IndicationFormat
    job_id: int | None = None  # v05.00: the job of a Format 255 action this message reports

    ASN_TYPE = "E2SM-KPM-IndicationMessage"

    def to_asn(self) -> dict[str, Any]:
        v: dict[str, Any] = {
            "indicationMessage-formats": (_IND_ALT[type(self.format)], self.format.to_asn())
        }
        if self.job_id is not None:
            v["jobID"] = self.job_id
        return v

    @classmethod
    def from_asn(cls, v: dict[str, Any]) -> KpmIndicationMessage:
        alt, body = v["indicationMessage-formats"]
        if alt not in _IND_FORMATS:
            raise ValueError(f"unsupported indication message format {alt}")
        job = v.get("jobID")
        return cls(_IND_FORMATS[alt].from_asn(body), None if job is None else int(job))


# --- RAN function definition ---------------------------------------------------------------


@dataclass(frozen=True)
class EventTriggerStyle:
    """RIC-EventTriggerStyle-Item."""

    style: int
    name: str
    format_type: int

    def to_asn(self) -> dict[str, Any]:
        return {
            "ric-EventTriggerStyle-Type": self.style,
            "ric-EventTriggerStyle-Name": self.name,
            "ric-EventTriggerFormat-Type": self.format_type,
        }

    @classmethod
    def from_asn(cls, v: dict[str, Any]) -> EventTriggerStyle:
        return cls(
            int(v["ric-EventTriggerStyle-Type"]),
            v["ric-EventTriggerStyle-Name"],
            int(v["ric-EventTriggerFormat-Type"]),
        )


@dataclass(frozen=True)
class ReportStyle:
    """RIC-ReportStyle-Item: a report style and the measurements it offers (name, ID)."""

    style: int
    name: str
    action_format_type: int
    measurements: tuple[tuple[str, int | None], ...]
    header_format_type: int = 1
    message_format_type: int = 1

    def to_asn(self) -> dict[str, Any]:
        meas = []
        for name, mid in self.measurements:
            m: dict[str, Any] = {"measName": name}
            if mid is not None:
                m["measID"] = mid
            meas.append(m)
        return {
            "ric-ReportStyle-Type": self.style,
            "ric-ReportStyle-Name": self.name,
            "ric-ActionFormat-Type": self.action_format_type,
            "measInfo-Action-List": meas,
            "ric-IndicationHeaderFormat-Type": self.header_format_type,
            "ric-IndicationMessageFormat-Type": self.message_format_type,
        }

    @classmethod
    def from_asn(cls, v: dict[str, Any]) -> ReportStyle:
        return cls(
            int(v["ric-ReportStyle-Type"]),
            v["ric-ReportStyle-Name"],
            int(v["ric-ActionFormat-Type"]),
            tuple((m["measName"], m.get("measID")) for m in v["measInfo-Action-List"]),
            int(v["ric-IndicationHeaderFormat-Type"]),
            int(v["ric-IndicationMessageFormat-Type"]),
        )


@dataclass(frozen=True)
class IntegratedReportStyle:
    """RIC-IntegratedReportStyle-Item (v05.00): a report style that takes Format 255 (jobs).
    The fundamental styles and support flags stay as the codec's value in ``other``."""

    style: int
    name: str
    action_format_type: int = 255
    header_format_type: int = 1
    message_format_type: int = 255
    other: dict[str, Any] | None = None

    _KEYS = ("ric-ReportStyle-Type", "ric-ReportStyle-Name", "ric-ActionFormat-Type",
             "ric-IndicationHeaderFormat-Type", "ric-IndicationMessageFormat-Type")  # fmt: skip

    def to_asn(self) -> dict[str, Any]:
        vals = (self.style, self.name, self.action_format_type, self.header_format_type,
                self.message_format_type)  # fmt: skip
        return {**dict(zip(self._KEYS, vals, strict=True)), **(self.other or {})}

    @classmethod
    def from_asn(cls, v: dict[str, Any]) -> IntegratedReportStyle:
        other = {k: x for k, x in v.items() if k not in cls._KEYS}
        style, name, af, hf, mf = (v[k] for k in cls._KEYS)
        return cls(int(style), str(name), int(af), int(hf), int(mf), other or None)


@dataclass(frozen=True)
class KpmRanFunctionDefinition:
    """E2SM-KPM-RANfunction-Description (``integrated_styles``: v05.00)."""

    name: RanFunctionName
    event_trigger_styles: tuple[EventTriggerStyle, ...] | None = None
    report_styles: tuple[ReportStyle, ...] | None = None
    integrated_styles: tuple[IntegratedReportStyle, ...] | None = None

    ASN_TYPE = "E2SM-KPM-RANfunction-Description"

    def to_asn(self) -> dict[str, Any]:
        v: dict[str, Any] = {"ranFunction-Name": self.name.to_asn()}
        if self.event_trigger_styles is not None:
            v["ric-EventTriggerStyle-List"] = [s.to_asn() for s in self.event_trigger_styles]
        if self.report_styles is not None:
            v["ric-ReportStyle-List"] = [s.to_asn() for s in self.report_styles]
        if self.integrated_styles is not None:
            v["ric-IntegratedReportStyle-List"] = [s.to_asn() for s in self.integrated_styles]
        return v

    @classmethod
    def from_asn(cls, v: dict[str, Any]) -> KpmRanFunctionDefinition:
        et = v.get("ric-EventTriggerStyle-List")
        rs = v.get("ric-ReportStyle-List")
        irs = v.get("ric-IntegratedReportStyle-List")
        return cls(
            RanFunctionName.from_asn(v["ranFunction-Name"]),
            None if et is None else tuple(EventTriggerStyle.from_asn(s) for s in et),
            None if rs is None else tuple(ReportStyle.from_asn(s) for s in rs),
            None if irs is None else tuple(IntegratedReportStyle.from_asn(s) for s in irs),
        )

    def report_style(self, style: int) -> ReportStyle | None:
        for s in self.report_styles or ():
            if s.style == style:
                return s
        return None


_STYLE_NAMES = {
    1: ("E2 Node Measurement", 1, 1),
    2: ("E2 Node Measurement for a single UE", 2, 1),
    3: ("Condition-based, UE-level E2 Node Measurement", 3, 2),
    4: ("Common Condition-based, UE-level Measurement", 4, 3),
    5: ("E2 Node Measurement for multiple UEs", 5, 3),
}


def octoric_ran_function_definition(
    measurements: tuple[str, ...] = OCC_MEASUREMENTS, styles: tuple[int, ...] = (1, 2, 3, 4, 5)
) -> KpmRanFunctionDefinition:
    """The KPM RAN function definition octoric's simulated gNB announces in E2 setup."""
    meas = tuple((m, None) for m in measurements)
    return KpmRanFunctionDefinition(
        RanFunctionName(SHORT_NAME, OID, "KPM Monitor"),
        (EventTriggerStyle(1, "Periodic Report", 1),),
        tuple(
            ReportStyle(s, _STYLE_NAMES[s][0], _STYLE_NAMES[s][1], meas, 1, _STYLE_NAMES[s][2])
            for s in styles
        ),
    )


# --- encode / decode -----------------------------------------------------------------------

KpmPdu = (
    KpmEventTrigger
    | KpmActionDefinition
    | KpmIndicationHeader
    | KpmIndicationMessage
    | KpmRanFunctionDefinition
)
T = TypeVar(
    "T",
    KpmEventTrigger,
    KpmActionDefinition,
    KpmIndicationHeader,
    KpmIndicationMessage,
    KpmRanFunctionDefinition,
)


def encode_kpm(pdu: KpmPdu, version: KpmVersion = DEFAULT_VERSION) -> bytes:
    """Aligned-PER bytes of a KPM dataclass (its ``ASN_TYPE``) as KPM ``version`` has them.
    What that version cannot carry (``kpm_version.needs``) raises ``E2smEncodeError``; the
    v02.03 header keeps the seconds of the time stamp."""
    try:
        value = pdu.to_asn()
    except Exception as e:
        raise E2smEncodeError(pdu.ASN_TYPE, f"{type(e).__name__}: {e}") from None
    # v04.00 nodes can take all but v05's additions, which sit at the top of a PDU: only
    # older versions need the whole value walked (a large indication has thousands of values)
    if version >= KpmVersion.V5_00:
        need = version
    elif version >= KpmVersion.V4_00:
        need = KpmVersion.V5_00 if needs_v5(value) else version
    else:
        need = needs(value)
    if version < need:
        raise E2smEncodeError(
            pdu.ASN_TYPE, f"needs E2SM-KPM {need.label}; the node speaks {version.label}"
        )
    if isinstance(pdu, KpmIndicationHeader) and version.timestamp_octets == 4:
        value["indicationHeader-formats"][1]["colletStartTime"] = pdu.collect_start_time[:4]
    return codec.encode(pdu.ASN_TYPE, value, version.variant)


def decode_kpm(cls: type[T], data: bytes, version: KpmVersion = DEFAULT_VERSION) -> T:
    """Decode ``data`` as the KPM type ``cls`` (e.g. ``decode_kpm(KpmIndicationHeader, b)``)
    of KPM ``version`` (v02.03: the 4-octet time stamp, read with a zero fraction)."""
    if cls is KpmIndicationHeader and version.timestamp_octets == 4:
        value = codec.decode(cls.ASN_TYPE, data, variant=version.variant)
        body = value["indicationHeader-formats"][1]
        if not isinstance(body, dict):  # an extension alternative: no header format we know
            raise E2smDecodeError(cls.ASN_TYPE, "unknown indicationHeader-formats alternative")
        body["colletStartTime"] = bytes(body["colletStartTime"]) + bytes(4)
        try:
            return KpmIndicationHeader.from_asn(value)  # type: ignore[return-value]
        except (ValueError, KeyError, TypeError, IndexError) as e:  # as codec.decode_pdu does
            raise E2smDecodeError(cls.ASN_TYPE, f"{type(e).__name__}: {e}") from None
    return codec.decode_pdu(cls, data, version.variant)
