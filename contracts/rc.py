"""The E2SM-RC profile octoric's gNBs and xApps agree on (docs/e2-interfaces.md).

RAN parameter ids are E2SM-RC v05.00's where it defines one (section 8.2.4, UE information);
octoric's vendor ids (30001+) only where it has none. Control action 100 "Octopus content
adaptation" is octoric's vendor action in CONTROL style 1 (radio bearer control).
"""

from __future__ import annotations

RAN_FUNCTION_ID = 3
OID = "1.3.6.1.4.1.53148.1.1.2.3"  # as srsRAN_Project
SHORT_NAME = "ORAN-E2SM-RC"

# --- REPORT -----------------------------------------------------------------------------------
REPORT_STYLE_CALL_PROCESS_OUTCOME = 2
REPORT_STYLE_UE_INFORMATION = 4

# REPORT style 4 (UE information change) parameters
PARAM_RRC_STATE = 202  # "RRC State Changed To": 0 rrc-connected, 1 rrc-inactive, 2 rrc-idle
PARAM_NR_CELL = 17011  # serving cell's NR Cell Identity (BIT STRING 36)
PARAM_HO_PHASE = 30001  # octoric: 1 handover started, 2 completed, 3 failed (re-established)
PARAM_SOURCE_CELL = 30002  # octoric: the source cell's NR Cell Identity (BIT STRING 36)
PARAM_INTERRUPTION_MS = 30003  # octoric: the UE's interruption, ms (INTEGER; with phase 2/3)
HO_PHASE_STARTED, HO_PHASE_COMPLETED, HO_PHASE_FAILED = 1, 2, 3
REPORT_PARAMS: dict[int, str] = {
    PARAM_RRC_STATE: "RRC State Changed To",
    PARAM_NR_CELL: "NR Cell Identity",
    PARAM_HO_PHASE: "octoric handover phase",
    PARAM_SOURCE_CELL: "octoric source NR Cell Identity",
    PARAM_INTERRUPTION_MS: "octoric handover interruption (ms)",
}

# --- CONTROL ----------------------------------------------------------------------------------
CONTROL_STYLE_RADIO_BEARER = 1
OCTOPUS_ACTION_ID = 100
OCTOPUS_ACTION_NAME = "Octopus content adaptation"

# RAN parameters of control action 100 (a flat list in control message format 1)
PARAM_DRB_ID = 1
PARAM_ENABLE = 2
PARAM_PRIORITY_LEVELS = 3
PARAM_BITRATE_WINDOW_MS = 4
PARAM_DROP_BY_MESSAGE = 5
PARAM_DROP_BY_BITRATE = 6
PARAM_PROTECT_IN_FLIGHT = 7
# control outcome only (format 1): the DRB's dropper counters since it was switched on
OUTCOME_DROPPED_PACKETS = 8
OUTCOME_DROPPED_BYTES = 9
OUTCOME_DROPPED_MSGS_BY_MESSAGE = 10
OUTCOME_DROPPED_MSGS_BY_BITRATE = 11
OCTOPUS_OUTCOME_PARAMS: dict[int, str] = {
    OUTCOME_DROPPED_PACKETS: "Dropped packets",
    OUTCOME_DROPPED_BYTES: "Dropped bytes",
    OUTCOME_DROPPED_MSGS_BY_MESSAGE: "Messages dropped by message",
    OUTCOME_DROPPED_MSGS_BY_BITRATE: "Messages dropped by bitrate",
}
OCTOPUS_PARAMS: dict[int, str] = {
    PARAM_DRB_ID: "DRB ID",
    PARAM_ENABLE: "Octopus enable",
    PARAM_PRIORITY_LEVELS: "Message priority levels",
    PARAM_BITRATE_WINDOW_MS: "Bitrate window (ms)",
    PARAM_DROP_BY_MESSAGE: "Drop by message",
    PARAM_DROP_BY_BITRATE: "Drop by bitrate",
    PARAM_PROTECT_IN_FLIGHT: "Protect in-flight message",
}
