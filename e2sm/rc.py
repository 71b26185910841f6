"""E2SM-RC v05.00 as octoric uses it: dataclasses, builders and parsers.

- RAN parameter values (``Element`` / ``Structure`` / ``ListValue`` in ``RanParam``), the
  building block of every RC message.
- CONTROL style 1 (radio bearer control): ``RcControlHeader`` (format 1), ``RcControlMessage``
  (format 1), ``RcControlOutcome`` (format 1), and octoric's vendor action 100 "Octopus content
  adaptation" (``OctopusAdaptation``; parameter IDs in ``OCTOPUS_PARAMS`` and
  docs/e2-interfaces.md).
- REPORT styles 2 (call process outcome) and 4 (UE information, used for handover detection):
  ``RcEventTrigger`` (formats 2 and 4), ``RcActionDefinition`` (format 1),
  ``RcIndicationHeader`` (formats 1-3), ``RcIndicationMessage`` (formats 1 and 2).
- ``RcRanFunctionDefinition`` (build and parse) and ``octoric_ran_function_definition()``.

Formats octoric does not use are still decoded and encoded by the generic codec (and the CLI);
their dataclass parse raises ``E2smDecodeError("... unsupported format ...")``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeVar

# the RC profile gNBs and xApps share lives in contracts; re-exported here
from octoric.contracts import rc as _profile
from octoric.e2sm import codec
from octoric.e2sm.common import RanFunctionName, UeId
from octoric.e2sm.kpm import real_from_asn, real_to_asn

CONTROL_STYLE_RADIO_BEARER = _profile.CONTROL_STYLE_RADIO_BEARER
OCTOPUS_ACTION_ID = _profile.OCTOPUS_ACTION_ID
OCTOPUS_ACTION_NAME = _profile.OCTOPUS_ACTION_NAME
OCTOPUS_PARAMS = _profile.OCTOPUS_PARAMS
OID = _profile.OID
PARAM_BITRATE_WINDOW_MS = _profile.PARAM_BITRATE_WINDOW_MS
PARAM_DRB_ID = _profile.PARAM_DRB_ID
PARAM_DROP_BY_BITRATE = _profile.PARAM_DROP_BY_BITRATE
PARAM_DROP_BY_MESSAGE = _profile.PARAM_DROP_BY_MESSAGE
PARAM_ENABLE = _profile.PARAM_ENABLE
PARAM_PRIORITY_LEVELS = _profile.PARAM_PRIORITY_LEVELS
PARAM_PROTECT_IN_FLIGHT = _profile.PARAM_PROTECT_IN_FLIGHT
RAN_FUNCTION_ID = _profile.RAN_FUNCTION_ID
REPORT_STYLE_CALL_PROCESS_OUTCOME = _profile.REPORT_STYLE_CALL_PROCESS_OUTCOME
REPORT_STYLE_UE_INFORMATION = _profile.REPORT_STYLE_UE_INFORMATION
SHORT_NAME = _profile.SHORT_NAME

# --- RAN parameter values -------------------------------------------------------------------


@dataclass(frozen=True)
class Bits:
    """A BIT STRING RAN parameter value."""

    value: int
    nbits: int


ParamValue = bool | int | float | bytes | str | Bits


def value_to_asn(v: ParamValue) -> tuple[str, Any]:
    """RANParameter-Value."""
    if isinstance(v, bool):
        return ("valueBoolean", v)
    if isinstance(v, int):
        return ("valueInt", v)
    if isinstance(v, float):
        return ("valueReal", real_to_asn(v))
    if isinstance(v, Bits):
        return ("valueBitS", (v.value, v.nbits))
    if isinstance(v, bytes):
        return ("valueOctS", v)
    if isinstance(v, str):
        return ("valuePrintableString", v)
    raise TypeError(f"bad RAN parameter value {v!r}")


def value_from_asn(v: tuple[str, Any]) -> ParamValue:
    kind, x = v
    if kind == "valueBoolean":
        return bool(x)
    if kind == "valueInt":
        return int(x)
    if kind == "valueReal":
        return real_from_asn(x)
    if kind == "valueBitS":
        return Bits(int(x[0]), int(x[1]))
    if kind == "valueOctS":
        return bytes(x)
    if kind == "valuePrintableString":
        return str(x)
    raise ValueError(f"unknown RANParameter-Value {kind}")


@dataclass(frozen=True)
class Element:
    """An element RAN parameter. ``key=True`` is ElementTrue (a key, value mandatory)."""

    value: ParamValue | None
    key: bool = False


@dataclass(frozen=True)
class Structure:
    """A structure RAN parameter: its member parameters (None = an empty structure)."""

    params: tuple[RanParam, ...] | None


@dataclass(frozen=True)
class ListValue:
    """A list RAN parameter: a list of structures."""

    items: tuple[Structure, ...]


@dataclass(frozen=True)
class RanParam:
    """RAN parameter ID and value type (RANParameter-ValueType)."""

    id: int
    value: Element | Structure | ListValue

    def value_type_to_asn(self) -> tuple[str, Any]:
        return _vt_to_asn(self.value)

    @classmethod
    def from_item(cls, pid: int, vt: tuple[str, Any]) -> RanParam:
        return cls(int(pid), _vt_from_asn(vt))


def _struct_to_asn(s: Structure) -> dict[str, Any]:
    if s.params is None:
        return {}
    return {
        "sequence-of-ranParameters": [
            {"ranParameter-ID": p.id, "ranParameter-valueType": _vt_to_asn(p.value)}
            for p in s.params
        ]
    }


def _struct_from_asn(v: dict[str, Any]) -> Structure:
    items = v.get("sequence-of-ranParameters")
    if items is None:
        return Structure(None)
    return Structure(
        tuple(RanParam.from_item(i["ranParameter-ID"], i["ranParameter-valueType"]) for i in items)
    )


def _vt_to_asn(v: Element | Structure | ListValue) -> tuple[str, Any]:
    if isinstance(v, Element):
        if v.key:
            if v.value is None:
                raise ValueError("a key element (ElementTrue) needs a value")
            return ("ranP-Choice-ElementTrue", {"ranParameter-value": value_to_asn(v.value)})
        body: dict[str, Any] = {}
        if v.value is not None:
            body["ranParameter-value"] = value_to_asn(v.value)
        return ("ranP-Choice-ElementFalse", body)
    if isinstance(v, Structure):
        return ("ranP-Choice-Structure", {"ranParameter-Structure": _struct_to_asn(v)})
    return (
        "ranP-Choice-List",
        {"ranParameter-List": {"list-of-ranParameter": [_struct_to_asn(s) for s in v.items]}},
    )


def _vt_from_asn(vt: tuple[str, Any]) -> Element | Structure | ListValue:
    kind, body = vt
    if kind == "ranP-Choice-ElementTrue":
        return Element(value_from_asn(body["ranParameter-value"]), key=True)
    if kind == "ranP-Choice-ElementFalse":
        rv = body.get("ranParameter-value")
        return Element(None if rv is None else value_from_asn(rv))
    if kind == "ranP-Choice-Structure":
        return _struct_from_asn(body["ranParameter-Structure"])
    if kind == "ranP-Choice-List":
        return ListValue(
            tuple(_struct_from_asn(s) for s in body["ranParameter-List"]["list-of-ranParameter"])
        )
    raise ValueError(f"unknown RANParameter-ValueType {kind}")


def _params_to_asn(params: tuple[RanParam, ...]) -> list[dict[str, Any]]:
    return [
        {"ranParameter-ID": p.id, "ranParameter-valueType": _vt_to_asn(p.value)} for p in params
    ]


def _params_from_asn(items: list[dict[str, Any]]) -> tuple[RanParam, ...]:
    return tuple(
        RanParam.from_item(i["ranParameter-ID"], i["ranParameter-valueType"]) for i in items
    )


def _single(v: tuple[str, Any], alt: str, what: str) -> Any:
    kind, body = v
    if kind != alt:
        raise ValueError(f"unsupported {what} format {kind} (octoric's dataclasses cover {alt})")
    return body


# --- CONTROL ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class RcControlHeader:
    """E2SM-RC-ControlHeader format 1: target UE, control style and action, decision."""

    ue_id: UeId
    style: int = CONTROL_STYLE_RADIO_BEARER
    action_id: int = OCTOPUS_ACTION_ID
    decision: str | None = None  # accept / reject

    ASN_TYPE = "E2SM-RC-ControlHeader"

    def to_asn(self) -> dict[str, Any]:
        v: dict[str, Any] = {
            "ueID": self.ue_id.to_asn(),
            "ric-Style-Type": self.style,
            "ric-ControlAction-ID": self.action_id,
        }
        if self.decision is not None:
            v["ric-ControlDecision"] = self.decision
        return {"ric-controlHeader-formats": ("controlHeader-Format1", v)}

    @classmethod
    def from_asn(cls, v: dict[str, Any]) -> RcControlHeader:
        b = _single(v["ric-controlHeader-formats"], "controlHeader-Format1", "control header")
        return cls(
            UeId.from_asn(b["ueID"]),
            int(b["ric-Style-Type"]),
            int(b["ric-ControlAction-ID"]),
            b.get("ric-ControlDecision"),
        )


@dataclass(frozen=True)
class RcControlMessage:
    """E2SM-RC-ControlMessage format 1: the control action's RAN parameters."""

    params: tuple[RanParam, ...]

    ASN_TYPE = "E2SM-RC-ControlMessage"

    def to_asn(self) -> dict[str, Any]:
        return {
            "ric-controlMessage-formats": (
                "controlMessage-Format1",
                {"ranP-List": _params_to_asn(self.params)},
            )
        }

    @classmethod
    def from_asn(cls, v: dict[str, Any]) -> RcControlMessage:
        b = _single(v["ric-controlMessage-formats"], "controlMessage-Format1", "control message")
        return cls(_params_from_asn(b["ranP-List"]))

    def param(self, pid: int) -> RanParam | None:
        return next((p for p in self.params if p.id == pid), None)


