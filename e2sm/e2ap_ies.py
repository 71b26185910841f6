"""E2AP information elements as dataclasses, with their pycrate-value converters.

Each type has ``to_asn()`` (pycrate value of the ASN.1 type named in its docstring) and a
``from_asn(value)`` classmethod. Converters raise ``ValueError`` / ``KeyError`` /
``TypeError`` on malformed values; ``e2ap.decode_e2ap`` turns those into ``E2smDecodeError``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

CauseGroup = Literal["ricRequest", "ricService", "e2Node", "transport", "protocol", "misc"]
CAUSE_GROUPS: tuple[str, ...] = (
    "ricRequest",
    "ricService",
    "e2Node",
    "transport",
    "protocol",
    "misc",
)


def bits_to_asn(value: int, nbits: int) -> tuple[int, int]:
    if not 0 <= value < (1 << nbits):
        raise ValueError(f"{value} does not fit in {nbits} bits")
    return (value, nbits)


@dataclass(frozen=True)
class RicRequestId:
    """RICrequestID: requestor (the xApp / submgr) and instance (the subscription) IDs."""

    requestor_id: int
    instance_id: int

    def to_asn(self) -> dict[str, Any]:
        return {"ricRequestorID": self.requestor_id, "ricInstanceID": self.instance_id}

    @classmethod
    def from_asn(cls, v: dict[str, Any]) -> RicRequestId:
        return cls(int(v["ricRequestorID"]), int(v["ricInstanceID"]))


@dataclass(frozen=True)
class Cause:
    """Cause: a group (``ricRequest``, ``ricService``, ``e2Node``, ``transport``, ``protocol``,
    ``misc``) and the enumerated value's name, e.g. ``Cause("misc", "unspecified")``."""

    group: str
    value: str

    def to_asn(self) -> tuple[str, str]:
        if self.group not in CAUSE_GROUPS:
            raise ValueError(f"unknown cause group {self.group!r}")
        return (self.group, self.value)

    @classmethod
    def from_asn(cls, v: tuple[str, Any]) -> Cause:
        group, value = v
        return cls(str(group), str(value))


@dataclass(frozen=True)
class CriticalityDiagnosticsIe:
    """CriticalityDiagnostics-IE-Item."""

    criticality: str
    ie_id: int
    type_of_error: str


@dataclass(frozen=True)
class CriticalityDiagnostics:
    """CriticalityDiagnostics (every field optional, as in the specification)."""

    procedure_code: int | None = None
    triggering_message: str | None = None
    procedure_criticality: str | None = None
    request_id: RicRequestId | None = None
    ies: tuple[CriticalityDiagnosticsIe, ...] | None = None

    def to_asn(self) -> dict[str, Any]:
        v: dict[str, Any] = {}
        if self.procedure_code is not None:
            v["procedureCode"] = self.procedure_code
        if self.triggering_message is not None:
            v["triggeringMessage"] = self.triggering_message
        if self.procedure_criticality is not None:
            v["procedureCriticality"] = self.procedure_criticality
        if self.request_id is not None:
            v["ricRequestorID"] = self.request_id.to_asn()
        if self.ies is not None:
            v["iEsCriticalityDiagnostics"] = [
                {"iECriticality": i.criticality, "iE-ID": i.ie_id, "typeOfError": i.type_of_error}
                for i in self.ies
            ]
        return v

    @classmethod
    def from_asn(cls, v: dict[str, Any]) -> CriticalityDiagnostics:
        rid = v.get("ricRequestorID")
        ies = v.get("iEsCriticalityDiagnostics")
        return cls(
            procedure_code=v.get("procedureCode"),
            triggering_message=v.get("triggeringMessage"),
            procedure_criticality=v.get("procedureCriticality"),
            request_id=None if rid is None else RicRequestId.from_asn(rid),
            ies=None
            if ies is None
            else tuple(
                CriticalityDiagnosticsIe(i["iECriticality"], int(i["iE-ID"]), i["typeOfError"])
                for i in ies
            ),
        )


# E2 node kinds and the bit lengths their node IDs may take.
NodeKind = Literal["gNB", "en-gNB", "ng-eNB", "eNB"]
_NG_ENB_ID_CHOICE = {20: "enb-ID-macro", 18: "enb-ID-shortmacro", 21: "enb-ID-longmacro"}
_ENB_ID_CHOICE = {
    20: "macro-eNB-ID",
    28: "home-eNB-ID",
    18: "short-Macro-eNB-ID",
    21: "long-Macro-eNB-ID",
}


