"""pycrate values <-> octoric's JSON convention (what ``octoric e2sm decode/encode`` print/read).

SEQUENCE = object keyed by ASN.1 field names; CHOICE = [alternative, value]; OCTET STRING =
hex string; BIT STRING = [hex, bit-length] (bits left-aligned in the hex bytes, as on the
wire); ENUMERATED = its name; INTEGER / REAL = number; BOOLEAN = true/false; NULL = null;
strings = strings. Open types (E2AP IE values) = [type-name, value]. An OCTET STRING that
carries an E2SM payload octoric knows (chosen by the message's RAN function ID: 2 = KPM,
3 = RC) is shown as [E2SM-type-name, value] instead of hex; either form is accepted on encode.

The walkers follow pycrate's object tree, so every conversion is schema-driven.
"""

from __future__ import annotations

import time
from typing import Any

from pycrate_asn1rt.asnobj import ASN1Obj

from octoric.contracts import kpm as kpm_profile
from octoric.contracts import rc as rc_profile
from octoric.e2sm import codec
from octoric.e2sm.errors import E2smDecodeError, E2smEncodeError
from octoric.e2sm.kpm import real_from_asn, real_to_asn

Json = Any

# E2AP OCTET STRING types that carry an E2SM payload, by RAN function ID.
_E2SM_PAYLOADS: dict[int, dict[str, str]] = {
    2: {
        "RICeventTriggerDefinition": "E2SM-KPM-EventTriggerDefinition",
        "RICactionDefinition": "E2SM-KPM-ActionDefinition",
        "RICindicationHeader": "E2SM-KPM-IndicationHeader",
        "RICindicationMessage": "E2SM-KPM-IndicationMessage",
        "RANfunctionDefinition": "E2SM-KPM-RANfunction-Description",
    },
    3: {
        "RICeventTriggerDefinition": "E2SM-RC-EventTrigger",
        "RICactionDefinition": "E2SM-RC-ActionDefinition",
        "RICindicationHeader": "E2SM-RC-IndicationHeader",
        "RICindicationMessage": "E2SM-RC-IndicationMessage",
        "RICcallProcessID": "E2SM-RC-CallProcessID",
        "RICcontrolHeader": "E2SM-RC-ControlHeader",
        "RICcontrolMessage": "E2SM-RC-ControlMessage",
        "RICcontrolOutcome": "E2SM-RC-ControlOutcome",
        "RANfunctionDefinition": "E2SM-RC-RANFunctionDefinition",
    },
}
_OID_TO_FUNCTION = {
    kpm_profile.OID: kpm_profile.RAN_FUNCTION_ID,
    rc_profile.OID: rc_profile.RAN_FUNCTION_ID,
}

_CONSTRUCTED_SEQ = ("SEQUENCE", "SET")
_CONSTRUCTED_OF = ("SEQUENCE OF", "SET OF")


def _bits_hex(value: int, nbits: int) -> str:
    nbytes = (nbits + 7) // 8
    return (value << (nbytes * 8 - nbits)).to_bytes(nbytes, "big").hex() if nbits else ""


def _hex_bits(h: str, nbits: int) -> tuple[int, int]:
    raw = bytes.fromhex(h)
    if len(raw) != (nbits + 7) // 8:
        raise ValueError(f"BIT STRING of {nbits} bits needs {(nbits + 7) // 8} bytes of hex")
    return (int.from_bytes(raw, "big") >> (len(raw) * 8 - nbits) if nbits else 0, nbits)


def _semantic_name(obj: ASN1Obj) -> str:
    tr = getattr(obj, "_typeref", None)
    called = getattr(tr, "called", None)
    if isinstance(called, tuple) and len(called) == 2:
        return str(called[1])
    return str(obj._name)


def _function_of_ies(ies: Any) -> int | None:
    if isinstance(ies, list):
        for f in ies:
            if isinstance(f, dict) and f.get("id") == 5:
                v = f.get("value")
                if isinstance(v, tuple) and len(v) == 2 and isinstance(v[1], int):
                    return v[1]
    return None


