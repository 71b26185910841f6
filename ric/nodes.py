"""E2 nodes as the RIC records them: their RMR name (meid), RAN functions and R-NIB entries.

The meid follows O-RAN SC's e2term: ``<kind>_<mcc>_<mnc>_<node id in hex>``, e.g.
``gnb_001_001_00019b`` for srsRAN's defaults (PLMN 00101, 22-bit gNB ID 411). The MNC is written
with three digits, and the node ID with as many hex digits as its bit length needs.

Besides our own record (``octoric.ric.nodes``), the R-NIB entries that ricxappframe's
``GetNodeb``/``GetListGnbIds`` read are written in namespace ``e2Manager`` as protobufs, as
O-RAN SC's e2mgr does.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any

from octoric.e2sm.e2ap_ies import GlobalE2NodeId, RanFunction
from octoric.ric.sdl import Sdl

NS = "octoric.ric.nodes"
RNIB_NS = "e2Manager"
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
    return f"{_KIND_PREFIX.get(node.kind, 'node')}_{mcc}_{mnc}_{node.node_id:0{digits}x}"


@dataclass
class RanFunctionRecord:
    ran_function_id: int
    revision: int
    oid: str
    definition_hex: str


@dataclass
class NodeRecord:
    meid: str
    kind: str
    plmn_hex: str
    node_id: int
    node_id_bits: int
    peer: str
    transport: str
    connected: bool = True
    connected_at: float = field(default_factory=time.time)
    setups: int = 1
    ran_functions: list[RanFunctionRecord] = field(default_factory=list)

    @classmethod
    def from_setup(
        cls, node: GlobalE2NodeId, functions: list[RanFunction], peer: str, transport: str
    ) -> NodeRecord:
        return cls(
            meid=meid_of(node),
            kind=node.kind,
            plmn_hex=node.plmn.hex(),
            node_id=node.node_id,
            node_id_bits=node.node_id_bits,
            peer=peer,
            transport=transport,
            ran_functions=[
                RanFunctionRecord(f.ran_function_id, f.revision, f.oid, f.definition.hex())
                for f in functions
            ],
        )

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> NodeRecord:
        d = dict(d)
        d["ran_functions"] = [RanFunctionRecord(**f) for f in d.get("ran_functions", [])]
        return cls(**d)


async def save(sdl: Sdl, rec: NodeRecord) -> None:
    await sdl.set_json(NS, rec.meid, rec.to_json())
    await _write_rnib(sdl, rec)


async def load_all(sdl: Sdl) -> list[NodeRecord]:
    return [NodeRecord.from_json(v) for v in (await sdl.all_json(NS)).values()]


async def _write_rnib(sdl: Sdl, rec: NodeRecord) -> None:
    """R-NIB records for ricxappframe's GetNodeb / GetListGnbIds (protobuf, as e2mgr)."""
    from ricxappframe.entities.rnib import nb_identity_pb2, nodeb_info_pb2

    status = 1 if rec.connected else 2  # ConnectionStatus: CONNECTED=1, DISCONNECTED=2
    host, _, port = rec.peer.rpartition(":")
    gid = nb_identity_pb2.GlobalNbId(plmn_id=rec.plmn_hex.upper(), nb_id=f"{rec.node_id:x}")
    info = nodeb_info_pb2.NodebInfo(
        ran_name=rec.meid,
        ip=host,
        port=int(port) if port.isdigit() else 0,
        connection_status=status,
        global_nb_id=gid,
        node_type=2 if rec.kind in ("gNB", "en-gNB") else 1,  # Node.Type: ENB=1, GNB=2
        associated_e2t_instance_address="e2term",
        setup_from_network=True,
    )
    if rec.kind in ("gNB", "en-gNB"):
        for f in rec.ran_functions:
            info.gnb.ran_functions.add(
                ran_function_id=f.ran_function_id,
                ran_function_definition=f.definition_hex,
                ran_function_revision=f.revision,
                ran_function_oid=f.oid,
            )
    ident = nb_identity_pb2.NbIdentity(
        inventory_name=rec.meid, global_nb_id=gid, connection_status=status
    )
    group = "GNB" if rec.kind in ("gNB", "en-gNB") else "ENB"
    old = [m for m in await sdl.members(RNIB_NS, group) if _inventory(m) == rec.meid]
    await sdl.remove_member(RNIB_NS, group, *old)
    await sdl.add_member(RNIB_NS, group, ident.SerializeToString())
    await sdl.set(RNIB_NS, {f"RAN:{rec.meid}": info.SerializeToString()})


def _inventory(serialized: bytes) -> str:
    from ricxappframe.entities.rnib import nb_identity_pb2

    ident = nb_identity_pb2.NbIdentity()
    ident.ParseFromString(serialized)
    return str(ident.inventory_name)