@dataclass(frozen=True)
class RcControlOutcome:
    """E2SM-RC-ControlOutcome format 1: (RAN parameter ID, value) pairs."""

    values: tuple[tuple[int, ParamValue], ...] = ()

    ASN_TYPE = "E2SM-RC-ControlOutcome"

    def to_asn(self) -> dict[str, Any]:
        return {
            "ric-controlOutcome-formats": (
                "controlOutcome-Format1",
                {
                    "ranP-List": [
                        {"ranParameter-ID": i, "ranParameter-value": value_to_asn(x)}
                        for i, x in self.values
                    ]
                },
            )
        }

    @classmethod
    def from_asn(cls, v: dict[str, Any]) -> RcControlOutcome:
        b = _single(v["ric-controlOutcome-formats"], "controlOutcome-Format1", "control outcome")
        return cls(
            tuple(
                (int(i["ranParameter-ID"]), value_from_asn(i["ranParameter-value"]))
                for i in b["ranP-List"]
            )
        )


@dataclass(frozen=True)
class OctopusAdaptation:
    """Control action 100 "Octopus content adaptation": the gNB dropper's settings for one
    DRB of the UE named in the control header (see docs/e2-interfaces.md)."""

    drb_id: int
    enable: bool = True
    priority_levels: int = 8
    bitrate_window_ms: int = 50
    drop_by_message: bool = True
    drop_by_bitrate: bool = True
    protect_in_flight: bool = True

    def to_message(self) -> RcControlMessage:
        return RcControlMessage(
            (
                RanParam(PARAM_DRB_ID, Element(self.drb_id, key=True)),
                RanParam(PARAM_ENABLE, Element(self.enable)),
                RanParam(PARAM_PRIORITY_LEVELS, Element(self.priority_levels)),
                RanParam(PARAM_BITRATE_WINDOW_MS, Element(self.bitrate_window_ms)),
                RanParam(PARAM_DROP_BY_MESSAGE, Element(self.drop_by_message)),
                RanParam(PARAM_DROP_BY_BITRATE, Element(self.drop_by_bitrate)),
                RanParam(PARAM_PROTECT_IN_FLIGHT, Element(self.protect_in_flight)),
            )
        )

    @classmethod
    def from_message(cls, msg: RcControlMessage) -> OctopusAdaptation:
        """Parse action 100's parameters (DRB ID mandatory, the rest default when absent)."""
        vals: dict[int, ParamValue | None] = {}
        for p in msg.params:
            if not isinstance(p.value, Element):
                raise ValueError(f"RAN parameter {p.id} of action 100 must be an element")
            vals[p.id] = p.value.value
        drb = vals.get(PARAM_DRB_ID)
        if not isinstance(drb, int) or isinstance(drb, bool):
            raise ValueError("action 100 needs an integer DRB ID (RAN parameter 1)")

        def flag(pid: int, default: bool) -> bool:
            x = vals.get(pid)
            if x is None:
                return default
            if not isinstance(x, bool):
                raise ValueError(f"RAN parameter {pid} ({OCTOPUS_PARAMS[pid]}) must be a boolean")
            return x

        def integer(pid: int, default: int) -> int:
            x = vals.get(pid)
            if x is None:
                return default
            if not isinstance(x, int) or isinstance(x, bool):
                raise ValueError(f"RAN parameter {pid} ({OCTOPUS_PARAMS[pid]}) must be an integer")
            return x

        return cls(
            drb,
            flag(PARAM_ENABLE, True),
            integer(PARAM_PRIORITY_LEVELS, 8),
            integer(PARAM_BITRATE_WINDOW_MS, 50),
            flag(PARAM_DROP_BY_MESSAGE, True),
            flag(PARAM_DROP_BY_BITRATE, True),
            flag(PARAM_PROTECT_IN_FLIGHT, True),
        )


