"""E2 nodes from the R-NIB: ricxappframe's ``GetListGnbIds`` / ``GetNodeb`` read the
``e2Manager`` namespace, which O-RAN SC's e2mgr and octoric's e2term both write.

The KPM measurements a node offers come from its KPM RAN function definition in the R-NIB
record (the E2SM-KPM-RANfunction-Description bytes as a hex string, as e2term writes them), and
the E2SM-RC REPORT styles it offers from its RC RAN function definition (srsRAN's DU offers RC
for control only; its CU-CP, with octoric's patch, REPORT style 4). A KPM definition that was
read and lists no report style (srsRAN's CU-CP: a KPM function with no measurement at all) is
known to offer nothing (``E2Node.kpm_offer_known``), unlike one that could not be read.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass
from typing import Any

from octoric.e2sm import kpm, rc
from octoric.e2sm.errors import E2smError
from octoric.e2sm.kpm_version import KpmVersion, announced, is_kpm

log = logging.getLogger("xapps.discovery")
CONNECTED = 1  # ConnectionStatus.CONNECTED in the R-NIB protobufs

# (report style, measurement names the node lists for it)
KpmStyles = tuple[tuple[int, tuple[str, ...]], ...]


@dataclass(frozen=True)
class E2Node:
    meid: str
    connected: bool
    ran_functions: tuple[tuple[int, str], ...]  # (RAN function ID, OID)
    kpm_styles: KpmStyles = ()  # from its KPM RAN function definition; () if unknown or none
    kpm_version: KpmVersion | None = None  # what its E2 Setup announces (kpm_version.announced)
    rc_report_styles: tuple[int, ...] | None = None  # E2SM-RC REPORT styles; None: not known
    # its KPM RAN function definition was read: ``kpm_styles`` is all it offers, even when
    # empty (srsRAN's CU-CP lists no report style at all)
    kpm_definition_read: bool = False

    def has_function(self, oid: str, ran_function_id: int | None = None) -> bool:
        return any(
            o == oid or (ran_function_id is not None and f == ran_function_id)
            for f, o in self.ran_functions
        )

    def has_kpm(self) -> bool:
        """Does it offer E2SM-KPM (any version's OID, or KPM's usual RAN function ID)?"""
        return any(is_kpm(o) or f == kpm.RAN_FUNCTION_ID for f, o in self.ran_functions)

    def kpm_measurements(self, style: int | None = None) -> tuple[str, ...]:
        """The KPM measurement names the node offers in report style ``style`` (None: in
        any style), in the order of its definition; () when the definition was not read."""
        out: dict[str, None] = {}
        for s, names in self.kpm_styles:
            if style is None or s == style:
                out.update(dict.fromkeys(names))
        return tuple(out)

    def kpm_offer_known(self) -> bool:
        """Is what it offers in E2SM-KPM known (its definition was read, or lists styles)?
        False: ``kpm_measurements`` says nothing about what it would accept."""
        return self.kpm_definition_read or bool(self.kpm_styles)


def _unhex(definition: str, model: str) -> bytes | None:
    """The bytes of a RAN function definition as the E2 manager lists it (hex, maybe spaced)."""
    try:
        return bytes.fromhex("".join(definition.split()))
    except ValueError as e:
        log.warning("%s RAN function definition not readable (%d chars): not hex: %s", model,
                    len(definition), e)  # fmt: skip
        return None


@functools.lru_cache(maxsize=64)
def kpm_definition_of(definition: str | bytes) -> kpm.KpmRanFunctionDefinition | None:
    """An E2SM-KPM RAN function definition (hex string or bytes); None if it does not decode.
    Cached: discovery reads the same definitions every round, so a bad one is logged once."""
    data = definition if isinstance(definition, bytes) else _unhex(definition, "KPM")
    if data is None:
        return None
    try:
        return kpm.decode_kpm(kpm.KpmRanFunctionDefinition, data)
    except E2smError as e:
        log.warning("KPM RAN function definition not readable (%d chars): %s", len(definition), e)
        return None


def kpm_styles_of(definition: str | bytes) -> KpmStyles:
    """The report styles and measurement names of an E2SM-KPM RAN function definition (hex
    string or bytes); () if it does not decode."""
    d = kpm_definition_of(definition)
    return () if d is None else _styles(d)


def _styles(d: kpm.KpmRanFunctionDefinition) -> KpmStyles:
    return tuple(
        (s.style, tuple(name for name, _ in s.measurements)) for s in d.report_styles or ()
    )


def _kpm_function(meid: str, functions: Any) -> tuple[KpmStyles, KpmVersion | None, bool]:
    """The report styles, the announced KPM version and whether the definition was read, of
    the node's KPM RAN function (R-NIB ``RanFunction`` entries): the one with an E2SM-KPM OID
    (any version's), else the one with KPM's usual RAN function ID."""
    fs = list(functions)
    f = next((f for f in fs if is_kpm(str(f.ran_function_oid))), None)
    if f is None:
        f = next((f for f in fs if int(f.ran_function_id) == kpm.RAN_FUNCTION_ID), None)
    if f is None:
        log.debug("%s offers no KPM RAN function", meid)
        return (), None, False
    d = kpm_definition_of(str(f.ran_function_definition))
    version = announced(str(f.ran_function_oid), d)
    return (() if d is None else _styles(d)), version, d is not None


@functools.lru_cache(maxsize=256)
def rc_report_styles_of(definition: str) -> tuple[int, ...] | None:
    """The REPORT styles of an E2SM-RC RAN function definition (hex); None if it does not
    decode (cached: a bad one is logged once)."""
    data = _unhex(definition, "RC")
    if data is None:
        return None
    try:
        d = rc.decode_rc(rc.RcRanFunctionDefinition, data)
    except E2smError as e:
        log.warning("RC RAN function definition not readable (%d chars): %s", len(definition), e)
        return None
    return tuple(st.style for st in d.report_styles or ())


def _rc_report_styles(functions: Any) -> tuple[int, ...] | None:
    f = next((f for f in functions if str(f.ran_function_oid) == rc.OID), None)
    if f is None:
        f = next((f for f in functions if int(f.ran_function_id) == rc.RAN_FUNCTION_ID), None)
    return None if f is None else rc_report_styles_of(str(f.ran_function_definition))


def rnib_nodes(xapp: Any) -> list[E2Node]:
    """The gNBs the R-NIB knows, through an ``RMRXapp`` (``get_list_gnb_ids``, ``GetNodeb``)."""
    out = []
    for ident in xapp.get_list_gnb_ids():
        name = ident.inventory_name
        info = xapp.GetNodeb(name)
        funcs: tuple[tuple[int, str], ...] = ()
        styles: KpmStyles = ()
        version: KpmVersion | None = None
        rc_styles: tuple[int, ...] | None = None
        read = False
        connected = ident.connection_status == CONNECTED
        if info is not None:
            connected = info.connection_status == CONNECTED
            if info.HasField("gnb"):
                funcs = tuple(
                    (int(f.ran_function_id), str(f.ran_function_oid))
                    for f in info.gnb.ran_functions
                )
                styles, version, read = _kpm_function(name, info.gnb.ran_functions)
                rc_styles = _rc_report_styles(info.gnb.ran_functions)
        out.append(E2Node(name, connected, funcs, styles, version, rc_styles, read))
    return sorted(out, key=lambda n: n.meid)
