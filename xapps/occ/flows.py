"""Registered video flows: who gets OCC feedback, where, in which format.

``POST /occ/v1/flows`` bodies are read by ``parse_flow``; a bad body raises ``RestError``
(400) whose reason is the counter key and whose message names the field.
"""

from __future__ import annotations

import ipaddress
import re
import time
import uuid
from dataclasses import asdict, dataclass, field
from typing import Any

from octoric.contracts import ue_key
from octoric.xapps.base.errors import RestError
from octoric.xapps.occ.records import guami_str

__all__ = ["FORMATS", "Flow", "guami_str", "parse_address", "parse_flow"]

FORMATS = ("remb", "json")
_ID = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
_HOST = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?$")
_GUAMI = re.compile(r"^([0-9a-fA-F]{6}):(\d{1,3}):(\d{1,4}):(\d{1,2})$")
_KEYS = {"id", "ue", "guami", "address", "format", "ssrcs", "sender_ssrc"}
# registered flows at most: a few per UE of the cells one xApp serves; past it a registration
# is refused (409), so a client that never deletes cannot grow the xApp without bound (#17)
MAX_FLOWS = 4096


def _bad(field_: str, message: str) -> RestError:
    return RestError(400, f"bad_flow_{field_}", f"flow {field_}: {message}")


@dataclass(frozen=True)
class Flow:
    id: str
    ue: int  # AMF-UE-NGAP-ID
    host: str
    port: int
    format: str  # "remb" | "json"
    guami: str | None = None  # when set, feedback only while the UE reports this GUAMI
    ssrcs: tuple[int, ...] = ()  # remb: the media SSRCs the REMB applies to
    sender_ssrc: int = 0  # remb: "SSRC of packet sender"
    created: float = field(default_factory=time.time)

    @property
    def address(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["ssrcs"] = list(self.ssrcs)
        d["address"] = self.address
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Flow:
        d = {k: v for k, v in d.items() if k != "address"}
        d["ssrcs"] = tuple(d.get("ssrcs") or ())
        return cls(**d)


def _u32(v: Any, name: str) -> int:
    if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v <= 0xFFFFFFFF:
        raise _bad(name, f"must be an integer 0..4294967295, got {v!r}")
    return v


def parse_address(v: Any) -> tuple[str, int]:
    if not isinstance(v, str) or not v:
        raise _bad("address", "must be a string 'host:port'")
    host, sep, port_s = v.rpartition(":")
    if not sep or not port_s.isdigit():
        raise _bad("address", f"must be 'host:port', got {v!r}")
    port = int(port_s)
    if not 1 <= port <= 65535:
        raise _bad("address", f"port must be 1..65535, got {port}")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    try:
        ipaddress.ip_address(host)
    except ValueError:
        if not _HOST.match(host):
            raise _bad("address", f"{host!r} is not an IP address or host name") from None
    return host, port


def parse_flow(body: Any, flow_id: str | None = None) -> Flow:
    if not isinstance(body, dict):
        raise RestError(400, "bad_flow_body", "the flow must be a JSON object")
    unknown = sorted(set(body) - _KEYS)
    if unknown:
        raise RestError(
            400, "bad_flow_body", f"unknown flow fields {unknown} (known: {sorted(_KEYS)})"
        )
    fid = body.get("id", flow_id) or uuid.uuid4().hex[:12]
    if not isinstance(fid, str) or not _ID.match(fid):
        raise _bad("id", "must be 1-64 characters of A-Z a-z 0-9 _ . -")
    ue = body.get("ue")
    if not ue_key.is_ue_key(ue):
        raise _bad(
            "ue",
            "must be the UE's key: its AMF-UE-NGAP-ID (0..2^40-1), or for a UE a DU reports "
            f"by F1AP ID the key GET /occ/v1/ues lists, got {ue!r}",
        )
    guami = body.get("guami")
    if guami is not None and (not isinstance(guami, str) or not _GUAMI.match(guami)):
        raise _bad("guami", f"must be '<PLMN hex>:<region>:<set>:<pointer>', got {guami!r}")
    if "address" not in body:
        raise _bad("address", "is required ('host:port' where the sender listens)")
    host, port = parse_address(body["address"])
    fmt = body.get("format")
    if fmt not in FORMATS:
        raise _bad("format", f"must be one of {list(FORMATS)}, got {fmt!r}")
    ssrcs_raw = body.get("ssrcs", [])
    if not isinstance(ssrcs_raw, list) or len(ssrcs_raw) > 255:
        raise _bad("ssrcs", "must be a list of at most 255 SSRCs")
    ssrcs = tuple(_u32(s, "ssrcs") for s in ssrcs_raw)
    if fmt == "remb" and not ssrcs:
        raise _bad("ssrcs", "a remb flow needs the media SSRCs the REMB applies to")
    sender = _u32(body.get("sender_ssrc", 0), "sender_ssrc")
    return Flow(fid, ue, host, port, fmt, guami.lower() if guami else None, ssrcs, sender)
