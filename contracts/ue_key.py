"""The UE key: the one integer by which octoric's xApps, their messages (30500-30502), their REST
APIs and A1 policies name a UE.

- A UE that an E2 node reports with a UEID-GNB (a gNB with its CU-CP, as octoric's simulated
  gNBs and srsRAN's CU-CP report) is keyed by its **AMF-UE-NGAP-ID** (0 .. 2^40-1). It stays the
  same across gNBs, so a handover does not change it.
- A UE that a node reports only with a UEID-GNB-DU (srsRAN_Project's DU: its E2 agent knows the
  gNB-CU-UE-F1AP-ID, not the AMF's ID) is keyed by the node and that F1AP ID:
  ``2^40 + tag(meid) * 2^32 + gNB-CU-UE-F1AP-ID``, where ``tag`` is 20 bits of the CRC-32 of
  the node's MEID. F1AP IDs are only unique within one CU, so the tag keeps two gNBs' UE 0
  apart; such a key names a UE on that one node (after a handover it is another UE's key).

Every key is below 2^53, so it is exact in JavaScript's numbers (a browser sender reading the
JSON feedback). Two MEIDs share a tag with probability 2^-20 per pair; a user of many DU-only
nodes can check ``tag`` for collisions among them.
"""

from __future__ import annotations

import zlib
from typing import TypeGuard

AMF_UE_NGAP_ID_MAX = (1 << 40) - 1
DU_KEY_BASE = 1 << 40
TAG_BITS = 20
F1AP_ID_MAX = (1 << 32) - 1
UE_KEY_MAX = DU_KEY_BASE + ((1 << TAG_BITS) - 1) * (1 << 32) + F1AP_ID_MAX


def tag(meid: str) -> int:
    """The node's 20-bit tag in a DU UE key."""
    return zlib.crc32(meid.encode()) & ((1 << TAG_BITS) - 1)


def du_key(meid: str, f1ap_id: int) -> int:
    """The key of the UE that node ``meid`` reports with gNB-CU-UE-F1AP-ID ``f1ap_id``."""
    if not 0 <= f1ap_id <= F1AP_ID_MAX:
        raise ValueError(f"gNB-CU-UE-F1AP-ID {f1ap_id} is outside 0..2^32-1")
    return DU_KEY_BASE + (tag(meid) << 32) + f1ap_id


def is_ue_key(key: object) -> TypeGuard[int]:
    """An integer that can be a UE key (bool is not)."""
    return isinstance(key, int) and not isinstance(key, bool) and 0 <= key <= UE_KEY_MAX


def du_parts(key: int) -> tuple[int, int] | None:
    """(tag, gNB-CU-UE-F1AP-ID) of a DU UE key; None for an AMF-UE-NGAP-ID."""
    if key < DU_KEY_BASE:
        return None
    rest = key - DU_KEY_BASE
    return rest >> 32, rest & F1AP_ID_MAX


def on_node(key: int, meid: str) -> bool:
    """Whether the UE can be addressed at node ``meid`` by this key alone: every node for an
    AMF-UE-NGAP-ID (the node says whether it serves the UE), only its own node for a DU key."""
    parts = du_parts(key)
    return parts is None or parts[0] == tag(meid)