def octopus_control(ue_id: UeId, adaptation: OctopusAdaptation) -> tuple[bytes, bytes]:
    """(control header, control message) bytes of an action-100 RIC control request."""
    return encode_rc(RcControlHeader(ue_id)), encode_rc(adaptation.to_message())


# --- REPORT ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class UeInfoTrigger:
    """E2SM-RC-EventTrigger-Format4-Item: report when the UE's RRC state changes to one of
    ``rrc_states`` (rrc-connected / rrc-inactive / rrc-idle / any) or, when ``ue_id_change``
    is set, when that UE ID changes (e.g. at handover)."""

    condition_id: int
    rrc_states: tuple[str, ...] = ()
    ue_id_change: int | None = None

    def to_asn(self) -> dict[str, Any]:
        if self.ue_id_change is not None:
            trig: tuple[str, Any] = (
                "triggerType-Choice-UEID",
                {"ueIDchange-ID": self.ue_id_change},
            )
        else:
            trig = (
                "triggerType-Choice-RRCstate",
                {"rrcState-List": [{"stateChangedTo": s} for s in self.rrc_states]},
            )
        return {"ric-eventTriggerCondition-ID": self.condition_id, "triggerType": trig}

    @classmethod
    def from_asn(cls, v: dict[str, Any]) -> UeInfoTrigger:
        kind, body = v["triggerType"]
        cid = int(v["ric-eventTriggerCondition-ID"])
        if kind == "triggerType-Choice-RRCstate":
            return cls(cid, tuple(s["stateChangedTo"] for s in body["rrcState-List"]))
        if kind == "triggerType-Choice-UEID":
            return cls(cid, ue_id_change=int(body["ueIDchange-ID"]))
        raise ValueError(f"unsupported UE information trigger {kind}")