def value_to_json(
    obj: ASN1Obj, val: Any, ran_function: int | None = None, deadline: float | None = None
) -> Json:
    """JSON form of pycrate value ``val`` of the ASN.1 type ``obj``. Nested E2SM payloads are
    decoded within ``deadline`` (time.monotonic()), default: one codec time limit from now,
    so a PDU full of payloads stays bounded as a whole."""
    if deadline is None:
        deadline = time.monotonic() + codec.DECODE_TIME_LIMIT_S
    t = obj.TYPE
    if t in _CONSTRUCTED_SEQ:
        if "ranFunctionOID" in val:
            ran_function = _OID_TO_FUNCTION.get(val["ranFunctionOID"], ran_function)
        elif isinstance(val.get("ranFunctionID"), int):
            ran_function = val["ranFunctionID"]
        if "protocolIEs" in val:
            ran_function = _function_of_ies(val["protocolIEs"]) or ran_function
        out = {}
        for k, v in val.items():
            comp = obj._cont[k] if k in obj._cont else None  # noqa: SIM401 (ASN1Dict has no get)
            out[k] = (
                value_to_json(comp, v, ran_function, deadline) if comp is not None else _opaque(v)
            )
        return out
    if t == "CHOICE":
        name, v = val
        comp = obj._cont[name] if name in obj._cont else None  # noqa: SIM401
        return [
            name,
            value_to_json(comp, v, ran_function, deadline) if comp is not None else _opaque(v),
        ]
    if t in _CONSTRUCTED_OF:
        if obj._name == "protocolIEs" or _semantic_name(obj) == "ProtocolIE-Container":
            ran_function = _function_of_ies(val) or ran_function
        return [value_to_json(obj._cont, v, ran_function, deadline) for v in val]
    if t == "OPEN_TYPE":
        if isinstance(val, tuple) and len(val) == 2 and val[0] in codec.E2AP_TYPES:
            inner = codec.E2AP_TYPES[val[0]]
            return [val[0], value_to_json(inner, val[1], ran_function, deadline)]
        if isinstance(val, tuple) and len(val) == 2 and isinstance(val[1], bytes | bytearray):
            return bytes(val[1]).hex()  # a value of a procedure / IE octoric does not know
        return _opaque(val)
    if t == "OCTET STRING":
        e2sm = _E2SM_PAYLOADS.get(ran_function or -1, {}).get(_semantic_name(obj))
        if e2sm is not None and val:
            try:
                remaining = max(0.0, deadline - time.monotonic())
                inner_val = codec.decode(e2sm, val, time_limit_s=remaining)
            except E2smDecodeError:
                return val.hex()  # not what the function ID promised: show the bytes
            return [e2sm, value_to_json(codec.asn1_type(e2sm), inner_val, None, deadline)]
        return val.hex()
    if t == "BIT STRING":
        return [_bits_hex(val[0], val[1]), val[1]]
    if t == "NULL":
        return None
    if t == "REAL":
        return real_from_asn(val)
    return val


def _opaque(v: Any) -> Json:
    if isinstance(v, bytes | bytearray):
        return bytes(v).hex()
    return repr(v)