@dataclass(frozen=True)
class GlobalE2NodeId:
    """GlobalE2node-ID. ``node_id`` is the gNB / eNB ID, ``node_id_bits`` its length
    (22..32 for gNBs; 18/20/21/28 for eNB kinds, which also selects the ENB-ID alternative).
    ``cu_up_id`` / ``du_id`` are the gNB-CU-UP-ID / gNB-DU-ID of a split gNB (gNB, en-gNB)."""

    plmn: bytes
    node_id: int
    node_id_bits: int = 32
    kind: str = "gNB"
    cu_up_id: int | None = None
    du_id: int | None = None

    def to_asn(self) -> tuple[str, dict[str, Any]]:
        nid = bits_to_asn(self.node_id, self.node_id_bits)
        if self.kind == "gNB":
            v: dict[str, Any] = {"global-gNB-ID": {"plmn-id": self.plmn, "gnb-id": ("gnb-ID", nid)}}
            if self.cu_up_id is not None:
                v["gNB-CU-UP-ID"] = self.cu_up_id
            if self.du_id is not None:
                v["gNB-DU-ID"] = self.du_id
            return ("gNB", v)
        if self.kind == "en-gNB":
            v = {"global-en-gNB-ID": {"pLMN-Identity": self.plmn, "gNB-ID": ("gNB-ID", nid)}}
            if self.cu_up_id is not None:
                v["en-gNB-CU-UP-ID"] = self.cu_up_id
            if self.du_id is not None:
                v["en-gNB-DU-ID"] = self.du_id
            return ("en-gNB", v)
        if self.kind == "ng-eNB":
            alt = _NG_ENB_ID_CHOICE[self.node_id_bits]
            return ("ng-eNB", {"global-ng-eNB-ID": {"plmn-id": self.plmn, "enb-id": (alt, nid)}})
        if self.kind == "eNB":
            alt = _ENB_ID_CHOICE[self.node_id_bits]
            return ("eNB", {"global-eNB-ID": {"pLMN-Identity": self.plmn, "eNB-ID": (alt, nid)}})
        raise ValueError(f"unknown E2 node kind {self.kind!r}")

    @classmethod
    def from_asn(cls, v: tuple[str, Any]) -> GlobalE2NodeId:
        kind, body = v
        if kind == "gNB":
            g = body["global-gNB-ID"]
            nid, nbits = g["gnb-id"][1]
            return cls(
                g["plmn-id"], nid, nbits, "gNB", body.get("gNB-CU-UP-ID"), body.get("gNB-DU-ID")
            )
        if kind == "en-gNB":
            g = body["global-en-gNB-ID"]
            nid, nbits = g["gNB-ID"][1]
            return cls(
                g["pLMN-Identity"],
                nid,
                nbits,
                "en-gNB",
                body.get("en-gNB-CU-UP-ID"),
                body.get("en-gNB-DU-ID"),
            )
        if kind == "ng-eNB":
            g = body["global-ng-eNB-ID"]
            nid, nbits = g["enb-id"][1]
            return cls(g["plmn-id"], nid, nbits, "ng-eNB")
        if kind == "eNB":
            g = body["global-eNB-ID"]
            nid, nbits = g["eNB-ID"][1]
            return cls(g["pLMN-Identity"], nid, nbits, "eNB")
        raise ValueError(f"unsupported GlobalE2node-ID alternative {kind!r}")


@dataclass(frozen=True)
class GlobalRicId:
    """GlobalRIC-ID: PLMN and a 20-bit near-RT RIC ID."""

    plmn: bytes
    ric_id: int

    def to_asn(self) -> dict[str, Any]:
        return {"pLMN-Identity": self.plmn, "ric-ID": bits_to_asn(self.ric_id, 20)}

    @classmethod
    def from_asn(cls, v: dict[str, Any]) -> GlobalRicId:
        return cls(v["pLMN-Identity"], int(v["ric-ID"][0]))


