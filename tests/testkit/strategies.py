"""Hypothesis strategies for every E2AP / E2SM-KPM / E2SM-RC dataclass octoric uses.

Test support (hypothesis is a dev dependency): tests/e2sm uses them for round-trip, cross-check
and fuzz tests, and other components (the RIC's e2term, the simulated gNB's E2 agent) can use
them to feed their E2 handling with valid random messages. Values stay inside the ASN.1
constraints, and sizes stay small so one example encodes in well under 16 kB.
"""

from __future__ import annotations

import math
from typing import Any

from hypothesis import strategies as st

from octoric.e2sm import codec, e2ap, kpm, rc
from octoric.e2sm import e2ap_ies as ies
from octoric.e2sm.common import Cgi, Guami, RanFunctionName, UeId

PRINTABLE = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789 '()+,-./:=?"


def _enum(type_name: str) -> st.SearchStrategy[str]:
    return st.sampled_from(list(codec.TYPES[type_name]._cont.keys()))


def printable(min_size: int = 1, max_size: int = 20) -> st.SearchStrategy[str]:
    return st.text(PRINTABLE, min_size=min_size, max_size=max_size)


def u(bits: int) -> st.SearchStrategy[int]:
    return st.integers(0, (1 << bits) - 1)


def lists(
    s: st.SearchStrategy[Any], min_size: int = 1, max_size: int = 3
) -> st.SearchStrategy[list[Any]]:
    return st.lists(s, min_size=min_size, max_size=max_size)


small_bytes = st.binary(min_size=0, max_size=24)
plmn = st.binary(min_size=3, max_size=3)
# Finite floats; -0.0 is left out (encoded as +0, which equals it anyway).
finite_floats = st.floats(allow_nan=False, allow_infinity=False).filter(
    lambda x: not (x == 0 and math.copysign(1.0, x) < 0)
)

# --- E2AP ----------------------------------------------------------------------------------

request_ids = st.builds(ies.RicRequestId, u(16), u(16))
causes = st.one_of(
    *[
        st.builds(ies.Cause, st.just(g), _enum(t))
        for g, t in (
            ("ricRequest", "CauseRICrequest"),
            ("ricService", "CauseRICservice"),
            ("e2Node", "CauseE2node"),
            ("transport", "CauseTransport"),
            ("protocol", "CauseProtocol"),
            ("misc", "CauseMisc"),
        )
    ]
)
crit_diags = st.builds(
    ies.CriticalityDiagnostics,
    st.none() | u(8),
    st.none() | _enum("TriggeringMessage"),
    st.none() | _enum("Criticality"),
    st.none() | request_ids,
    st.none()
    | lists(
        st.builds(ies.CriticalityDiagnosticsIe, _enum("Criticality"), u(16), _enum("TypeOfError"))
    ).map(tuple),
)


@st.composite
def global_e2node_ids(draw: st.DrawFn) -> ies.GlobalE2NodeId:
    kind = draw(st.sampled_from(["gNB", "en-gNB", "ng-eNB", "eNB"]))
    if kind in ("gNB", "en-gNB"):
        nbits = draw(st.integers(22, 32))
        return ies.GlobalE2NodeId(
            draw(plmn),
            draw(u(nbits)),
            nbits,
            kind,
            draw(st.none() | u(36)),
            draw(st.none() | u(36)),
        )
    nbits = draw(st.sampled_from([18, 20, 21] + ([28] if kind == "eNB" else [])))
    return ies.GlobalE2NodeId(draw(plmn), draw(u(nbits)), nbits, kind)


ran_functions = st.builds(ies.RanFunction, u(12), small_bytes, u(12), printable(1, 40))
ran_function_ids = st.builds(ies.RanFunctionIdItem, u(12), u(12))
ran_function_causes = st.builds(ies.RanFunctionCause, u(12), causes)
component_ids = st.one_of(
    st.builds(ies.E2NodeComponentId, st.just("ng"), name=printable(1, 30)),
    st.builds(ies.E2NodeComponentId, st.just("s1"), name=printable(1, 30)),
    st.builds(ies.E2NodeComponentId, st.sampled_from(["e1", "f1", "w1"]), number=u(36)),
)
interface_types = _enum("E2nodeComponentInterfaceType")
component_configs = st.builds(
    ies.E2NodeComponentConfig, interface_types, component_ids, small_bytes, small_bytes
)
component_refs = st.builds(ies.E2NodeComponentRef, interface_types, component_ids)
component_acks = st.builds(
    ies.E2NodeComponentConfigAck, interface_types, component_ids, st.booleans(), st.none() | causes
)