@dataclass(frozen=True)
class RcEventTrigger:
    """E2SM-RC-EventTrigger format 4 (UE information change, report style 4) when
    ``ue_info`` is set, else format 2 (call process breakpoint, report style 2)."""

    ue_info: tuple[UeInfoTrigger, ...] | None = None
    call_process_type_id: int | None = None
    breakpoint_id: int | None = None

    ASN_TYPE = "E2SM-RC-EventTrigger"

    def to_asn(self) -> dict[str, Any]:
        if self.ue_info is not None:
            f: tuple[str, Any] = (
                "eventTrigger-Format4",
                {"uEInfoChange-List": [t.to_asn() for t in self.ue_info]},
            )
        else:
            if self.call_process_type_id is None or self.breakpoint_id is None:
                raise ValueError("format 2 needs call_process_type_id and breakpoint_id")
            f = (
                "eventTrigger-Format2",
                {
                    "ric-callProcessType-ID": self.call_process_type_id,
                    "ric-callProcessBreakpoint-ID": self.breakpoint_id,
                },
            )
        return {"ric-eventTrigger-formats": f}

    @classmethod
    def from_asn(cls, v: dict[str, Any]) -> RcEventTrigger:
        kind, body = v["ric-eventTrigger-formats"]
        if kind == "eventTrigger-Format4":
            return cls(tuple(UeInfoTrigger.from_asn(t) for t in body["uEInfoChange-List"]))
        if kind == "eventTrigger-Format2":
            return cls(
                None,
                int(body["ric-callProcessType-ID"]),
                int(body["ric-callProcessBreakpoint-ID"]),
            )
        raise ValueError(f"unsupported event trigger format {kind}")