@dataclass(frozen=True)
class RanFunction:
    """RANfunction-Item: ``definition`` is the E2SM RAN function definition (aligned PER)."""

    ran_function_id: int
    definition: bytes
    revision: int
    oid: str

    def to_asn(self) -> dict[str, Any]:
        return {
            "ranFunctionID": self.ran_function_id,
            "ranFunctionDefinition": self.definition,
            "ranFunctionRevision": self.revision,
            "ranFunctionOID": self.oid,
        }

    @classmethod
    def from_asn(cls, v: dict[str, Any]) -> RanFunction:
        return cls(
            int(v["ranFunctionID"]),
            v["ranFunctionDefinition"],
            int(v["ranFunctionRevision"]),
            str(v["ranFunctionOID"]),
        )


@dataclass(frozen=True)
class RanFunctionIdItem:
    """RANfunctionID-Item."""

    ran_function_id: int
    revision: int

    def to_asn(self) -> dict[str, Any]:
        return {"ranFunctionID": self.ran_function_id, "ranFunctionRevision": self.revision}

    @classmethod
    def from_asn(cls, v: dict[str, Any]) -> RanFunctionIdItem:
        return cls(int(v["ranFunctionID"]), int(v["ranFunctionRevision"]))


@dataclass(frozen=True)
class RanFunctionCause:
    """RANfunctionIDcause-Item: a rejected RAN function."""

    ran_function_id: int
    cause: Cause

    def to_asn(self) -> dict[str, Any]:
        return {"ranFunctionID": self.ran_function_id, "cause": self.cause.to_asn()}

    @classmethod
    def from_asn(cls, v: dict[str, Any]) -> RanFunctionCause:
        return cls(int(v["ranFunctionID"]), Cause.from_asn(v["cause"]))


@dataclass(frozen=True)
class E2NodeComponentId:
    """E2nodeComponentID for the interfaces octoric's nodes report: ``interface`` is one of
    ng / xn / e1 / f1 / w1 / s1 / x2. NG and S1 carry a name (AMF / MME name), E1, F1 and W1
    an integer ID (gNB-CU-UP-ID, gNB-DU-ID, ng-eNB-DU-ID). Xn and X2 keep pycrate's value of
    the node ID in ``other`` (rarely used; octoric does not interpret it)."""

    interface: str
    name: str | None = None
    number: int | None = None
    other: Any = None

    _ALT: ClassVar[dict[str, tuple[str, str]]] = {
        "ng": ("e2nodeComponentInterfaceTypeNG", "amf-name"),
        "xn": ("e2nodeComponentInterfaceTypeXn", "global-NG-RAN-Node-ID"),
        "e1": ("e2nodeComponentInterfaceTypeE1", "gNB-CU-UP-ID"),
        "f1": ("e2nodeComponentInterfaceTypeF1", "gNB-DU-ID"),
        "w1": ("e2nodeComponentInterfaceTypeW1", "ng-eNB-DU-ID"),
        "s1": ("e2nodeComponentInterfaceTypeS1", "mme-name"),
        "x2": ("e2nodeComponentInterfaceTypeX2", ""),
    }

    def to_asn(self) -> tuple[str, dict[str, Any]]:
        alt, key = self._ALT[self.interface]
        if self.interface in ("ng", "s1"):
            return (alt, {key: self.name})
        if self.interface in ("e1", "f1", "w1"):
            return (alt, {key: self.number})
        if self.interface == "xn":
            return (alt, {key: self.other})
        return (alt, dict(self.other or {}))

    @classmethod
    def from_asn(cls, v: tuple[str, dict[str, Any]]) -> E2NodeComponentId:
        alt, body = v
        for iface, (a, key) in cls._ALT.items():
            if a != alt:
                continue
            if iface in ("ng", "s1"):
                return cls(iface, name=str(body[key]))
            if iface in ("e1", "f1", "w1"):
                return cls(iface, number=int(body[key]))
            if iface == "xn":
                return cls(iface, other=body[key])
            return cls(iface, other=body)
        raise ValueError(f"unknown E2nodeComponentID alternative {alt!r}")


@dataclass(frozen=True)
class E2NodeComponentConfig:
    """E2nodeComponentConfigAddition-Item / -Update-Item: the interface's setup request and
    response messages as the node saw them (opaque bytes)."""

    interface_type: str
    component_id: E2NodeComponentId
    request_part: bytes
    response_part: bytes

    def to_asn(self) -> dict[str, Any]:
        return {
            "e2nodeComponentInterfaceType": self.interface_type,
            "e2nodeComponentID": self.component_id.to_asn(),
            "e2nodeComponentConfiguration": {
                "e2nodeComponentRequestPart": self.request_part,
                "e2nodeComponentResponsePart": self.response_part,
            },
        }

    @classmethod
    def from_asn(cls, v: dict[str, Any]) -> E2NodeComponentConfig:
        c = v["e2nodeComponentConfiguration"]
        return cls(
            v["e2nodeComponentInterfaceType"],
            E2NodeComponentId.from_asn(v["e2nodeComponentID"]),
            c["e2nodeComponentRequestPart"],
            c["e2nodeComponentResponsePart"],
        )


