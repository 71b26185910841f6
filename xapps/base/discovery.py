"""E2 nodes from the R-NIB: ricxappframe's ``GetListGnbIds`` / ``GetNodeb`` read the
``e2Manager`` namespace, which O-RAN SC's e2mgr and octoric's e2term both write.

The KPM measurements a node offers come from its KPM RAN function definition in the R-NIB
record (the E2SM-KPM-RANfunction-Description bytes as a hex string, as e2term writes them).
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass
from typing import Any

from octoric.e2sm import kpm
from octoric.e2sm.errors import E2smError

log = logging.getLogger("xapps.discovery")
CONNECTED = 1  # ConnectionStatus.CONNECTED in the R-NIB protobufs

# (report style, measurement names the node lists for it)
KpmStyles = tuple[tuple[int, tuple[str, ...]], ...]


@dataclass(frozen=True)
class E2Node:
    meid: str
    connected: bool
    ran_functions: tuple[tuple[int, str], ...]  # (RAN function ID, OID)
    kpm_styles: KpmStyles = ()  # from the KPM RAN function definition; () if unknown

    def has_function(self, oid: str, ran_function_id: int | None = None) -> bool:
        return any(
            o == oid or (ran_function_id is not None and f == ran_function_id)
            for f, o in self.ran_functions
        )

    def kpm_measurements(self, style: int | None = None) -> tuple[str, ...]:
        """The KPM measurement names the node offers in report style ``style`` (None: in
        any style), in the order of its definition; () when the definition was not read."""
        out: dict[str, None] = {}
        for s, names in self.kpm_styles:
            if style is None or s == style:
                out.update(dict.fromkeys(names))
        return tuple(out)


@functools.lru_cache(maxsize=64)
def kpm_styles_of(definition: str | bytes) -> KpmStyles:
    """The report styles and measurement names of an E2SM-KPM RAN function definition (hex
    string or bytes); () if it does not decode. Cached: discovery reads the same definitions
    every round, so a bad one is logged once."""
    try:
        data = (
            definition
            if isinstance(definition, bytes)
            else bytes.fromhex("".join(definition.split()))
        )
        d = kpm.decode_kpm(kpm.KpmRanFunctionDefinition, data)
    except (ValueError, E2smError) as e:
        log.warning("KPM RAN function definition not readable (%d chars): %s", len(definition), e)
        return ()
    return tuple(
        (s.style, tuple(name for name, _ in s.measurements)) for s in d.report_styles or ()
    )


def _kpm_styles(meid: str, functions: Any) -> KpmStyles:
    """The report styles of the node's KPM RAN function (R-NIB ``RanFunction`` entries): the
    one with E2SM-KPM's OID, else the one with KPM's usual RAN function ID."""
    fs = list(functions)
    f = next((f for f in fs if str(f.ran_function_oid) == kpm.OID), None)
    if f is None:
        f = next((f for f in fs if int(f.ran_function_id) == kpm.RAN_FUNCTION_ID), None)
    if f is None:
        log.debug("%s offers no KPM RAN function", meid)
        return ()
    return kpm_styles_of(str(f.ran_function_definition))


def rnib_nodes(xapp: Any) -> list[E2Node]:
    """The gNBs the R-NIB knows, through an ``RMRXapp`` (``get_list_gnb_ids``, ``GetNodeb``)."""
    out = []
    for ident in xapp.get_list_gnb_ids():
        name = ident.inventory_name
        info = xapp.GetNodeb(name)
        funcs: tuple[tuple[int, str], ...] = ()
        styles: KpmStyles = ()
        connected = ident.connection_status == CONNECTED
        if info is not None:
            connected = info.connection_status == CONNECTED
            if info.HasField("gnb"):
                funcs = tuple(
                    (int(f.ran_function_id), str(f.ran_function_oid))
                    for f in info.gnb.ran_functions
                )
                styles = _kpm_styles(name, info.gnb.ran_functions)
        out.append(E2Node(name, connected, funcs, styles))
    return sorted(out, key=lambda n: n.meid)
