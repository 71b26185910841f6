"""E2 nodes as the RIC records them: their RMR name (meid), RAN functions and R-NIB entries.

The meid is ``octoric.e2sm.node_id.meid_of`` (O-RAN SC e2term's naming).

Besides our own record (``octoric.ric.nodes``), the R-NIB entries that ricxappframe's
``GetNodeb``/``GetListGnbIds`` read are written in namespace ``e2Manager`` as protobufs, as
O-RAN SC's e2mgr does.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any

from octoric.e2sm.e2ap_ies import GlobalE2NodeId, RanFunction
from octoric.e2sm.node_id import meid_of
from octoric.ric.sdl import Sdl

NS = "octoric.ric.nodes"
RNIB_NS = "e2Manager"


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


def rnib_nodeb_info(rec: NodeRecord) -> Any:
    """The R-NIB NodebInfo (protobuf, as e2mgr writes it) of a node: what ricxappframe's
    GetNodeb returns to xApps."""
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
    return info


async def _write_rnib(sdl: Sdl, rec: NodeRecord) -> None:
    """R-NIB records for ricxappframe's GetNodeb / GetListGnbIds (protobuf, as e2mgr)."""
    from ricxappframe.entities.rnib import nb_identity_pb2

    info = rnib_nodeb_info(rec)
    status = info.connection_status
    gid = info.global_nb_id
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