def event_trigger_ue_info(
    rrc_states: tuple[str, ...] = ("rrc-connected", "rrc-inactive", "rrc-idle"),
    ue_id_change: int | None = 1,
) -> RcEventTrigger:
    """Report style 4 trigger octoric's handover xApp uses: RRC state changes, and UE ID
    changes (condition 2) when ``ue_id_change`` is not None."""
    items = [UeInfoTrigger(1, rrc_states)]
    if ue_id_change is not None:
        items.append(UeInfoTrigger(2, ue_id_change=ue_id_change))
    return RcEventTrigger(tuple(items))


@dataclass(frozen=True)
class RcActionDefinition:
    """E2SM-RC-ActionDefinition format 1: the RAN parameters to report."""

    style: int
    param_ids: tuple[int, ...]

    ASN_TYPE = "E2SM-RC-ActionDefinition"

    def to_asn(self) -> dict[str, Any]:
        return {
            "ric-Style-Type": self.style,
            "ric-actionDefinition-formats": (
                "actionDefinition-Format1",
                {"ranP-ToBeReported-List": [{"ranParameter-ID": i} for i in self.param_ids]},
            ),
        }

    @classmethod
    def from_asn(cls, v: dict[str, Any]) -> RcActionDefinition:
        b = _single(
            v["ric-actionDefinition-formats"], "actionDefinition-Format1", "action definition"
        )
        return cls(
            int(v["ric-Style-Type"]),
            tuple(int(i["ranParameter-ID"]) for i in b["ranP-ToBeReported-List"]),
        )


@dataclass(frozen=True)
class RcIndicationHeader:
    """E2SM-RC-IndicationHeader: format 1 (``condition_id``), 2 (``ue_id`` + insert style and
    indication ID) or 3 (``condition_id`` and ``ue_id``), per ``format``."""

    format: int = 1
    condition_id: int | None = None
    ue_id: UeId | None = None
    insert_style: int | None = None
    insert_indication_id: int | None = None

    ASN_TYPE = "E2SM-RC-IndicationHeader"

    def to_asn(self) -> dict[str, Any]:
        if self.format == 2:
            if self.ue_id is None or self.insert_style is None or self.insert_indication_id is None:
                raise ValueError("header format 2 needs ue_id, insert_style, insert_indication_id")
            body: dict[str, Any] = {
                "ueID": self.ue_id.to_asn(),
                "ric-InsertStyle-Type": self.insert_style,
                "ric-InsertIndication-ID": self.insert_indication_id,
            }
        else:
            body = {}
            if self.condition_id is not None:
                body["ric-eventTriggerCondition-ID"] = self.condition_id
            if self.format == 3 and self.ue_id is not None:
                body["ueID"] = self.ue_id.to_asn()
        return {"ric-indicationHeader-formats": (f"indicationHeader-Format{self.format}", body)}

    @classmethod
    def from_asn(cls, v: dict[str, Any]) -> RcIndicationHeader:
        kind, b = v["ric-indicationHeader-formats"]
        fmt = {"indicationHeader-Format1": 1, "indicationHeader-Format2": 2}.get(kind, 3)
        if kind not in (
            "indicationHeader-Format1",
            "indicationHeader-Format2",
            "indicationHeader-Format3",
        ):
            raise ValueError(f"unsupported indication header {kind}")
        ue = b.get("ueID")
        return cls(
            fmt,
            b.get("ric-eventTriggerCondition-ID"),
            None if ue is None else UeId.from_asn(ue),
            b.get("ric-InsertStyle-Type"),
            b.get("ric-InsertIndication-ID"),
        )


