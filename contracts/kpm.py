"""E2SM-KPM as octoric's gNBs and xApps agree on it (docs/e2-interfaces.md).

Measurement names are 3GPP TS 28.552's where it has one, ``OCC.*`` (vendor) where it has none.
``AGGREGATION`` says how a reporting granule of several slots summarises each one: the live E2
agent and the offline OCC source both follow it (``octoric.e2sm.granules.aggregate_granules``).
"""

from __future__ import annotations

RAN_FUNCTION_ID = 2
OID = "1.3.6.1.4.1.53148.1.2.2.2"  # as srsRAN_Project
# the OIDs E2 nodes announce KPM with (e2sm/kpm_version.py): v02.0x's (which srsRAN_Project and
# OCUDU send with v04.00 encoding), and v03.00's (kept by v04.00 and v05.00)
OID_V2 = OID
OID_V3 = "1.3.6.1.4.1.53148.1.3.2.2"
SHORT_NAME = "ORAN-E2SM-KPM"

PRB_USED_DL = "RRU.PrbUsedDl"  # UE: PRBs allocated, average per DL slot (P_alloc)
PRB_AVAIL_DL = "RRU.PrbAvailDl"  # cell: idle (unallocated) PRBs, average per DL slot (P_idle)
ACTIVE_UES_DL = "OCC.ActiveUesDl"  # cell: UEs with DL data or a DL grant (N_user), see below
MCS_DL = "OCC.McsDl"  # UE: DL MCS index of the latest grant
BITS_PER_PRB_DL = "OCC.BitsPerPrbDl"  # UE: TB bits per PRB per slot at the latest MCS (R_mcs)
DL_BUFFER_BYTES = "OCC.DlBufferBytes"  # UE: RLC DL buffer at the end of the granule
DL_ARRIVED_BYTES = "OCC.DlArrivedBytes"  # UE: bytes that arrived in the DL buffers
UE_THP_DL = "DRB.UEThpDl"  # UE: standard DL throughput, kbit/s
PRB_TOTAL_DL = "OCC.PrbTotalDl"  # cell (optional): DL PRBs of the serving carrier (P_total)

# what the OCC xApp subscribes to, in this order, and what a gNB may offer on top
OCC_MEASUREMENTS: tuple[str, ...] = (
    PRB_USED_DL,
    PRB_AVAIL_DL,
    ACTIVE_UES_DL,
    MCS_DL,
    BITS_PER_PRB_DL,
    DL_BUFFER_BYTES,
    DL_ARRIVED_BYTES,
    UE_THP_DL,
)
OCC_OPTIONAL_MEASUREMENTS: tuple[str, ...] = (PRB_TOTAL_DL,)
# What the OCC engine reads (Eq. 1-5), in the column order of its block: the measurements a
# node must report for OCC's full mode (the xApp, and the simulator's offline OCC source)
OCC_ENGINE_INPUTS: tuple[str, ...] = (
    PRB_USED_DL,
    PRB_AVAIL_DL,
    ACTIVE_UES_DL,
    BITS_PER_PRB_DL,
    DL_BUFFER_BYTES,
    DL_ARRIVED_BYTES,
)
# The 3GPP TS 28.552 measurements of the set: what a node without octoric's vendor ones must
# report for OCC's degraded mode (xapps/occ/degraded.py estimates the others from them)
STANDARD_MEASUREMENTS: tuple[str, ...] = (PRB_USED_DL, PRB_AVAIL_DL, UE_THP_DL)

UE_LEVEL: frozenset[str] = frozenset(
    {PRB_USED_DL, MCS_DL, BITS_PER_PRB_DL, DL_BUFFER_BYTES, DL_ARRIVED_BYTES, UE_THP_DL}
)

# How one granule (several slots) summarises the per-slot values.
# N_user (OCC.ActiveUesDl): the OCC paper (Eq. 1-3) divides each slot's idle PRBs by N_user,
# "the number of users in the cell", one value for the whole averaging window, not a per-slot
# count. A granule therefore reports the most UEs that were active (DL data or a DL grant) in
# any of its slots: a UE idle for one slot of a granule is still in the cell, and averaging
# would shrink N_user and inflate every UE's share of the idle PRBs (docs/e2-interfaces.md).
MEAN, LAST, SUM, MAX = "mean", "last", "sum", "max"
AGGREGATION: dict[str, str] = {
    PRB_USED_DL: MEAN,
    PRB_AVAIL_DL: MEAN,
    ACTIVE_UES_DL: MAX,
    UE_THP_DL: MEAN,
    PRB_TOTAL_DL: MEAN,  # constant per carrier: its mean is the carrier's PRB count
    MCS_DL: LAST,
    BITS_PER_PRB_DL: LAST,
    DL_BUFFER_BYTES: LAST,
    DL_ARRIVED_BYTES: SUM,
}
