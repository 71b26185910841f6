"""E2AP v3 messages as dataclasses: ``encode_e2ap(msg) -> bytes``, ``decode_e2ap(bytes) -> msg``.

Every message octoric sends or receives has a dataclass here (E2 setup, E2 node configuration
update, E2 connection update, reset, error indication, RIC service update / query, RIC
subscription, subscription delete (+ required), RIC indication, RIC control). E2SM payloads
(event triggers, action definitions, indication header / message, control header / message /
outcome, RAN function definitions) stay ``bytes`` here: build and parse them with ``kpm`` / ``rc``.

IEs are encoded in the order of the specification's IE tables (what srsRAN_Project and the
O-RAN SC components send); on decode, order does not matter, unknown (extension) IEs are
ignored and a missing mandatory IE raises ``E2smDecodeError``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from octoric.e2sm import codec
from octoric.e2sm.e2ap_ies import (
    Cause,
    CriticalityDiagnostics,
    CriticalityDiagnosticsIe,
    E2ConnectionSetupFailed,
    E2ConnectionUpdateItem,
    E2NodeComponentConfig,
    E2NodeComponentConfigAck,
    E2NodeComponentId,
    E2NodeComponentRef,
    GlobalE2NodeId,
    GlobalRicId,
    RanFunction,
    RanFunctionCause,
    RanFunctionIdItem,
    RicActionNotAdmitted,
    RicActionToBeSetup,
    RicRequestId,
    RicSubscriptionDetails,
    RicSubscriptionWithCause,
    RicSubsequentAction,
    TnlAssociationRemoval,
    TnlInformation,
)
from octoric.e2sm.errors import E2smDecodeError, E2smEncodeError

# Procedure codes (E2AP 9.3.7) and the procedure criticality E2AP-PDU-Descriptions assigns.
PROC_E2_SETUP = 1
PROC_ERROR_INDICATION = 2
PROC_RESET = 3
PROC_RIC_CONTROL = 4
PROC_RIC_INDICATION = 5
PROC_RIC_SERVICE_QUERY = 6
PROC_RIC_SERVICE_UPDATE = 7
PROC_RIC_SUBSCRIPTION = 8
PROC_RIC_SUBSCRIPTION_DELETE = 9
PROC_E2_NODE_CONFIG_UPDATE = 10
PROC_E2_CONNECTION_UPDATE = 11
PROC_RIC_SUBSCRIPTION_DELETE_REQUIRED = 12

_PROC_CRITICALITY = {
    PROC_ERROR_INDICATION: "ignore",
    PROC_RIC_INDICATION: "ignore",
    PROC_RIC_SERVICE_QUERY: "ignore",
    PROC_RIC_SUBSCRIPTION_DELETE_REQUIRED: "ignore",
}

INITIATING = "initiatingMessage"
SUCCESSFUL = "successfulOutcome"
UNSUCCESSFUL = "unsuccessfulOutcome"


# --- IE table machinery --------------------------------------------------------------------


@dataclass(frozen=True)
class _Ie:
    id: int
    criticality: str
    type_name: str  # the ASN.1 type of the IE value (the open type's actual type)
    attr: str
    mandatory: bool
    enc: Callable[[Any], Any]
    dec: Callable[[Any], Any]


def _same(v: Any) -> Any:
    return v


def _int(v: Any) -> int:
    if not isinstance(v, int):
        raise TypeError(f"expected an integer, got {type(v).__name__}")
    return v


def _plain(ie_id: int, crit: str, tn: str, attr: str, mand: bool = True, dec: Any = _same) -> _Ie:
    return _Ie(ie_id, crit, tn, attr, mand, _same, dec)


def _obj(ie_id: int, crit: str, tn: str, attr: str, cls: Any, mand: bool = True) -> _Ie:
    return _Ie(ie_id, crit, tn, attr, mand, lambda v: v.to_asn(), cls.from_asn)


def _list(
    ie_id: int,
    crit: str,
    tn: str,
    attr: str,
    item_id: int,
    item_crit: str,
    item_tn: str,
    enc_item: Callable[[Any], Any],
    dec_item: Callable[[Any], Any],
    mand: bool = True,
) -> _Ie:
    def enc(items: list[Any]) -> list[dict[str, Any]]:
        return [
            {"id": item_id, "criticality": item_crit, "value": (item_tn, enc_item(i))}
            for i in items
        ]

    def dec(raw: list[dict[str, Any]]) -> list[Any]:
        out = []
        for c in raw:
            if c["id"] != item_id:
                continue  # an unknown item IE: skip, as an unknown IE
            out.append(dec_item(c["value"][1]))
        return out

    return _Ie(ie_id, crit, tn, attr, mand, enc, dec)


def _objlist(
    ie_id: int,
    crit: str,
    tn: str,
    attr: str,
    item_id: int,
    item_crit: str,
    item_tn: str,
    cls: Any,
    mand: bool = True,
) -> _Ie:
    return _list(
        ie_id, crit, tn, attr, item_id, item_crit, item_tn, lambda v: v.to_asn(), cls.from_asn, mand
    )


# Frequently used IEs
def _request_id(crit: str = "reject") -> _Ie:
    return _obj(29, crit, "RICrequestID", "request_id", RicRequestId)


def _ran_function_id(crit: str = "reject", mand: bool = True) -> _Ie:
    return _plain(5, crit, "RANfunctionID", "ran_function_id", mand, _int)


def _transaction_id(crit: str = "reject", mand: bool = True) -> _Ie:
    return _plain(49, crit, "TransactionID", "transaction_id", mand, _int)


def _cause(crit: str = "ignore", mand: bool = True) -> _Ie:
    return _obj(1, crit, "Cause", "cause", Cause, mand)


def _crit_diag() -> _Ie:
    return _obj(
        2,
        "ignore",
        "CriticalityDiagnostics",
        "criticality_diagnostics",
        CriticalityDiagnostics,
        False,
    )


def _time_to_wait() -> _Ie:
    return _plain(31, "ignore", "TimeToWait", "time_to_wait", False)


def _ran_functions(ie_id: int, attr: str, mand: bool) -> _Ie:
    return _objlist(
        ie_id,
        "reject",
        "RANfunctions-List",
        attr,
        8,
        "ignore",
        "RANfunction-Item",
        RanFunction,
        mand,
    )


def _ran_function_ids(ie_id: int, attr: str, mand: bool = False) -> _Ie:
    return _objlist(
        ie_id,
        "reject",
        "RANfunctionsID-List",
        attr,
        6,
        "ignore",
        "RANfunctionID-Item",
        RanFunctionIdItem,
        mand,
    )


def _ran_function_causes(attr: str) -> _Ie:
    return _objlist(
        13,
        "reject",
        "RANfunctionsIDcause-List",
        attr,
        7,
        "ignore",
        "RANfunctionIDcause-Item",
        RanFunctionCause,
        False,
    )


def _component_configs(ie_id: int, item_id: int, kind: str, attr: str, mand: bool) -> _Ie:
    return _objlist(
        ie_id,
        "reject",
        f"E2nodeComponentConfig{kind}-List",
        attr,
        item_id,
        "reject",
        f"E2nodeComponentConfig{kind}-Item",
        E2NodeComponentConfig,
        mand,
    )


def _component_acks(ie_id: int, item_id: int, kind: str, attr: str, mand: bool) -> _Ie:
    return _objlist(
        ie_id,
        "reject",
        f"E2nodeComponentConfig{kind}Ack-List",
        attr,
        item_id,
        "reject",
        f"E2nodeComponentConfig{kind}Ack-Item",
        E2NodeComponentConfigAck,
        mand,
    )


# --- messages ------------------------------------------------------------------------------


@dataclass(frozen=True)
class WireDetails:
    """How a decoded message was laid out on the wire (procedure criticality, IE order and
    criticalities), so re-encoding a decoded message gives back the same bytes even when the
    sender deviated from the specification's tables (O-RAN SC sends RIC subscription requests
    with procedure criticality ``ignore``). Not part of equality."""

    procedure_criticality: str
    ies: tuple[tuple[int, str], ...]


class E2apMessage:
    """Base of the E2AP message dataclasses. ``wire`` is set on decoded messages only."""

    wire: WireDetails | None = None

    PROCEDURE: ClassVar[int]
    OUTCOME: ClassVar[str]
    ASN_NAME: ClassVar[str]
    IES: ClassVar[tuple[_Ie, ...]]


@dataclass
class E2SetupRequest(E2apMessage):
    transaction_id: int
    global_e2node_id: GlobalE2NodeId
    ran_functions: list[RanFunction] = field(default_factory=list)
    component_configs: list[E2NodeComponentConfig] = field(default_factory=list)

    PROCEDURE = PROC_E2_SETUP
    OUTCOME = INITIATING
    ASN_NAME = "E2setupRequest"
    IES = (
        _transaction_id(),
        _obj(3, "reject", "GlobalE2node-ID", "global_e2node_id", GlobalE2NodeId),
        _ran_functions(10, "ran_functions", True),
        _component_configs(50, 51, "Addition", "component_configs", True),
    )


@dataclass
class E2SetupResponse(E2apMessage):
    transaction_id: int
    global_ric_id: GlobalRicId
    accepted: list[RanFunctionIdItem] | None = None
    rejected: list[RanFunctionCause] | None = None
    component_config_acks: list[E2NodeComponentConfigAck] = field(default_factory=list)

    PROCEDURE = PROC_E2_SETUP
    OUTCOME = SUCCESSFUL
    ASN_NAME = "E2setupResponse"
    IES = (
        _transaction_id(),
        _obj(4, "reject", "GlobalRIC-ID", "global_ric_id", GlobalRicId),
        _ran_function_ids(9, "accepted"),
        _ran_function_causes("rejected"),
        _component_acks(52, 53, "Addition", "component_config_acks", True),
    )


@dataclass
class E2SetupFailure(E2apMessage):
    transaction_id: int
    cause: Cause
    time_to_wait: str | None = None
    criticality_diagnostics: CriticalityDiagnostics | None = None
    tnl_information: TnlInformation | None = None

    PROCEDURE = PROC_E2_SETUP
    OUTCOME = UNSUCCESSFUL
    ASN_NAME = "E2setupFailure"
    IES = (
        _transaction_id(),
        _cause(),
        _time_to_wait(),
        _crit_diag(),
        _obj(48, "ignore", "TNLinformation", "tnl_information", TnlInformation, False),
    )


@dataclass
class RicSubscriptionRequest(E2apMessage):
    request_id: RicRequestId
    ran_function_id: int
    details: RicSubscriptionDetails
    start_time: bytes | None = None  # RICsubscriptionTime, 8 bytes (NTP format)
    end_time: bytes | None = None

    PROCEDURE = PROC_RIC_SUBSCRIPTION
    OUTCOME = INITIATING
    ASN_NAME = "RICsubscriptionRequest"
    IES = (
        _request_id(),
        _ran_function_id(),
        _obj(30, "reject", "RICsubscriptionDetails", "details", RicSubscriptionDetails),
        _plain(62, "reject", "RICsubscriptionTime", "start_time", False),
        _plain(63, "reject", "RICsubscriptionTime", "end_time", False),
    )


@dataclass
class RicSubscriptionResponse(E2apMessage):
    request_id: RicRequestId
    ran_function_id: int
    admitted: list[int] = field(default_factory=list)  # admitted RIC action IDs
    not_admitted: list[RicActionNotAdmitted] | None = None

    PROCEDURE = PROC_RIC_SUBSCRIPTION
    OUTCOME = SUCCESSFUL
    ASN_NAME = "RICsubscriptionResponse"
    IES = (
        _request_id(),
        _ran_function_id(),
        _list(
            17,
            "reject",
            "RICaction-Admitted-List",
            "admitted",
            14,
            "ignore",
            "RICaction-Admitted-Item",
            lambda a: {"ricActionID": a},
            lambda v: int(v["ricActionID"]),
        ),
        _objlist(
            18,
            "reject",
            "RICaction-NotAdmitted-List",
            "not_admitted",
            16,
            "ignore",
            "RICaction-NotAdmitted-Item",
            RicActionNotAdmitted,
            False,
        ),
    )


@dataclass
class RicSubscriptionFailure(E2apMessage):
    request_id: RicRequestId
    ran_function_id: int
    cause: Cause
    criticality_diagnostics: CriticalityDiagnostics | None = None

    PROCEDURE = PROC_RIC_SUBSCRIPTION
    OUTCOME = UNSUCCESSFUL
    ASN_NAME = "RICsubscriptionFailure"
    IES = (_request_id(), _ran_function_id(), _cause("reject"), _crit_diag())


@dataclass
class RicSubscriptionDeleteRequest(E2apMessage):
    request_id: RicRequestId
    ran_function_id: int

    PROCEDURE = PROC_RIC_SUBSCRIPTION_DELETE
    OUTCOME = INITIATING
    ASN_NAME = "RICsubscriptionDeleteRequest"
    IES = (_request_id(), _ran_function_id())


@dataclass
class RicSubscriptionDeleteResponse(E2apMessage):
    request_id: RicRequestId
    ran_function_id: int

    PROCEDURE = PROC_RIC_SUBSCRIPTION_DELETE
    OUTCOME = SUCCESSFUL
    ASN_NAME = "RICsubscriptionDeleteResponse"
    IES = (_request_id(), _ran_function_id())


@dataclass
class RicSubscriptionDeleteFailure(E2apMessage):
    request_id: RicRequestId
    ran_function_id: int
    cause: Cause
    criticality_diagnostics: CriticalityDiagnostics | None = None

    PROCEDURE = PROC_RIC_SUBSCRIPTION_DELETE
    OUTCOME = UNSUCCESSFUL
    ASN_NAME = "RICsubscriptionDeleteFailure"
    IES = (_request_id(), _ran_function_id(), _cause(), _crit_diag())


@dataclass
class RicSubscriptionDeleteRequired(E2apMessage):
    subscriptions: list[RicSubscriptionWithCause] = field(default_factory=list)

    PROCEDURE = PROC_RIC_SUBSCRIPTION_DELETE_REQUIRED
    OUTCOME = INITIATING
    ASN_NAME = "RICsubscriptionDeleteRequired"
    IES = (
        _objlist(
            60,
            "ignore",
            "RICsubscription-List-withCause",
            "subscriptions",
            61,
            "ignore",
            "RICsubscription-withCause-Item",
            RicSubscriptionWithCause,
        ),
    )


@dataclass
class RicIndication(E2apMessage):
    request_id: RicRequestId
    ran_function_id: int
    action_id: int
    header: bytes  # E2SM indication header
    message: bytes  # E2SM indication message
    indication_type: str = "report"  # report / insert
    sn: int | None = None
    call_process_id: bytes | None = None

    PROCEDURE = PROC_RIC_INDICATION
    OUTCOME = INITIATING
    ASN_NAME = "RICindication"
    IES = (
        _request_id(),
        _ran_function_id(),
        _plain(15, "reject", "RICactionID", "action_id", True, _int),
        _plain(27, "reject", "RICindicationSN", "sn", False, _int),
        _plain(28, "reject", "RICindicationType", "indication_type"),
        _plain(25, "reject", "RICindicationHeader", "header"),
        _plain(26, "reject", "RICindicationMessage", "message"),
        _plain(20, "reject", "RICcallProcessID", "call_process_id", False),
    )


@dataclass
class RicControlRequest(E2apMessage):
    request_id: RicRequestId
    ran_function_id: int
    header: bytes  # E2SM control header
    message: bytes  # E2SM control message
    call_process_id: bytes | None = None
    ack_request: str | None = None  # noAck / ack

    PROCEDURE = PROC_RIC_CONTROL
    OUTCOME = INITIATING
    ASN_NAME = "RICcontrolRequest"
    IES = (
        _request_id(),
        _ran_function_id(),
        _plain(20, "reject", "RICcallProcessID", "call_process_id", False),
        _plain(22, "reject", "RICcontrolHeader", "header"),
        _plain(23, "reject", "RICcontrolMessage", "message"),
        _plain(21, "reject", "RICcontrolAckRequest", "ack_request", False),
    )


@dataclass
class RicControlAcknowledge(E2apMessage):
    request_id: RicRequestId
    ran_function_id: int
    call_process_id: bytes | None = None
    outcome: bytes | None = None  # E2SM control outcome

    PROCEDURE = PROC_RIC_CONTROL
    OUTCOME = SUCCESSFUL
    ASN_NAME = "RICcontrolAcknowledge"
    IES = (
        _request_id(),
        _ran_function_id(),
        _plain(20, "reject", "RICcallProcessID", "call_process_id", False),
        _plain(32, "reject", "RICcontrolOutcome", "outcome", False),
    )


@dataclass
class RicControlFailure(E2apMessage):
    request_id: RicRequestId
    ran_function_id: int
    cause: Cause
    call_process_id: bytes | None = None
    outcome: bytes | None = None
    criticality_diagnostics: CriticalityDiagnostics | None = None

    PROCEDURE = PROC_RIC_CONTROL
    OUTCOME = UNSUCCESSFUL
    ASN_NAME = "RICcontrolFailure"
    IES = (
        _request_id(),
        _ran_function_id(),
        _plain(20, "reject", "RICcallProcessID", "call_process_id", False),
        _cause(),
        _plain(32, "reject", "RICcontrolOutcome", "outcome", False),
        _crit_diag(),
    )


@dataclass
class ErrorIndication(E2apMessage):
    transaction_id: int | None = None
    request_id: RicRequestId | None = None
    ran_function_id: int | None = None
    cause: Cause | None = None
    criticality_diagnostics: CriticalityDiagnostics | None = None

    PROCEDURE = PROC_ERROR_INDICATION
    OUTCOME = INITIATING
    ASN_NAME = "ErrorIndication"
    IES = (
        _transaction_id(mand=False),
        _obj(29, "reject", "RICrequestID", "request_id", RicRequestId, False),
        _ran_function_id(mand=False),
        _cause(mand=False),
        _crit_diag(),
    )


@dataclass
class ResetRequest(E2apMessage):
    transaction_id: int
    cause: Cause

    PROCEDURE = PROC_RESET
    OUTCOME = INITIATING
    ASN_NAME = "ResetRequest"
    IES = (_transaction_id(), _cause())


@dataclass
class ResetResponse(E2apMessage):
    transaction_id: int
    criticality_diagnostics: CriticalityDiagnostics | None = None

    PROCEDURE = PROC_RESET
    OUTCOME = SUCCESSFUL
    ASN_NAME = "ResetResponse"
    IES = (_transaction_id(), _crit_diag())


@dataclass
class RicServiceUpdate(E2apMessage):
    transaction_id: int
    added: list[RanFunction] | None = None
    modified: list[RanFunction] | None = None
    deleted: list[RanFunctionIdItem] | None = None

    PROCEDURE = PROC_RIC_SERVICE_UPDATE
    OUTCOME = INITIATING
    ASN_NAME = "RICserviceUpdate"
    IES = (
        _transaction_id(),
        _ran_functions(10, "added", False),
        _ran_functions(12, "modified", False),
        _ran_function_ids(11, "deleted"),
    )


@dataclass
class RicServiceUpdateAcknowledge(E2apMessage):
    transaction_id: int
    accepted: list[RanFunctionIdItem] | None = None
    rejected: list[RanFunctionCause] | None = None

    PROCEDURE = PROC_RIC_SERVICE_UPDATE
    OUTCOME = SUCCESSFUL
    ASN_NAME = "RICserviceUpdateAcknowledge"
    IES = (_transaction_id(), _ran_function_ids(9, "accepted"), _ran_function_causes("rejected"))


@dataclass
class RicServiceUpdateFailure(E2apMessage):
    transaction_id: int
    cause: Cause
    time_to_wait: str | None = None
    criticality_diagnostics: CriticalityDiagnostics | None = None

    PROCEDURE = PROC_RIC_SERVICE_UPDATE
    OUTCOME = UNSUCCESSFUL
    ASN_NAME = "RICserviceUpdateFailure"
    IES = (_transaction_id(), _cause("reject"), _time_to_wait(), _crit_diag())


@dataclass
class RicServiceQuery(E2apMessage):
    transaction_id: int
    accepted: list[RanFunctionIdItem] | None = None

    PROCEDURE = PROC_RIC_SERVICE_QUERY
    OUTCOME = INITIATING
    ASN_NAME = "RICserviceQuery"
    IES = (_transaction_id(), _ran_function_ids(9, "accepted"))


@dataclass
class E2NodeConfigurationUpdate(E2apMessage):
    transaction_id: int
    global_e2node_id: GlobalE2NodeId | None = None
    additions: list[E2NodeComponentConfig] | None = None
    updates: list[E2NodeComponentConfig] | None = None
    removals: list[E2NodeComponentRef] | None = None
    tnl_removals: list[TnlAssociationRemoval] | None = None

    PROCEDURE = PROC_E2_NODE_CONFIG_UPDATE
    OUTCOME = INITIATING
    ASN_NAME = "E2nodeConfigurationUpdate"
    IES = (
        _transaction_id(),
        _obj(3, "reject", "GlobalE2node-ID", "global_e2node_id", GlobalE2NodeId, False),
        _component_configs(50, 51, "Addition", "additions", False),
        _component_configs(33, 34, "Update", "updates", False),
        _objlist(
            54,
            "reject",
            "E2nodeComponentConfigRemoval-List",
            "removals",
            55,
            "reject",
            "E2nodeComponentConfigRemoval-Item",
            E2NodeComponentRef,
            False,
        ),
        _objlist(
            58,
            "reject",
            "E2nodeTNLassociationRemoval-List",
            "tnl_removals",
            59,
            "reject",
            "E2nodeTNLassociationRemoval-Item",
            TnlAssociationRemoval,
            False,
        ),
    )


@dataclass
class E2NodeConfigurationUpdateAcknowledge(E2apMessage):
    transaction_id: int
    addition_acks: list[E2NodeComponentConfigAck] | None = None
    update_acks: list[E2NodeComponentConfigAck] | None = None
    removal_acks: list[E2NodeComponentConfigAck] | None = None

    PROCEDURE = PROC_E2_NODE_CONFIG_UPDATE
    OUTCOME = SUCCESSFUL
    ASN_NAME = "E2nodeConfigurationUpdateAcknowledge"
    IES = (
        _transaction_id(),
        _component_acks(52, 53, "Addition", "addition_acks", False),
        _component_acks(35, 36, "Update", "update_acks", False),
        _component_acks(56, 57, "Removal", "removal_acks", False),
    )


@dataclass
class E2NodeConfigurationUpdateFailure(E2apMessage):
    transaction_id: int
    cause: Cause
    time_to_wait: str | None = None
    criticality_diagnostics: CriticalityDiagnostics | None = None

    PROCEDURE = PROC_E2_NODE_CONFIG_UPDATE
    OUTCOME = UNSUCCESSFUL
    ASN_NAME = "E2nodeConfigurationUpdateFailure"
    IES = (_transaction_id(), _cause(), _time_to_wait(), _crit_diag())


def _conn_list(ie_id: int, attr: str) -> _Ie:
    return _objlist(
        ie_id,
        "reject",
        "E2connectionUpdate-List",
        attr,
        43,
        "ignore",
        "E2connectionUpdate-Item",
        E2ConnectionUpdateItem,
        False,
    )


@dataclass
class E2ConnectionUpdate(E2apMessage):
    transaction_id: int
    add: list[E2ConnectionUpdateItem] | None = None
    remove: list[TnlInformation] | None = None
    modify: list[E2ConnectionUpdateItem] | None = None

    PROCEDURE = PROC_E2_CONNECTION_UPDATE
    OUTCOME = INITIATING
    ASN_NAME = "E2connectionUpdate"
    IES = (
        _transaction_id(),
        _conn_list(44, "add"),
        _list(
            46,
            "reject",
            "E2connectionUpdateRemove-List",
            "remove",
            47,
            "ignore",
            "E2connectionUpdateRemove-Item",
            lambda t: {"tnlInformation": t.to_asn()},
            lambda v: TnlInformation.from_asn(v["tnlInformation"]),
            False,
        ),
        _conn_list(45, "modify"),
    )


@dataclass
class E2ConnectionUpdateAcknowledge(E2apMessage):
    transaction_id: int
    setup: list[E2ConnectionUpdateItem] | None = None
    setup_failed: list[E2ConnectionSetupFailed] | None = None

    PROCEDURE = PROC_E2_CONNECTION_UPDATE
    OUTCOME = SUCCESSFUL
    ASN_NAME = "E2connectionUpdateAcknowledge"
    IES = (
        _transaction_id(),
        _conn_list(39, "setup"),
        _objlist(
            40,
            "reject",
            "E2connectionSetupFailed-List",
            "setup_failed",
            41,
            "ignore",
            "E2connectionSetupFailed-Item",
            E2ConnectionSetupFailed,
            False,
        ),
    )


@dataclass
class E2ConnectionUpdateFailure(E2apMessage):
    transaction_id: int
    cause: Cause | None = None
    time_to_wait: str | None = None
    criticality_diagnostics: CriticalityDiagnostics | None = None

    PROCEDURE = PROC_E2_CONNECTION_UPDATE
    OUTCOME = UNSUCCESSFUL
    ASN_NAME = "E2connectionUpdateFailure"
    IES = (_transaction_id(), _cause("reject", False), _time_to_wait(), _crit_diag())


MESSAGE_TYPES: tuple[type[E2apMessage], ...] = (
    E2SetupRequest,
    E2SetupResponse,
    E2SetupFailure,
    RicSubscriptionRequest,
    RicSubscriptionResponse,
    RicSubscriptionFailure,
    RicSubscriptionDeleteRequest,
    RicSubscriptionDeleteResponse,
    RicSubscriptionDeleteFailure,
    RicSubscriptionDeleteRequired,
    RicIndication,
    RicControlRequest,
    RicControlAcknowledge,
    RicControlFailure,
    ErrorIndication,
    ResetRequest,
    ResetResponse,
    RicServiceUpdate,
    RicServiceUpdateAcknowledge,
    RicServiceUpdateFailure,
    RicServiceQuery,
    E2NodeConfigurationUpdate,
    E2NodeConfigurationUpdateAcknowledge,
    E2NodeConfigurationUpdateFailure,
    E2ConnectionUpdate,
    E2ConnectionUpdateAcknowledge,
    E2ConnectionUpdateFailure,
)
_BY_KEY: dict[tuple[str, str], type[E2apMessage]] = {
    (m.OUTCOME, m.ASN_NAME): m for m in MESSAGE_TYPES
}


# --- encode / decode -----------------------------------------------------------------------


def to_asn(msg: E2apMessage) -> tuple[str, dict[str, Any]]:
    """The pycrate value of the E2AP-PDU carrying ``msg``."""
    ies: list[dict[str, Any]] = []
    for ie in msg.IES:
        v = getattr(msg, ie.attr)
        if v is None:
            if ie.mandatory:
                raise E2smEncodeError(msg.ASN_NAME, f"mandatory IE {ie.attr} is missing")
            continue
        ies.append({"id": ie.id, "criticality": ie.criticality, "value": (ie.type_name, ie.enc(v))})
    proc_crit = _PROC_CRITICALITY.get(msg.PROCEDURE, "reject")
    wire = msg.wire
    if wire is not None:
        # re-encoding a decoded message: the sender's order and criticalities
        proc_crit = wire.procedure_criticality
        rank = {ie_id: i for i, (ie_id, _) in enumerate(wire.ies)}
        crit = dict(wire.ies)
        ies.sort(key=lambda f: rank.get(f["id"], len(rank)))
        for f in ies:
            f["criticality"] = crit.get(f["id"], f["criticality"])
    return (
        msg.OUTCOME,
        {
            "procedureCode": msg.PROCEDURE,
            "criticality": proc_crit,
            "value": (msg.ASN_NAME, {"protocolIEs": ies}),
        },
    )


def encode_e2ap(msg: E2apMessage) -> bytes:
    """Encode an E2AP message dataclass as an aligned-PER E2AP-PDU."""
    try:
        value = to_asn(msg)
    except E2smEncodeError:
        raise
    except Exception as e:
        raise E2smEncodeError(msg.ASN_NAME, f"{type(e).__name__}: {e}") from None
    return codec.encode("E2AP-PDU", value)


def from_asn(value: Any) -> E2apMessage:
    """The message dataclass of a decoded E2AP-PDU pycrate value."""
    try:
        outcome, body = value
        proc = body["procedureCode"]
        inner = body["value"]
    except Exception:
        raise E2smDecodeError("E2AP-PDU", "not an E2AP-PDU value") from None
    if not isinstance(inner, tuple) or str(inner[0]).startswith("_unk"):
        raise E2smDecodeError(
            "E2AP-PDU", f"procedure code {proc} is not supported", f"E2AP-PDU.{outcome}.value"
        )
    name, content = inner
    cls = _BY_KEY.get((outcome, name))
    if cls is None:
        raise E2smDecodeError("E2AP-PDU", f"message {name} is not supported", outcome)
    found: dict[int, Any] = {}
    order: list[tuple[int, str]] = []
    for f in content.get("protocolIEs", []):
        if f["id"] not in found:
            found[f["id"]] = f["value"]
            order.append((f["id"], f["criticality"]))
    kwargs: dict[str, Any] = {}
    for ie in cls.IES:
        where = f"{name}.protocolIEs[id={ie.id}]"
        if ie.id not in found:
            if ie.mandatory:
                raise E2smDecodeError("E2AP-PDU", f"mandatory IE {ie.type_name} missing", where)
            kwargs[ie.attr] = None
            continue
        raw = found[ie.id]
        if not isinstance(raw, tuple) or raw[0] != ie.type_name:
            raise E2smDecodeError("E2AP-PDU", f"IE is not a {ie.type_name}", where)
        try:
            kwargs[ie.attr] = ie.dec(raw[1])
        except Exception as e:
            raise E2smDecodeError("E2AP-PDU", f"{type(e).__name__}: {e}", where) from None
    msg = cls(**kwargs)
    msg.wire = WireDetails(str(body.get("criticality")), tuple(order))
    return msg


def decode_e2ap(data: bytes) -> E2apMessage:
    """Decode aligned-PER bytes of an E2AP-PDU into its message dataclass."""
    return from_asn(codec.decode("E2AP-PDU", data))


__all__ = [
    "E2apMessage",
    "WireDetails",
    "MESSAGE_TYPES",
    "decode_e2ap",
    "encode_e2ap",
    "from_asn",
    "to_asn",
    *(m.__name__ for m in MESSAGE_TYPES),
    # the IEs, re-exported so one import gives the whole API
    "Cause",
    "CriticalityDiagnostics",
    "CriticalityDiagnosticsIe",
    "E2ConnectionSetupFailed",
    "E2ConnectionUpdateItem",
    "E2NodeComponentConfig",
    "E2NodeComponentConfigAck",
    "E2NodeComponentId",
    "E2NodeComponentRef",
    "GlobalE2NodeId",
    "GlobalRicId",
    "RanFunction",
    "RanFunctionCause",
    "RanFunctionIdItem",
    "RicActionNotAdmitted",
    "RicActionToBeSetup",
    "RicRequestId",
    "RicSubscriptionDetails",
    "RicSubscriptionWithCause",
    "RicSubsequentAction",
    "TnlAssociationRemoval",
    "TnlInformation",
]