@dataclass(frozen=True)
class E2NodeComponentRef:
    """E2nodeComponentConfigRemoval-Item: which component is removed."""

    interface_type: str
    component_id: E2NodeComponentId

    def to_asn(self) -> dict[str, Any]:
        return {
            "e2nodeComponentInterfaceType": self.interface_type,
            "e2nodeComponentID": self.component_id.to_asn(),
        }

    @classmethod
    def from_asn(cls, v: dict[str, Any]) -> E2NodeComponentRef:
        return cls(
            v["e2nodeComponentInterfaceType"], E2NodeComponentId.from_asn(v["e2nodeComponentID"])
        )


@dataclass(frozen=True)
class E2NodeComponentConfigAck:
    """E2nodeComponentConfig{Addition,Update,Removal}Ack-Item."""

    interface_type: str
    component_id: E2NodeComponentId
    success: bool = True
    failure_cause: Cause | None = None

    def to_asn(self) -> dict[str, Any]:
        ack: dict[str, Any] = {"updateOutcome": "success" if self.success else "failure"}
        if self.failure_cause is not None:
            ack["failureCause"] = self.failure_cause.to_asn()
        return {
            "e2nodeComponentInterfaceType": self.interface_type,
            "e2nodeComponentID": self.component_id.to_asn(),
            "e2nodeComponentConfigurationAck": ack,
        }

    @classmethod
    def from_asn(cls, v: dict[str, Any]) -> E2NodeComponentConfigAck:
        ack = v["e2nodeComponentConfigurationAck"]
        fc = ack.get("failureCause")
        return cls(
            v["e2nodeComponentInterfaceType"],
            E2NodeComponentId.from_asn(v["e2nodeComponentID"]),
            ack["updateOutcome"] == "success",
            None if fc is None else Cause.from_asn(fc),
        )


@dataclass(frozen=True)
class TnlInformation:
    """TNLinformation: transport address (a BIT STRING, usually 32 or 128 bits) and port."""

    address: int
    address_bits: int
    port: int | None = None

    def to_asn(self) -> dict[str, Any]:
        v: dict[str, Any] = {"tnlAddress": bits_to_asn(self.address, self.address_bits)}
        if self.port is not None:
            v["tnlPort"] = bits_to_asn(self.port, 16)
        return v

    @classmethod
    def from_asn(cls, v: dict[str, Any]) -> TnlInformation:
        addr, nbits = v["tnlAddress"]
        port = v.get("tnlPort")
        return cls(addr, nbits, None if port is None else int(port[0]))


@dataclass(frozen=True)
class TnlAssociationRemoval:
    """E2nodeTNLassociationRemoval-Item."""

    tnl: TnlInformation
    tnl_ric: TnlInformation

    def to_asn(self) -> dict[str, Any]:
        return {"tnlInformation": self.tnl.to_asn(), "tnlInformationRIC": self.tnl_ric.to_asn()}

    @classmethod
    def from_asn(cls, v: dict[str, Any]) -> TnlAssociationRemoval:
        return cls(
            TnlInformation.from_asn(v["tnlInformation"]),
            TnlInformation.from_asn(v["tnlInformationRIC"]),
        )


@dataclass(frozen=True)
class E2ConnectionUpdateItem:
    """E2connectionUpdate-Item: a TNL association and its usage."""

    tnl: TnlInformation
    usage: str  # ric-service / support-function / both

    def to_asn(self) -> dict[str, Any]:
        return {"tnlInformation": self.tnl.to_asn(), "tnlUsage": self.usage}

    @classmethod
    def from_asn(cls, v: dict[str, Any]) -> E2ConnectionUpdateItem:
        return cls(TnlInformation.from_asn(v["tnlInformation"]), v["tnlUsage"])


