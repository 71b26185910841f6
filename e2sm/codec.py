"""The generic aligned-PER codec: octoric's own ASN.1 modules compiled by pycrate.

``decode(type_name, data)`` and ``encode(type_name, value)`` work on pycrate's value model
(SEQUENCE = dict, CHOICE / open type = (name, value), BIT STRING = (int, nbits), OCTET STRING =
bytes, ENUMERATED = str, REAL = (mantissa, base, exponent), NULL = 0). The typed API in
``e2ap``, ``kpm`` and ``rc`` is built on top; nothing outside this package should need it.

Hostile input is bounded three ways: a length limit checked before decoding, a time limit checked
inside pycrate's decoders (every constructed or primitive element checks a deadline), and every
exception pycrate (or Python) raises is turned into ``E2smDecodeError``.

pycrate keeps one shared object per ASN.1 type, so it is neither reentrant nor thread-safe: a
module lock serialises codec calls, and ``_to_per`` of constructed types is wrapped so that
recursive E2SM-RC types (RANParameter-STRUCTURE inside itself) encode correctly. The other
pycrate 0.8.1 fixes below (``fullname`` on recursive types, empty SIZE(0..n) strings, non-DER
REALs) are applied once, at import, to pycrate's classes.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from pycrate_asn1rt import asnobj_basic, asnobj_construct, asnobj_str
from pycrate_asn1rt.asnobj import ASN1CodecPER, ASN1Obj
from pycrate_asn1rt.utils import Charpy

from octoric.e2sm._generated import octoric_asn1 as _gen
from octoric.e2sm.errors import E2smDecodeError, E2smEncodeError

# Bounds for hostile input. The largest PDU octoric expects is a KPM indication with a few
# hundred UEs (tens of kB); 1 MiB leaves two orders of magnitude of headroom.
MAX_PDU_BYTES = 1 << 20
# Per-message wall-clock budget of the generic decoder (pycrate decodes ~1 MB in a few s).
DECODE_TIME_LIMIT_S = 2.0

E2AP_MODULE = _gen.OCTORIC_E2AP
KPM_MODULE = _gen.OCTORIC_E2SM_KPM
KPM_V2_MODULE = _gen.OCTORIC_E2SM_KPM_V2  # the v02.03 header (4-octet TimeStamp)
RC_MODULE = _gen.OCTORIC_E2SM_RC
COMMON_MODULE = _gen.OCTORIC_E2SM_COMMON

_LOCK = threading.RLock()
_deadline: float | None = None


class _DeadlineExceeded(Exception):
    pass


@dataclass
class CodecStats:
    """Counters of the generic codec (bad input gets counted, not just raised)."""

    decoded: int = 0
    decode_errors: int = 0
    encoded: int = 0
    encode_errors: int = 0
    errors_by_type: dict[str, int] = field(default_factory=dict)


STATS = CodecStats()


def _with_deadline(orig: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(orig)
    def _from_per(self: ASN1Obj, char: Charpy) -> Any:
        if _deadline is not None and time.monotonic() > _deadline:
            raise _DeadlineExceeded
        return orig(self, char)

    return _from_per


def _reentrant(orig: Callable[..., Any]) -> Callable[..., Any]:
    # A recursive type reuses the same pycrate object at every depth, and the parent sets the
    # child's _val before calling it: keep a stack of values so each level gets its own back.
    @functools.wraps(orig)
    def _to_per(self: ASN1Obj) -> Any:
        stack: list[Any] = self.__dict__.setdefault("_octoric_val_stack", [])
        stack.append(self._val)
        try:
            return orig(self)
        finally:
            stack.pop()
            if stack:
                self._val = stack[-1]

    return _to_per


def _empty_string_sized(obj: Any) -> bool:
    cs = obj._const_sz
    return bool(ASN1CodecPER.ALIGNED and cs and obj._clen is not None and cs.rdyn and cs.ub < 65536)


def _patch_empty_strings() -> None:
    # X.691: an empty character string adds no octet-aligned field, so no padding follows its
    # length; pycrate 0.8.1 pads anyway (SIZE(0..n) strings of the KPM indication header).
    # asn1tools and srsRAN do not pad, so encode and decode the empty case ourselves.
    cls = asnobj_str._String
    orig_to, orig_from = cls._to_per, cls._from_per

    def _to_per(self: Any) -> Any:
        if self._val == "" and _empty_string_sized(self) and self._const_sz.in_root(0):
            gen: list[Any] = []
            if self._const_sz._ev is not None:
                gen.append((asnobj_str.T_UINT, 0, 1))
                ASN1CodecPER._off[-1] += 1
            gen.extend(ASN1CodecPER.encode_intconst(0, self._const_sz))
            return gen
        return orig_to(self)

    def _from_per(self: Any, char: Charpy) -> Any:
        if _empty_string_sized(self):
            cur, off = char._cur, ASN1CodecPER._off[-1]
            ext = 0
            if self._const_sz._ev is not None:
                ext = char.get_uint(1)
                ASN1CodecPER._off[-1] += 1
            if not ext and ASN1CodecPER.decode_intconst(char, self._const_sz) == 0:
                self._val = ""
                return None
            char._cur, ASN1CodecPER._off[-1] = cur, off
        return orig_from(self, char)

    cls._to_per, cls._from_per = _to_per, _from_per


def _fullname(self: ASN1Obj) -> str:
    # pycrate walks _parent to name an object in error/log messages; a recursive type (E2SM-RC
    # RANParameter-STRUCTURE) is its own ancestor, so the walk never ended and ate all memory.
    name = [self._name]
    seen = {id(self)}
    obj = self
    while obj._parent is not None and id(obj._parent) not in seen and len(name) < 32:
        obj = obj._parent
        seen.add(id(obj))
        name.append(obj._name)
    return ".".join(reversed(name))


def _patch_real() -> None:
    # PER encodes REAL as CER/DER (X.691 clause 15): a binary REAL has base 2 and scaling
    # factor F = 0. pycrate 0.8.1 misreads base 8/16 and F != 0 (wrong values, silently):
    # refuse them instead.
    cls = asnobj_basic.REAL
    orig = cls._decode_cont

    def _decode_cont(self: Any, content: bytes) -> Any:
        if content and content[0] & 0x80 and content[0] & 0x3C:
            raise ValueError("binary REAL with base 8/16 or a scaling factor is not CER/DER")
        return orig(self, content)

    cls._decode_cont = _decode_cont


def _patch_pycrate() -> None:
    if getattr(ASN1Obj, "_octoric_patched", False):
        return
    ASN1Obj.fullname = _fullname
    _patch_empty_strings()
    _patch_real()
    constructed = (
        asnobj_construct.SEQ,
        asnobj_construct.SET,
        asnobj_construct.SEQ_OF,
        asnobj_construct.SET_OF,
        asnobj_construct.CHOICE,
    )
    for cls in constructed:
        cls._to_per = _reentrant(cls._to_per)
        cls._to_per_ws = _reentrant(cls._to_per_ws)
    checked = (
        *constructed,
        asnobj_construct._CONSTRUCT,
        asnobj_construct._CONSTRUCT_OF,
        asnobj_basic.INT,
        asnobj_basic.ENUM,
        asnobj_basic.REAL,
        asnobj_basic.NULL,
        asnobj_basic.BOOL,
        asnobj_str.BIT_STR,
        asnobj_str.OCT_STR,
        asnobj_str._String,
    )
    seen: set[int] = set()
    for cls in checked:
        for name in ("_from_per", "_from_per_ws"):
            fn = cls.__dict__.get(name)
            if fn is not None and id(fn) not in seen:
                wrapped = _with_deadline(fn)
                seen.add(id(wrapped))
                setattr(cls, name, wrapped)
    ASN1Obj._octoric_patched = True


_patch_pycrate()


def _build_registry() -> dict[str, ASN1Obj]:
    reg: dict[str, ASN1Obj] = {}
    for mod in (E2AP_MODULE, COMMON_MODULE, KPM_MODULE, RC_MODULE):
        for name in mod._type_:
            obj = getattr(mod, name.replace("-", "_"), None)
            if obj is not None and (mod is not COMMON_MODULE or name not in reg):
                reg.setdefault(name, obj)
    return reg


TYPES: dict[str, ASN1Obj] = _build_registry()
# Types of a protocol version that differ from the default ones of the same name, by variant
# (``decode(..., variant="kpm-v02.03")``); every other type is the same in that version.
KPM_V2 = "kpm-v02.03"
VARIANTS: dict[str, dict[str, ASN1Obj]] = {
    KPM_V2: {n: getattr(KPM_V2_MODULE, n.replace("-", "_")) for n in KPM_V2_MODULE._type_},
}
E2AP_TYPES: dict[str, ASN1Obj] = {
    n: getattr(E2AP_MODULE, n.replace("-", "_")) for n in E2AP_MODULE._type_
}

# The PDU types the CLI and the public API accept by name.
TOP_LEVEL_TYPES: tuple[str, ...] = (
    "E2AP-PDU",
    *sorted(
        n
        for n in TYPES
        if (n.startswith("E2SM-KPM-") or n.startswith("E2SM-RC-"))
        and "-Format" not in n
        and not n.endswith("-Item")
    ),
)


def asn1_type(type_name: str, variant: str | None = None) -> ASN1Obj:
    obj = _lookup(type_name, variant)
    if obj is None:
        raise KeyError(f"unknown ASN.1 type {type_name!r} (variant {variant})")
    return obj


def _lookup(type_name: str, variant: str | None) -> ASN1Obj | None:
    if variant is not None:
        table = VARIANTS.get(variant)
        if table is None:
            return None
        if type_name in table:
            return table[type_name]
    return TYPES.get(type_name)


def _count_error(type_name: str) -> None:
    STATS.decode_errors += 1
    STATS.errors_by_type[type_name] = STATS.errors_by_type.get(type_name, 0) + 1


def decode(
    type_name: str,
    data: bytes,
    *,
    max_bytes: int = MAX_PDU_BYTES,
    time_limit_s: float | None = DECODE_TIME_LIMIT_S,
    variant: str | None = None,
) -> Any:
    """Decode aligned-PER ``data`` as ``type_name`` (of protocol version ``variant``, see
    ``VARIANTS``); any failure raises ``E2smDecodeError``."""
    global _deadline
    obj = _lookup(type_name, variant)
    if obj is None:
        raise E2smDecodeError(type_name, f"unknown ASN.1 type (variant {variant})")
    if not isinstance(data, bytes | bytearray | memoryview):
        raise E2smDecodeError(type_name, f"expected bytes, got {type(data).__name__}")
    data = bytes(data)
    if not data:
        _count_error(type_name)
        raise E2smDecodeError(type_name, "empty input", "byte 0")
    if len(data) > max_bytes:
        _count_error(type_name)
        raise E2smDecodeError(type_name, f"{len(data)} bytes exceeds the {max_bytes}-byte limit")
    with _LOCK:
        depth = len(ASN1CodecPER._off)
        char = Charpy(data)
        _deadline = None if time_limit_s is None else time.monotonic() + time_limit_s
        try:
            obj.from_aper(char)
            value = obj._val
        except _DeadlineExceeded:
            _count_error(type_name)
            raise E2smDecodeError(
                type_name, f"decoding took longer than {time_limit_s} s", f"byte {char._cur >> 3}"
            ) from None
        except RecursionError:
            _count_error(type_name)
            raise E2smDecodeError(type_name, "nesting too deep", f"byte {char._cur >> 3}") from None
        except Exception as e:  # pycrate raises many types (ASN1Err, IndexError, ...)
            _count_error(type_name)
            raise E2smDecodeError(
                type_name, _describe(e), f"byte {min(char._cur, len(data) * 8) >> 3}"
            ) from None
        finally:
            _deadline = None
            del ASN1CodecPER._off[depth:]
        rest = len(data) - ((char._cur + 7) >> 3)
        if rest > 0:
            _count_error(type_name)
            raise E2smDecodeError(
                type_name, f"{rest} trailing byte(s) after the PDU", f"byte {len(data) - rest}"
            )
        STATS.decoded += 1
        return value


def encode(type_name: str, value: Any, variant: str | None = None) -> bytes:
    """Encode a pycrate-model ``value`` as ``type_name`` (of protocol version ``variant``);
    failures raise ``E2smEncodeError``."""
    obj = _lookup(type_name, variant)
    if obj is None:
        raise E2smEncodeError(type_name, f"unknown ASN.1 type (variant {variant})")
    with _LOCK:
        depth = len(ASN1CodecPER._off)
        try:
            obj.set_val(value)
            out = obj.to_aper()
        except Exception as e:
            STATS.encode_errors += 1
            raise E2smEncodeError(type_name, _describe(e)) from None
        finally:
            del ASN1CodecPER._off[depth:]
    STATS.encoded += 1
    assert isinstance(out, bytes)
    return out


def _describe(e: BaseException) -> str:
    msg = str(e).strip() or type(e).__name__
    # pycrate messages can embed whole values: keep the error one readable line
    msg = " ".join(msg.split())
    return msg if len(msg) <= 300 else msg[:297] + "..."


class AsnDataclass(Protocol):
    """What e2sm's PDU dataclasses offer: their ASN.1 type and a value-tree conversion."""

    ASN_TYPE: str

    def to_asn(self) -> Any: ...


D = TypeVar("D")


def encode_pdu(pdu: AsnDataclass, variant: str | None = None) -> bytes:
    """Aligned-PER bytes of an E2SM dataclass (its ``ASN_TYPE``)."""
    try:
        value = pdu.to_asn()
    except Exception as e:
        raise E2smEncodeError(pdu.ASN_TYPE, f"{type(e).__name__}: {e}") from None
    return encode(pdu.ASN_TYPE, value, variant)


def decode_pdu(cls: type[D], data: bytes, variant: str | None = None) -> D:
    """Decode ``data`` as the E2SM dataclass ``cls`` (its ``ASN_TYPE`` and ``from_asn``)."""
    type_name: str = cls.ASN_TYPE  # type: ignore[attr-defined]
    value = decode(type_name, data, variant=variant)
    try:
        return cls.from_asn(value)  # type: ignore[attr-defined, no-any-return]
    except E2smDecodeError:
        raise
    except Exception as e:
        raise E2smDecodeError(type_name, f"{type(e).__name__}: {e}") from None
