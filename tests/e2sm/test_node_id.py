"""E2 node names (meids) as O-RAN SC's e2term writes them, including a split gNB's parts."""

from __future__ import annotations

import pytest

from octoric.e2sm.e2ap_ies import GlobalE2NodeId
from octoric.e2sm.node_id import meid_of

pytestmark = pytest.mark.unit
PLMN = bytes.fromhex("00f110")  # MCC 001, MNC 01


@pytest.mark.parametrize(
    ("node", "meid"),
    [
        (GlobalE2NodeId(PLMN, 411, 22), "gnb_001_001_00019b"),
        # srsRAN's DU agent: gNB-DU-ID 0 (its default); its CU-CP agent has the line above
        (GlobalE2NodeId(PLMN, 411, 22, du_id=0), "gnb_001_001_00019b_0"),
        (GlobalE2NodeId(PLMN, 411, 22, du_id=0x2A), "gnb_001_001_00019b_2a"),
        (GlobalE2NodeId(PLMN, 411, 22, cu_up_id=3), "gnb_001_001_00019b_3"),
        # both IDs: the plain gNB name, as e2term does
        (GlobalE2NodeId(PLMN, 411, 22, cu_up_id=3, du_id=1), "gnb_001_001_00019b"),
        (GlobalE2NodeId(PLMN, 0xABCDE, 20, kind="ng-eNB"), "ng_enb_001_001_abcde"),
    ],
)
def test_meid(node: GlobalE2NodeId, meid: str) -> None:
    assert meid_of(node) == meid