@dataclass(frozen=True)
class RcIndicationMessage:
    """E2SM-RC-IndicationMessage format 1 (``params``: the reported RAN parameters) or
    format 2 (``ue_params``: per UE), whichever is set."""

    params: tuple[RanParam, ...] | None = None
    ue_params: tuple[tuple[UeId, tuple[RanParam, ...]], ...] | None = None

    ASN_TYPE = "E2SM-RC-IndicationMessage"

    def to_asn(self) -> dict[str, Any]:
        if self.ue_params is not None:
            f: tuple[str, Any] = (
                "indicationMessage-Format2",
                {
                    "ueParameter-List": [
                        {"ueID": u.to_asn(), "ranP-List": _params_to_asn(ps)}
                        for u, ps in self.ue_params
                    ]
                },
            )
        else:
            f = (
                "indicationMessage-Format1",
                {"ranP-Reported-List": _params_to_asn(self.params or ())},
            )
        return {"ric-indicationMessage-formats": f}

    @classmethod
    def from_asn(cls, v: dict[str, Any]) -> RcIndicationMessage:
        kind, b = v["ric-indicationMessage-formats"]
        if kind == "indicationMessage-Format1":
            return cls(params=_params_from_asn(b["ranP-Reported-List"]))
        if kind == "indicationMessage-Format2":
            return cls(
                ue_params=tuple(
                    (UeId.from_asn(i["ueID"]), _params_from_asn(i["ranP-List"]))
                    for i in b["ueParameter-List"]
                )
            )
        raise ValueError(f"unsupported indication message {kind}")


# --- RAN function definition ---------------------------------------------------------------


@dataclass(frozen=True)
class RcStyle:
    """A style entry of the RAN function definition. For event trigger styles ``formats`` is
    (event trigger format,); for report styles (supported event trigger style, action format,
    header format, message format); for control styles (header, message, outcome formats)."""

    style: int
    name: str
    formats: tuple[int, ...]
    params: tuple[tuple[int, str], ...] = ()  # report parameters (report styles)


@dataclass(frozen=True)
class RcControlAction:
    """RANFunctionDefinition-Control-Action-Item: action ID, name, its RAN parameters."""

    action_id: int
    name: str
    params: tuple[tuple[int, str], ...] = ()


@dataclass(frozen=True)
class RcControlStyle:
    style: int
    name: str
    actions: tuple[RcControlAction, ...]
    header_format: int = 1
    message_format: int = 1
    outcome_format: int = 1
    # the item's fields octoric does not interpret (ric-CallProcessIDFormat-Type,
    # ran-ControlOutcomeParameters-List, extensions: srsRAN_Project sends the first two), as
    # pycrate values, so a node's definition parses and re-encodes identically
    other: dict[str, Any] | None = None


def _named_params(items: list[dict[str, Any]] | None) -> tuple[tuple[int, str], ...]:
    return tuple((int(i["ranParameter-ID"]), i["ranParameter-name"]) for i in items or [])


def _named_params_to_asn(params: tuple[tuple[int, str], ...]) -> list[dict[str, Any]]:
    return [{"ranParameter-ID": i, "ranParameter-name": n} for i, n in params]