@st.composite
def tnl_infos(draw: st.DrawFn) -> ies.TnlInformation:
    nbits = draw(st.integers(1, 160))
    return ies.TnlInformation(draw(u(nbits)), nbits, draw(st.none() | u(16)))


actions = st.builds(
    ies.RicActionToBeSetup,
    u(8),
    _enum("RICactionType"),
    st.none() | small_bytes,
    st.none()
    | st.builds(ies.RicSubsequentAction, _enum("RICsubsequentActionType"), _enum("RICtimeToWait")),
    st.none() | u(8),
)
sub_details = st.builds(ies.RicSubscriptionDetails, small_bytes, lists(actions, 1, 4).map(tuple))


def opt_list(s: st.SearchStrategy[Any], lo: int = 1) -> st.SearchStrategy[Any]:
    return st.none() | lists(s, lo)


ttw = st.none() | _enum("TimeToWait")
opt_diag = st.none() | crit_diags

E2AP_MESSAGES: dict[type[e2ap.E2apMessage], st.SearchStrategy[Any]] = {
    e2ap.E2SetupRequest: st.builds(
        e2ap.E2SetupRequest,
        u(8),
        global_e2node_ids(),
        lists(ran_functions),
        lists(component_configs),
    ),
    e2ap.E2SetupResponse: st.builds(
        e2ap.E2SetupResponse,
        u(8),
        st.builds(ies.GlobalRicId, plmn, u(20)),
        opt_list(ran_function_ids),
        opt_list(ran_function_causes),
        lists(component_acks),
    ),
    e2ap.E2SetupFailure: st.builds(
        e2ap.E2SetupFailure, u(8), causes, ttw, opt_diag, st.none() | tnl_infos()
    ),
    e2ap.RicSubscriptionRequest: st.builds(
        e2ap.RicSubscriptionRequest,
        request_ids,
        u(12),
        sub_details,
        st.none() | st.binary(min_size=8, max_size=8),
        st.none() | st.binary(min_size=8, max_size=8),
    ),
    e2ap.RicSubscriptionResponse: st.builds(
        e2ap.RicSubscriptionResponse,
        request_ids,
        u(12),
        lists(u(8), 1, 4),
        opt_list(st.builds(ies.RicActionNotAdmitted, u(8), causes), 0),
    ),
    e2ap.RicSubscriptionFailure: st.builds(
        e2ap.RicSubscriptionFailure, request_ids, u(12), causes, opt_diag
    ),
    e2ap.RicSubscriptionDeleteRequest: st.builds(
        e2ap.RicSubscriptionDeleteRequest, request_ids, u(12)
    ),
    e2ap.RicSubscriptionDeleteResponse: st.builds(
        e2ap.RicSubscriptionDeleteResponse, request_ids, u(12)
    ),
    e2ap.RicSubscriptionDeleteFailure: st.builds(
        e2ap.RicSubscriptionDeleteFailure, request_ids, u(12), causes, opt_diag
    ),
    e2ap.RicSubscriptionDeleteRequired: st.builds(
        e2ap.RicSubscriptionDeleteRequired,
        lists(st.builds(ies.RicSubscriptionWithCause, request_ids, u(12), causes)),
    ),
    e2ap.RicIndication: st.builds(
        e2ap.RicIndication,
        request_ids,
        u(12),
        u(8),
        small_bytes,
        small_bytes,
        _enum("RICindicationType"),
        st.none() | u(16),
        st.none() | small_bytes,
    ),
    e2ap.RicControlRequest: st.builds(
        e2ap.RicControlRequest,
        request_ids,
        u(12),
        small_bytes,
        small_bytes,
        st.none() | small_bytes,
        st.none() | _enum("RICcontrolAckRequest"),
    ),
    e2ap.RicControlAcknowledge: st.builds(
        e2ap.RicControlAcknowledge,
        request_ids,
        u(12),
        st.none() | small_bytes,
        st.none() | small_bytes,
    ),
    e2ap.RicControlFailure: st.builds(
        e2ap.RicControlFailure,
        request_ids,
        u(12),
        causes,
        st.none() | small_bytes,
        st.none() | small_bytes,
        opt_diag,
    ),
    e2ap.ErrorIndication: st.builds(
        e2ap.ErrorIndication,
        st.none() | u(8),
        st.none() | request_ids,
        st.none() | u(12),
        st.none() | causes,
        opt_diag,
    ),
    e2ap.ResetRequest: st.builds(e2ap.ResetRequest, u(8), causes),
    e2ap.ResetResponse: st.builds(e2ap.ResetResponse, u(8), opt_diag),
    e2ap.RicServiceUpdate: st.builds(
        e2ap.RicServiceUpdate,
        u(8),
        opt_list(ran_functions),
        opt_list(ran_functions),
        opt_list(ran_function_ids),
    ),
    e2ap.RicServiceUpdateAcknowledge: st.builds(
        e2ap.RicServiceUpdateAcknowledge,
        u(8),
        opt_list(ran_function_ids),
        opt_list(ran_function_causes),
    ),
    e2ap.RicServiceUpdateFailure: st.builds(
        e2ap.RicServiceUpdateFailure, u(8), causes, ttw, opt_diag
    ),
    e2ap.RicServiceQuery: st.builds(e2ap.RicServiceQuery, u(8), opt_list(ran_function_ids)),
    e2ap.E2NodeConfigurationUpdate: st.builds(
        e2ap.E2NodeConfigurationUpdate,
        u(8),
        st.none() | global_e2node_ids(),
        opt_list(component_configs),
        opt_list(component_configs),
        opt_list(component_refs),
        opt_list(st.builds(ies.TnlAssociationRemoval, tnl_infos(), tnl_infos())),
    ),
    e2ap.E2NodeConfigurationUpdateAcknowledge: st.builds(
        e2ap.E2NodeConfigurationUpdateAcknowledge,
        u(8),
        opt_list(component_acks),
        opt_list(component_acks),
        opt_list(component_acks),
    ),
    e2ap.E2NodeConfigurationUpdateFailure: st.builds(
        e2ap.E2NodeConfigurationUpdateFailure, u(8), causes, ttw, opt_diag
    ),
    e2ap.E2ConnectionUpdate: st.builds(
        e2ap.E2ConnectionUpdate,
        u(8),
        opt_list(st.builds(ies.E2ConnectionUpdateItem, tnl_infos(), _enum("TNLusage"))),
        opt_list(tnl_infos()),
        opt_list(st.builds(ies.E2ConnectionUpdateItem, tnl_infos(), _enum("TNLusage"))),
    ),
    e2ap.E2ConnectionUpdateAcknowledge: st.builds(
        e2ap.E2ConnectionUpdateAcknowledge,
        u(8),
        opt_list(st.builds(ies.E2ConnectionUpdateItem, tnl_infos(), _enum("TNLusage"))),
        opt_list(st.builds(ies.E2ConnectionSetupFailed, tnl_infos(), causes)),
    ),
    e2ap.E2ConnectionUpdateFailure: st.builds(
        e2ap.E2ConnectionUpdateFailure, u(8), st.none() | causes, ttw, opt_diag
    ),
}
e2ap_messages: st.SearchStrategy[e2ap.E2apMessage] = st.one_of(*E2AP_MESSAGES.values())

