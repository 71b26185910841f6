"""RMR message types: the O-RAN SC numbers (RIC_message_types.h) and octoric's own (30500+).

xApp descriptors name messages (``"RIC_INDICATION"``); route tables use numbers. This table is
the single place that maps one to the other.
"""

from __future__ import annotations

RIC_HEALTH_CHECK_REQ = 100
RIC_HEALTH_CHECK_RESP = 101
E2_TERM_INIT = 1100
RAN_CONNECTED = 1200
RAN_RESTARTED = 1210
RAN_RECONFIGURED = 1220
E2_TERM_KEEP_ALIVE_REQ = 1101
E2_TERM_KEEP_ALIVE_RESP = 1102
RIC_X2_SETUP_REQ = 10060
RIC_E2_SETUP_REQ = 12001
RIC_E2_SETUP_RESP = 12002
RIC_E2_SETUP_FAILURE = 12003
RIC_E2_RESET_REQ = 12004
RIC_E2_RESET_RESP = 12005
RIC_ERROR_INDICATION = 12007
RIC_E2_RAN_RESET_REQ = 12008
RIC_E2_RAN_RESET_RESP = 12009
RIC_SUB_REQ = 12010
RIC_SUB_RESP = 12011
RIC_SUB_FAILURE = 12012
RIC_SUB_DEL_REQ = 12020
RIC_SUB_DEL_RESP = 12021
RIC_SUB_DEL_FAILURE = 12022
RIC_SUB_DEL_REQUIRED = 12023
RIC_SERVICE_UPDATE = 12030
RIC_SERVICE_UPDATE_ACK = 12031
RIC_SERVICE_UPDATE_FAILURE = 12032
RIC_CONTROL_REQ = 12040
RIC_CONTROL_ACK = 12041
RIC_CONTROL_FAILURE = 12042
RIC_INDICATION = 12050
RIC_SERVICE_QUERY = 12060
RIC_E2NODE_CONFIG_UPDATE = 12070
RIC_E2NODE_CONFIG_UPDATE_ACK = 12071
RIC_E2NODE_CONFIG_UPDATE_FAILURE = 12072
A1_POLICY_REQ = 20010
A1_POLICY_RESP = 20011
A1_POLICY_QUERY = 20012
RMRRM_TABLE_DATA = 20
RMRRM_REQ_TABLE = 21
RMRRM_TABLE_STATE = 22

# octoric's own (JSON payloads; schemas in docs/)
OCTORIC_ABW_REPORT = 30500
OCTORIC_HO_EVENT = 30501
OCTORIC_OCTOPUS_STATUS = 30502

BY_NAME: dict[str, int] = {
    name: value for name, value in globals().items() if name.isupper() and isinstance(value, int)
}
BY_NUMBER: dict[int, str] = {v: k for k, v in BY_NAME.items()}


def number(name_or_number: str | int) -> int:
    """``"RIC_INDICATION"`` or ``12050`` or ``"12050"`` -> 12050; KeyError names the unknown one."""
    if isinstance(name_or_number, int):
        return name_or_number
    if name_or_number.isdigit():
        return int(name_or_number)
    try:
        return BY_NAME[name_or_number]
    except KeyError:
        raise KeyError(f"unknown RMR message type name {name_or_number!r}") from None


def name(mtype: int) -> str:
    return BY_NUMBER.get(mtype, str(mtype))