@dataclass(frozen=True)
class E2ConnectionSetupFailed:
    """E2connectionSetupFailed-Item."""

    tnl: TnlInformation
    cause: Cause

    def to_asn(self) -> dict[str, Any]:
        return {"tnlInformation": self.tnl.to_asn(), "cause": self.cause.to_asn()}

    @classmethod
    def from_asn(cls, v: dict[str, Any]) -> E2ConnectionSetupFailed:
        return cls(TnlInformation.from_asn(v["tnlInformation"]), Cause.from_asn(v["cause"]))


@dataclass(frozen=True)
class RicSubsequentAction:
    """RICsubsequentAction: ``action_type`` continue / wait, ``time_to_wait`` w1ms ... w60s."""

    action_type: str = "continue"
    time_to_wait: str = "w10ms"

    def to_asn(self) -> dict[str, Any]:
        return {"ricSubsequentActionType": self.action_type, "ricTimeToWait": self.time_to_wait}

    @classmethod
    def from_asn(cls, v: dict[str, Any]) -> RicSubsequentAction:
        return cls(v["ricSubsequentActionType"], v["ricTimeToWait"])


@dataclass(frozen=True)
class RicActionToBeSetup:
    """RICaction-ToBeSetup-Item. ``definition`` is the E2SM action definition (aligned PER)."""

    action_id: int
    action_type: str = "report"  # report / insert / policy
    definition: bytes | None = None
    subsequent_action: RicSubsequentAction | None = None
    execution_order: int | None = None

    def to_asn(self) -> dict[str, Any]:
        v: dict[str, Any] = {"ricActionID": self.action_id, "ricActionType": self.action_type}
        if self.definition is not None:
            v["ricActionDefinition"] = self.definition
        if self.subsequent_action is not None:
            v["ricSubsequentAction"] = self.subsequent_action.to_asn()
        if self.execution_order is not None:
            v["ricActionExecutionOrder"] = self.execution_order
        return v

    @classmethod
    def from_asn(cls, v: dict[str, Any]) -> RicActionToBeSetup:
        sa = v.get("ricSubsequentAction")
        return cls(
            int(v["ricActionID"]),
            v["ricActionType"],
            v.get("ricActionDefinition"),
            None if sa is None else RicSubsequentAction.from_asn(sa),
            v.get("ricActionExecutionOrder"),
        )


@dataclass(frozen=True)
class RicSubscriptionDetails:
    """RICsubscriptionDetails: the E2SM event trigger and the actions to set up."""

    event_trigger: bytes
    actions: tuple[RicActionToBeSetup, ...] = field(default_factory=tuple)

    def to_asn(self) -> dict[str, Any]:
        return {
            "ricEventTriggerDefinition": self.event_trigger,
            "ricAction-ToBeSetup-List": [
                {
                    "id": 19,
                    "criticality": "ignore",
                    "value": ("RICaction-ToBeSetup-Item", a.to_asn()),
                }
                for a in self.actions
            ],
        }

    @classmethod
    def from_asn(cls, v: dict[str, Any]) -> RicSubscriptionDetails:
        actions = tuple(
            RicActionToBeSetup.from_asn(item["value"][1])
            for item in v["ricAction-ToBeSetup-List"]
            if item["id"] == 19
        )
        return cls(v["ricEventTriggerDefinition"], actions)


@dataclass(frozen=True)
class RicActionNotAdmitted:
    """RICaction-NotAdmitted-Item."""

    action_id: int
    cause: Cause

    def to_asn(self) -> dict[str, Any]:
        return {"ricActionID": self.action_id, "cause": self.cause.to_asn()}

    @classmethod
    def from_asn(cls, v: dict[str, Any]) -> RicActionNotAdmitted:
        return cls(int(v["ricActionID"]), Cause.from_asn(v["cause"]))


@dataclass(frozen=True)
class RicSubscriptionWithCause:
    """RICsubscription-withCause-Item (in RIC subscription delete required)."""

    request_id: RicRequestId
    ran_function_id: int
    cause: Cause

    def to_asn(self) -> dict[str, Any]:
        return {
            "ricRequestID": self.request_id.to_asn(),
            "ranFunctionID": self.ran_function_id,
            "cause": self.cause.to_asn(),
        }

    @classmethod
    def from_asn(cls, v: dict[str, Any]) -> RicSubscriptionWithCause:
        return cls(
            RicRequestId.from_asn(v["ricRequestID"]),
            int(v["ranFunctionID"]),
            Cause.from_asn(v["cause"]),
        )