# --- E2SM common ---------------------------------------------------------------------------

guamis = st.builds(Guami, plmn, u(8), u(10), u(6))
ue_ids = st.one_of(
    st.builds(
        UeId,
        st.just("gNB-UEID"),
        u(40),
        guamis,
        st.lists(u(32), max_size=4).map(tuple),
        st.none() | st.binary(min_size=8, max_size=8),
    ),
    st.builds(
        UeId,
        st.just("gNB-DU-UEID"),
        f1ap_ids=u(32).map(lambda i: (i,)),
        ran_ueid=st.none() | st.binary(min_size=8, max_size=8),
    ),
)
cgis = st.one_of(
    st.builds(Cgi, plmn, u(36), st.just(False)), st.builds(Cgi, plmn, u(28), st.just(True))
)
ran_function_names = st.builds(
    RanFunctionName, printable(1, 30), printable(1, 40), printable(1, 30), st.none() | u(16)
)

# --- KPM -----------------------------------------------------------------------------------

meas_types = st.one_of(printable(1, 30), st.integers(1, 65536))
meas_labels = st.one_of(
    st.just(kpm.MeasLabel()),
    st.builds(
        kpm.MeasLabel,
        st.booleans(),
        st.none() | plmn,
        st.none() | st.binary(min_size=1, max_size=1),
        st.none(),
        st.none() | st.integers(0, 255),
        st.none() | st.integers(0, 63),
    ),
)
meas_infos = st.builds(kpm.MeasInfo, meas_types, lists(meas_labels, 1, 2).map(tuple))
test_values = st.one_of(
    st.booleans(), st.integers(-(2**40), 2**40), finite_floats, small_bytes, printable(0, 10)
)
test_conds = st.builds(
    kpm.TestCond,
    st.sampled_from(
        [
            "gBR",
            "aMBR",
            "isStat",
            "isCatM",
            "rSRP",
            "rSRQ",
            "ul-rSRP",
            "cQI",
            "fiveQI",
            "qCI",
            "sNSSAI",
        ]
    ),
    st.none() | _enum("TestCond-Expression"),
    st.none() | test_values,
)
matching_conds = st.one_of(
    st.builds(kpm.MatchingCond, label=meas_labels, logical_or=st.booleans()),
    st.builds(kpm.MatchingCond, test=test_conds, logical_or=st.booleans()),
)
format1s = st.builds(
    kpm.ActionFormat1,
    lists(meas_infos, 1, 4).map(tuple),
    st.integers(1, 2**32 - 1),
    st.none() | cgis,
)
action_formats = st.one_of(
    format1s,
    st.builds(kpm.ActionFormat2, ue_ids, format1s),
    st.builds(
        kpm.ActionFormat3,
        lists(st.builds(kpm.MeasCond, meas_types, lists(matching_conds).map(tuple))).map(tuple),
        st.integers(1, 10_000),
        st.none() | cgis,
    ),
    st.builds(kpm.ActionFormat4, lists(test_conds).map(tuple), format1s),
    st.builds(kpm.ActionFormat5, lists(ue_ids, 2, 3).map(tuple), format1s),
)
kpm_action_definitions = st.builds(kpm.KpmActionDefinition, st.integers(1, 5), action_formats)
kpm_event_triggers = st.builds(kpm.KpmEventTrigger, st.integers(1, 2**32 - 1))
kpm_headers = st.builds(
    kpm.KpmIndicationHeader,
    st.binary(min_size=8, max_size=8),
    st.none() | printable(0, 15),
    st.none() | printable(0, 40),
    st.none() | printable(0, 8),
    st.none() | printable(0, 32),
)
meas_values = st.one_of(u(32), finite_floats, st.none(), st.just(kpm.NOT_SATISFIED))
records = st.builds(kpm.MeasRecord, lists(meas_values, 1, 6).map(tuple), st.booleans())
ind_format1s = st.builds(
    kpm.IndicationFormat1,
    lists(records, 1, 4).map(tuple),
    st.none() | lists(meas_infos).map(tuple),
    st.none() | st.integers(1, 10_000),
)
kpm_messages = st.builds(
    kpm.KpmIndicationMessage,
    st.one_of(
        ind_format1s,
        st.builds(
            kpm.IndicationFormat2,
            lists(records).map(tuple),
            lists(
                st.builds(
                    kpm.MeasCondUeId,
                    meas_types,
                    lists(matching_conds).map(tuple),
                    st.none() | lists(ue_ids).map(tuple),
                )
            ).map(tuple),
            st.none() | st.integers(1, 10_000),
        ),
        st.builds(
            kpm.IndicationFormat3, lists(st.builds(kpm.UeReport, ue_ids, ind_format1s)).map(tuple)
        ),
    ),
)
kpm_ran_functions = st.builds(
    kpm.KpmRanFunctionDefinition,
    ran_function_names,
    st.none() | lists(st.builds(kpm.EventTriggerStyle, u(8), printable(1, 30), u(8))).map(tuple),
    st.none()
    | lists(
        st.builds(
            kpm.ReportStyle,
            u(8),
            printable(1, 30),
            u(8),
            lists(st.tuples(printable(1, 20), st.none() | st.integers(1, 65536))).map(tuple),
            u(8),
            u(8),
        )
    ).map(tuple),
)
KPM_PDUS: dict[str, st.SearchStrategy[Any]] = {
    "E2SM-KPM-EventTriggerDefinition": kpm_event_triggers,
    "E2SM-KPM-ActionDefinition": kpm_action_definitions,
    "E2SM-KPM-IndicationHeader": kpm_headers,
    "E2SM-KPM-IndicationMessage": kpm_messages,
    "E2SM-KPM-RANfunction-Description": kpm_ran_functions,
}

