"""An E2 node's RMR name (meid), as O-RAN SC's e2term writes it.

``<kind>_<mcc>_<mnc>_<node id in hex>``, e.g. ``gnb_001_001_00019b`` for srsRAN's defaults
(PLMN 00101, 22-bit gNB ID 411). The MNC is written with three digits, and the node ID with as
many hex digits as its bit length needs. A split gNB's part that gives a gNB-DU-ID or a
gNB-CU-UP-ID (one of the two, not both) gets it appended in hex, ``_<id>``, as O-RAN SC's
e2term does: srsRAN's DU agent (gNB-DU-ID 0) is ``gnb_001_001_00019b_0`` while its CU-CP agent,
same gNB ID, is ``gnb_001_001_00019b``, two nodes and not one refused as a duplicate. The RIC
names nodes this way in routes and R-NIB records; E2 nodes and xApps use it to find theirs.
"""

from __future__ import annotations

from octoric.e2sm.e2ap_ies import GlobalE2NodeId

_KIND_PREFIX = {"gNB": "gnb", "en-gNB": "gnb", "ng-eNB": "ng_enb", "eNB": "enb"}


def plmn_digits(plmn: bytes) -> tuple[str, str]:
    """(MCC, MNC) from a 3-octet BCD PLMN identity (TS 38.413 9.3.3.5); MNC padded to 3."""
    if len(plmn) != 3:
        raise ValueError(f"PLMN identity must be 3 octets, got {len(plmn)}")
    n = [plmn[0] & 0xF, plmn[0] >> 4, plmn[1] & 0xF, plmn[1] >> 4, plmn[2] & 0xF, plmn[2] >> 4]
    mcc = f"{n[0]}{n[1]}{n[2]}"
    mnc = f"{n[4]}{n[5]}" if n[3] == 0xF else f"{n[3]}{n[4]}{n[5]}"
    if not (mcc + mnc).isdigit():
        raise ValueError(f"PLMN identity {plmn.hex()} is not BCD")
    return mcc, mnc.rjust(3, "0")


def meid_of(node: GlobalE2NodeId) -> str:
    mcc, mnc = plmn_digits(node.plmn)
    digits = (node.node_id_bits + 3) // 4
    name = f"{_KIND_PREFIX.get(node.kind, 'node')}_{mcc}_{mnc}_{node.node_id:0{digits}x}"
    if node.kind in ("gNB", "en-gNB"):
        if node.du_id is not None and node.cu_up_id is None:
            return f"{name}_{node.du_id:x}"
        if node.cu_up_id is not None and node.du_id is None:
            return f"{name}_{node.cu_up_id:x}"
    return name