@dataclass(frozen=True)
class RcRanFunctionDefinition:
    """E2SM-RC-RANFunctionDefinition: name, event trigger / report / control styles. The
    parts octoric does not interpret (insert, policy, query, parameter lists of event triggers)
    are kept as pycrate values in ``other`` so a parsed definition re-encodes identically."""

    name: RanFunctionName
    event_trigger_styles: tuple[RcStyle, ...] | None = None
    report_styles: tuple[RcStyle, ...] | None = None
    control_styles: tuple[RcControlStyle, ...] | None = None
    other: dict[str, Any] | None = None

    ASN_TYPE = "E2SM-RC-RANFunctionDefinition"

    def to_asn(self) -> dict[str, Any]:
        v: dict[str, Any] = {"ranFunction-Name": self.name.to_asn()}
        other = dict(self.other or {})
        et_other = other.pop("ranFunctionDefinition-EventTrigger", {})
        if self.event_trigger_styles is not None:
            et = dict(et_other)
            et["ric-EventTriggerStyle-List"] = [
                {
                    "ric-EventTriggerStyle-Type": s.style,
                    "ric-EventTriggerStyle-Name": s.name,
                    "ric-EventTriggerFormat-Type": s.formats[0],
                }
                for s in self.event_trigger_styles
            ]
            v["ranFunctionDefinition-EventTrigger"] = et
        if self.report_styles is not None:
            items = []
            for s in self.report_styles:
                it: dict[str, Any] = {
                    "ric-ReportStyle-Type": s.style,
                    "ric-ReportStyle-Name": s.name,
                    "ric-SupportedEventTriggerStyle-Type": s.formats[0],
                    "ric-ReportActionFormat-Type": s.formats[1],
                    "ric-IndicationHeaderFormat-Type": s.formats[2],
                    "ric-IndicationMessageFormat-Type": s.formats[3],
                }
                if s.params:
                    it["ran-ReportParameters-List"] = _named_params_to_asn(s.params)
                items.append(it)
            v["ranFunctionDefinition-Report"] = {"ric-ReportStyle-List": items}
        if "ranFunctionDefinition-Insert" in other:
            v["ranFunctionDefinition-Insert"] = other.pop("ranFunctionDefinition-Insert")
        if self.control_styles is not None:
            citems = []
            for c in self.control_styles:
                ci: dict[str, Any] = {
                    "ric-ControlStyle-Type": c.style,
                    "ric-ControlStyle-Name": c.name,
                }
                if c.actions:
                    acts = []
                    for a in c.actions:
                        ai: dict[str, Any] = {
                            "ric-ControlAction-ID": a.action_id,
                            "ric-ControlAction-Name": a.name,
                        }
                        if a.params:
                            ai["ran-ControlActionParameters-List"] = _named_params_to_asn(a.params)
                        acts.append(ai)
                    ci["ric-ControlAction-List"] = acts
                ci["ric-ControlHeaderFormat-Type"] = c.header_format
                ci["ric-ControlMessageFormat-Type"] = c.message_format
                ci["ric-ControlOutcomeFormat-Type"] = c.outcome_format
                ci.update(c.other or {})
                citems.append(ci)
            v["ranFunctionDefinition-Control"] = {"ric-ControlStyle-List": citems}
        v.update(other)
        return v

    @classmethod
    def from_asn(cls, v: dict[str, Any]) -> RcRanFunctionDefinition:
        other = {k: x for k, x in v.items() if k != "ranFunction-Name"}
        ets = None
        et = other.pop("ranFunctionDefinition-EventTrigger", None)
        if et is not None:
            ets = tuple(
                RcStyle(
                    int(s["ric-EventTriggerStyle-Type"]),
                    s["ric-EventTriggerStyle-Name"],
                    (int(s["ric-EventTriggerFormat-Type"]),),
                )
                for s in et["ric-EventTriggerStyle-List"]
            )
            rest = {k: x for k, x in et.items() if k != "ric-EventTriggerStyle-List"}
            if rest:
                other["ranFunctionDefinition-EventTrigger"] = rest
        rs = None
        rep = other.pop("ranFunctionDefinition-Report", None)
        if rep is not None:
            rs = tuple(
                RcStyle(
                    int(s["ric-ReportStyle-Type"]),
                    s["ric-ReportStyle-Name"],
                    (
                        int(s["ric-SupportedEventTriggerStyle-Type"]),
                        int(s["ric-ReportActionFormat-Type"]),
                        int(s["ric-IndicationHeaderFormat-Type"]),
                        int(s["ric-IndicationMessageFormat-Type"]),
                    ),
                    _named_params(s.get("ran-ReportParameters-List")),
                )
                for s in rep["ric-ReportStyle-List"]
            )
        cs = None
        ctl = other.pop("ranFunctionDefinition-Control", None)
        if ctl is not None:
            styles = []
            for c in ctl["ric-ControlStyle-List"]:
                unmodelled = {k: x for k, x in c.items() if k not in _CONTROL_KEYS}
                styles.append(
                    RcControlStyle(
                        int(c["ric-ControlStyle-Type"]),
                        c["ric-ControlStyle-Name"],
                        tuple(
                            RcControlAction(
                                int(a["ric-ControlAction-ID"]),
                                a["ric-ControlAction-Name"],
                                _named_params(a.get("ran-ControlActionParameters-List")),
                            )
                            for a in c.get("ric-ControlAction-List", [])
                        ),
                        int(c["ric-ControlHeaderFormat-Type"]),
                        int(c["ric-ControlMessageFormat-Type"]),
                        int(c["ric-ControlOutcomeFormat-Type"]),
                        unmodelled or None,
                    )
                )
            cs = tuple(styles)
        return cls(RanFunctionName.from_asn(v["ranFunction-Name"]), ets, rs, cs, other or None)