# --- RC ------------------------------------------------------------------------------------


@st.composite
def _bits(draw: st.DrawFn) -> rc.Bits:
    n = draw(st.integers(0, 40))
    return rc.Bits(draw(u(n)) if n else 0, n)


param_values = st.one_of(
    st.booleans(),
    st.integers(-(2**40), 2**40),
    finite_floats,
    small_bytes,
    printable(0, 12),
    _bits(),
)
elements = st.one_of(
    st.builds(rc.Element, param_values, st.just(True)),
    st.builds(rc.Element, st.none() | param_values, st.just(False)),
)
ran_param_ids = st.integers(1, 2**32 - 1)


def _extend(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    structs = st.builds(
        rc.Structure,
        st.none() | lists(st.builds(rc.RanParam, ran_param_ids, children), 1, 3).map(tuple),
    )
    return st.one_of(structs, st.builds(rc.ListValue, lists(structs, 1, 2).map(tuple)))


param_value_types = st.recursive(elements, _extend, max_leaves=8)
ran_params = st.builds(rc.RanParam, ran_param_ids, param_value_types)
rc_control_headers = st.builds(
    rc.RcControlHeader,
    ue_ids,
    st.integers(-(2**31), 2**31),
    st.integers(1, 65535),
    st.none() | st.sampled_from(["accept", "reject"]),
)
rc_control_messages = st.builds(rc.RcControlMessage, st.lists(ran_params, max_size=4).map(tuple))
rc_control_outcomes = st.builds(
    rc.RcControlOutcome, st.lists(st.tuples(ran_param_ids, param_values), max_size=4).map(tuple)
)
ue_info_triggers = st.one_of(
    st.builds(
        rc.UeInfoTrigger,
        st.integers(1, 65535),
        lists(_enum("RRC-State"), 1, 8).map(tuple),
    ),
    st.builds(rc.UeInfoTrigger, st.integers(1, 65535), ue_id_change=st.integers(1, 512)),
)
rc_event_triggers = st.one_of(
    st.builds(rc.RcEventTrigger, lists(ue_info_triggers).map(tuple)),
    st.builds(
        rc.RcEventTrigger,
        st.none(),
        st.integers(1, 65535),
        st.integers(1, 65535),
    ),
)
rc_action_definitions = st.builds(
    rc.RcActionDefinition, st.integers(0, 255), lists(ran_param_ids, 1, 5).map(tuple)
)
rc_indication_headers = st.one_of(
    st.builds(rc.RcIndicationHeader, st.just(1), st.none() | st.integers(1, 65535)),
    st.builds(
        rc.RcIndicationHeader,
        st.just(2),
        st.none(),
        ue_ids,
        st.integers(0, 255),
        st.integers(1, 65535),
    ),
    st.builds(
        rc.RcIndicationHeader, st.just(3), st.none() | st.integers(1, 65535), st.none() | ue_ids
    ),
)
rc_indication_messages = st.one_of(
    st.builds(rc.RcIndicationMessage, lists(ran_params).map(tuple)),
    st.builds(
        rc.RcIndicationMessage,
        st.none(),
        lists(st.tuples(ue_ids, lists(ran_params).map(tuple))).map(tuple),
    ),
)
named_params = st.lists(st.tuples(ran_param_ids, printable(1, 20)), max_size=3).map(tuple)
rc_ran_functions = st.builds(
    rc.RcRanFunctionDefinition,
    ran_function_names,
    st.none() | lists(st.builds(rc.RcStyle, u(8), printable(1, 20), st.tuples(u(8)))).map(tuple),
    st.none()
    | lists(
        st.builds(
            rc.RcStyle, u(8), printable(1, 20), st.tuples(u(8), u(8), u(8), u(8)), named_params
        )
    ).map(tuple),
    st.none()
    | lists(
        st.builds(
            rc.RcControlStyle,
            u(8),
            printable(1, 20),
            st.lists(
                st.builds(
                    rc.RcControlAction, st.integers(1, 65535), printable(1, 20), named_params
                ),
                max_size=2,
            ).map(tuple),
            u(8),
            u(8),
            u(8),
        )
    ).map(tuple),
)
RC_PDUS: dict[str, st.SearchStrategy[Any]] = {
    "E2SM-RC-ControlHeader": rc_control_headers,
    "E2SM-RC-ControlMessage": rc_control_messages,
    "E2SM-RC-ControlOutcome": rc_control_outcomes,
    "E2SM-RC-EventTrigger": rc_event_triggers,
    "E2SM-RC-ActionDefinition": rc_action_definitions,
    "E2SM-RC-IndicationHeader": rc_indication_headers,
    "E2SM-RC-IndicationMessage": rc_indication_messages,
    "E2SM-RC-RANFunctionDefinition": rc_ran_functions,
}
