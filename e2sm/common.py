"""E2SM common IEs (E2SM v05.00) that octoric's KPM and RC helpers use, as dataclasses.

UE identity in octoric is ``UeId`` of kind ``gNB-UEID``: AMF-UE-NGAP-ID + GUAMI (stable across
gNBs, so a UE can be followed through a handover), plus the gNB-CU-UE-F1AP-ID where the gNB
gives it. Other UEID alternatives decode to a ``UeId`` whose ``other`` holds pycrate's value.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from octoric.e2sm.e2ap_ies import bits_to_asn


@dataclass(frozen=True)
class Guami:
    """GUAMI: PLMN (3 bytes), AMF region (8 bits), set (10 bits) and pointer (6 bits)."""

    plmn: bytes
    amf_region_id: int
    amf_set_id: int
    amf_pointer: int

    def to_asn(self) -> dict[str, Any]:
        return {
            "pLMNIdentity": self.plmn,
            "aMFRegionID": bits_to_asn(self.amf_region_id, 8),
            "aMFSetID": bits_to_asn(self.amf_set_id, 10),
            "aMFPointer": bits_to_asn(self.amf_pointer, 6),
        }

    @classmethod
    def from_asn(cls, v: dict[str, Any]) -> Guami:
        return cls(v["pLMNIdentity"], v["aMFRegionID"][0], v["aMFSetID"][0], v["aMFPointer"][0])


@dataclass(frozen=True)
class UeId:
    """UEID. For ``kind == "gNB-UEID"``: ``amf_ue_ngap_id`` and ``guami`` (mandatory), the
    optional gNB-CU-UE-F1AP-ID list and RAN UE ID. For ``gNB-DU-UEID``: ``f1ap_ids`` holds the
    one gNB-CU-UE-F1AP-ID. ``other`` keeps pycrate's value for the remaining fields or kinds
    (so they survive a decode / encode round trip); it is None in the usual case."""

    kind: str = "gNB-UEID"
    amf_ue_ngap_id: int | None = None
    guami: Guami | None = None
    f1ap_ids: tuple[int, ...] = ()
    ran_ueid: bytes | None = None
    other: Any = None

    @classmethod
    def gnb(cls, amf_ue_ngap_id: int, guami: Guami, f1ap_id: int | None = None) -> UeId:
        """The usual octoric UE identity: UEID-GNB with AMF-UE-NGAP-ID, GUAMI, F1AP ID."""
        return cls("gNB-UEID", amf_ue_ngap_id, guami, () if f1ap_id is None else (f1ap_id,))

    @property
    def key(self) -> tuple[Any, ...]:
        """What identifies the UE across gNBs: (AMF-UE-NGAP-ID, GUAMI) for gNB-UEID."""
        if self.kind == "gNB-UEID":
            return (self.amf_ue_ngap_id, self.guami)
        return (self.kind, self.f1ap_ids, self.ran_ueid, repr(self.other))

    def to_asn(self) -> tuple[str, Any]:
        if self.kind == "gNB-UEID":
            if self.amf_ue_ngap_id is None or self.guami is None:
                raise ValueError("gNB-UEID needs amf_ue_ngap_id and guami")
            v: dict[str, Any] = dict(self.other or {})
            v["amf-UE-NGAP-ID"] = self.amf_ue_ngap_id
            v["guami"] = self.guami.to_asn()
            if self.f1ap_ids:
                v["gNB-CU-UE-F1AP-ID-List"] = [{"gNB-CU-UE-F1AP-ID": i} for i in self.f1ap_ids]
            if self.ran_ueid is not None:
                v["ran-UEID"] = self.ran_ueid
            return ("gNB-UEID", v)
        if self.kind == "gNB-DU-UEID":
            if len(self.f1ap_ids) != 1:
                raise ValueError("gNB-DU-UEID needs exactly one F1AP ID")
            v = dict(self.other or {})
            v["gNB-CU-UE-F1AP-ID"] = self.f1ap_ids[0]
            if self.ran_ueid is not None:
                v["ran-UEID"] = self.ran_ueid
            return ("gNB-DU-UEID", v)
        return (self.kind, self.other)

    @classmethod
    def from_asn(cls, v: tuple[str, Any]) -> UeId:
        kind, body = v
        if kind == "gNB-UEID":
            rest = {
                k: x
                for k, x in body.items()
                if k not in ("amf-UE-NGAP-ID", "guami", "gNB-CU-UE-F1AP-ID-List", "ran-UEID")
            }
            return cls(
                kind,
                int(body["amf-UE-NGAP-ID"]),
                Guami.from_asn(body["guami"]),
                tuple(int(i["gNB-CU-UE-F1AP-ID"]) for i in body.get("gNB-CU-UE-F1AP-ID-List", [])),
                body.get("ran-UEID"),
                rest or None,
            )
        if kind == "gNB-DU-UEID":
            rest = {k: x for k, x in body.items() if k not in ("gNB-CU-UE-F1AP-ID", "ran-UEID")}
            return cls(
                kind,
                f1ap_ids=(int(body["gNB-CU-UE-F1AP-ID"]),),
                ran_ueid=body.get("ran-UEID"),
                other=rest or None,
            )
        return cls(kind, other=body)


@dataclass(frozen=True)
class Cgi:
    """CGI: an NR CGI (36-bit cell identity) or, with ``eutra=True``, an E-UTRA CGI (28 bits)."""

    plmn: bytes
    cell_id: int
    eutra: bool = False

    def to_asn(self) -> tuple[str, dict[str, Any]]:
        if self.eutra:
            return (
                "eUTRA-CGI",
                {"pLMNIdentity": self.plmn, "eUTRACellIdentity": bits_to_asn(self.cell_id, 28)},
            )
        return ("nR-CGI", self.nr_to_asn())

    def nr_to_asn(self) -> dict[str, Any]:
        return {"pLMNIdentity": self.plmn, "nRCellIdentity": bits_to_asn(self.cell_id, 36)}

    @classmethod
    def from_asn(cls, v: tuple[str, dict[str, Any]]) -> Cgi:
        kind, body = v
        if kind == "nR-CGI":
            return cls.nr_from_asn(body)
        if kind == "eUTRA-CGI":
            return cls(body["pLMNIdentity"], body["eUTRACellIdentity"][0], True)
        raise ValueError(f"unknown CGI alternative {kind!r}")

    @classmethod
    def nr_from_asn(cls, body: dict[str, Any]) -> Cgi:
        return cls(body["pLMNIdentity"], body["nRCellIdentity"][0])


@dataclass(frozen=True)
class RanFunctionName:
    """RANfunction-Name."""

    short_name: str
    oid: str
    description: str
    instance: int | None = None

    def to_asn(self) -> dict[str, Any]:
        v: dict[str, Any] = {
            "ranFunction-ShortName": self.short_name,
            "ranFunction-E2SM-OID": self.oid,
            "ranFunction-Description": self.description,
        }
        if self.instance is not None:
            v["ranFunction-Instance"] = self.instance
        return v

    @classmethod
    def from_asn(cls, v: dict[str, Any]) -> RanFunctionName:
        return cls(
            v["ranFunction-ShortName"],
            v["ranFunction-E2SM-OID"],
            v["ranFunction-Description"],
            v.get("ranFunction-Instance"),
        )


def ntp_timestamp(unix_seconds: float) -> bytes:
    """8-byte NTP timestamp (seconds since 1900 + 32-bit fraction), as KPM TimeStamp uses."""
    secs = int(unix_seconds) + 2_208_988_800
    frac = round((unix_seconds - int(unix_seconds)) * (1 << 32)) & 0xFFFFFFFF
    return (secs & 0xFFFFFFFF).to_bytes(4, "big") + frac.to_bytes(4, "big")


def ntp_to_unix(ts: bytes) -> float:
    """Unix seconds of an 8-byte NTP timestamp."""
    if len(ts) != 8:
        raise ValueError("a TimeStamp is 8 bytes")
    return int.from_bytes(ts[:4], "big") - 2_208_988_800 + int.from_bytes(ts[4:], "big") / (1 << 32)