_CONTROL_KEYS = {
    "ric-ControlStyle-Type",
    "ric-ControlStyle-Name",
    "ric-ControlAction-List",
    "ric-ControlHeaderFormat-Type",
    "ric-ControlMessageFormat-Type",
    "ric-ControlOutcomeFormat-Type",
}


def octoric_ran_function_definition() -> RcRanFunctionDefinition:
    """The RC RAN function definition octoric's simulated gNB announces in E2 setup."""
    return RcRanFunctionDefinition(
        RanFunctionName(SHORT_NAME, OID, "RAN Control"),
        (
            RcStyle(2, "Call Process Breakpoint", (2,)),
            RcStyle(4, "UE Information Change", (4,)),
        ),
        (
            RcStyle(2, "Call Process Outcome", (2, 1, 1, 1)),
            RcStyle(4, "UE Information", (4, 1, 1, 2)),
        ),
        (
            RcControlStyle(
                CONTROL_STYLE_RADIO_BEARER,
                "Radio Bearer Control",
                (
                    RcControlAction(
                        OCTOPUS_ACTION_ID, OCTOPUS_ACTION_NAME, tuple(OCTOPUS_PARAMS.items())
                    ),
                ),
            ),
        ),
    )


# --- encode / decode -----------------------------------------------------------------------

RcPdu = (
    RcControlHeader
    | RcControlMessage
    | RcControlOutcome
    | RcEventTrigger
    | RcActionDefinition
    | RcIndicationHeader
    | RcIndicationMessage
    | RcRanFunctionDefinition
)
T = TypeVar(
    "T",
    RcControlHeader,
    RcControlMessage,
    RcControlOutcome,
    RcEventTrigger,
    RcActionDefinition,
    RcIndicationHeader,
    RcIndicationMessage,
    RcRanFunctionDefinition,
)


def encode_rc(pdu: RcPdu) -> bytes:
    """Aligned-PER bytes of a RC dataclass (its ``ASN_TYPE``)."""
    return codec.encode_pdu(pdu)


def decode_rc(cls: type[T], data: bytes) -> T:
    """Decode ``data`` as the RC type ``cls`` (e.g. ``decode_rc(RcControlHeader, b)``)."""
    return codec.decode_pdu(cls, data)