def json_to_value(obj: ASN1Obj, js: Json, path: str = "") -> Any:
    """pycrate value of ASN.1 type ``obj`` from its JSON form (raises ValueError/TypeError)."""
    t = obj.TYPE
    here = path or obj._name
    if t in _CONSTRUCTED_SEQ:
        if not isinstance(js, dict):
            raise TypeError(f"{here}: expected an object")
        out = {}
        for k, v in js.items():
            if k not in obj._cont:
                raise ValueError(f"{here}: no field {k!r}")
            out[k] = json_to_value(obj._cont[k], v, f"{here}.{k}")
        return out
    if t == "CHOICE":
        if not (isinstance(js, list) and len(js) == 2 and isinstance(js[0], str)):
            raise TypeError(f"{here}: expected [alternative, value]")
        if js[0] not in obj._cont:
            raise ValueError(f"{here}: no alternative {js[0]!r}")
        return (js[0], json_to_value(obj._cont[js[0]], js[1], f"{here}.{js[0]}"))
    if t in _CONSTRUCTED_OF:
        if not isinstance(js, list):
            raise TypeError(f"{here}: expected a list")
        return [json_to_value(obj._cont, v, f"{here}[{i}]") for i, v in enumerate(js)]
    if t == "OPEN_TYPE":
        if isinstance(js, str):  # an unknown procedure's / IE's value, kept as bytes
            return ("_unk_000", bytes.fromhex(js))
        if not (isinstance(js, list) and len(js) == 2 and js[0] in codec.E2AP_TYPES):
            raise TypeError(f"{here}: expected [IE type name, value] or hex")
        return (js[0], json_to_value(codec.E2AP_TYPES[js[0]], js[1], f"{here}<{js[0]}>"))
    if t == "OCTET STRING":
        if isinstance(js, list) and len(js) == 2 and js[0] in codec.TYPES:
            inner = codec.asn1_type(js[0])
            return codec.encode(js[0], json_to_value(inner, js[1], js[0]))
        if not isinstance(js, str):
            raise TypeError(f"{here}: expected a hex string")
        return bytes.fromhex(js)
    if t == "BIT STRING":
        if not (isinstance(js, list) and len(js) == 2 and isinstance(js[1], int)):
            raise TypeError(f"{here}: expected [hex, bit-length]")
        return _hex_bits(js[0], js[1])
    if t == "NULL":
        if js is not None:
            raise TypeError(f"{here}: expected null")
        return 0
    if t == "REAL":
        if isinstance(js, bool) or not isinstance(js, int | float):
            raise TypeError(f"{here}: expected a number")
        return real_to_asn(float(js))
    if t == "INTEGER":
        if isinstance(js, bool) or not isinstance(js, int):
            raise TypeError(f"{here}: expected an integer")
        return js
    if t == "BOOLEAN":
        if not isinstance(js, bool):
            raise TypeError(f"{here}: expected true/false")
        return js
    if t == "ENUMERATED" or "String" in t:
        if not isinstance(js, str):
            raise TypeError(f"{here}: expected a string")
        return js
    raise TypeError(f"{here}: unsupported ASN.1 type {t}")


def decode_to_json(type_name: str, data: bytes, variant: str | None = None) -> Json:
    """Decode ``data`` as ``type_name`` (of ``codec.VARIANTS[variant]`` where it has one) and
    return its JSON form."""
    value = codec.decode(type_name, data, variant=variant)
    return value_to_json(codec.asn1_type(type_name, variant), value)


def encode_from_json(type_name: str, js: Json, variant: str | None = None) -> bytes:
    """Encode the JSON form ``js`` of a ``type_name`` value."""
    if type_name not in codec.TYPES:
        raise E2smEncodeError(type_name, "unknown ASN.1 type")
    try:
        value = json_to_value(codec.asn1_type(type_name, variant), js, type_name)
    except E2smEncodeError:
        raise
    except (ValueError, TypeError, KeyError) as e:
        raise E2smEncodeError(type_name, str(e)) from None
    return codec.encode(type_name, value, variant)


def value_to_asn1tools(obj: ASN1Obj, val: Any) -> Any:
    """The asn1tools form of pycrate value ``val`` (BIT STRING = (bytes, nbits), REAL = float,
    NULL = None; the rest is shared). Used to cross-check against asn1tools."""
    t = obj.TYPE
    if t in _CONSTRUCTED_SEQ:
        return {k: value_to_asn1tools(obj._cont[k], v) for k, v in val.items()}
    if t == "CHOICE":
        return (val[0], value_to_asn1tools(obj._cont[val[0]], val[1]))
    if t in _CONSTRUCTED_OF:
        return [value_to_asn1tools(obj._cont, v) for v in val]
    if t == "BIT STRING":
        return (bytes.fromhex(_bits_hex(val[0], val[1])), val[1])
    if t == "REAL":
        return real_from_asn(val)
    if t == "NULL":
        return None
    return val
