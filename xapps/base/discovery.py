"""E2 nodes from the R-NIB: ricxappframe's ``GetListGnbIds`` / ``GetNodeb`` read the
``e2Manager`` namespace, which O-RAN SC's e2mgr and octoric's e2term both write."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

log = logging.getLogger("xapps.discovery")
CONNECTED = 1  # ConnectionStatus.CONNECTED in the R-NIB protobufs


@dataclass(frozen=True)
class E2Node:
    meid: str
    connected: bool
    ran_functions: tuple[tuple[int, str], ...]  # (RAN function ID, OID)

    def has_function(self, oid: str, ran_function_id: int | None = None) -> bool:
        return any(
            o == oid or (ran_function_id is not None and f == ran_function_id)
            for f, o in self.ran_functions
        )


def rnib_nodes(xapp: Any) -> list[E2Node]:
    """The gNBs the R-NIB knows, through an ``RMRXapp`` (``get_list_gnb_ids``, ``GetNodeb``)."""
    out = []
    for ident in xapp.get_list_gnb_ids():
        name = ident.inventory_name
        info = xapp.GetNodeb(name)
        funcs: tuple[tuple[int, str], ...] = ()
        connected = ident.connection_status == CONNECTED
        if info is not None:
            connected = info.connection_status == CONNECTED
            if info.HasField("gnb"):
                funcs = tuple(
                    (int(f.ran_function_id), str(f.ran_function_oid))
                    for f in info.gnb.ran_functions
                )
        out.append(E2Node(name, connected, funcs))
    return sorted(out, key=lambda n: n.meid)
