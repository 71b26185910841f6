"""The native KPM Format 3 decoder (``e2sm/native``, Rust, C ABI) behind the same interface as
``fastpath.FastFormat3Decoder``: the same messages decoded to the same ``UeSeries``, the
same refusals (anything it does not handle goes to the Python fast path, which hands it on to
the generic decoder). ``make setup`` builds ``libocto_e2sm.so`` into ``build/lib``; without it
:func:`native_decoder` answers None and callers keep the Python fast path.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from octoric import native_lib
from octoric.e2sm.common import Guami, UeId
from octoric.e2sm.fastpath import FastFormat3Decoder, check_input
from octoric.e2sm.kpm_series import KpmColumns, UeSeries

LIB_NAME = "libocto_e2sm.so"
NTP_UNIX_OFFSET = 2_208_988_800  # seconds from 1900 to 1970 (common.ntp_to_unix)
_ABSENT = (1 << 64) - 1


@dataclass(frozen=True)
class NativeIndication:
    """The RICindication fields the native whole-PDU decode reports."""

    requestor_id: int
    instance_id: int
    ran_function_id: int
    action_id: int
    sn: int | None
    insert: bool
    collect_start: float  # the KPM header's colletStartTime, unix seconds


def library_path() -> Path | None:
    """``$OCTORIC_E2SM_LIB``, ``$OCTORIC_LIB_DIR``, ``<repo>/build/lib``, then beside this file."""
    return native_lib.find(LIB_NAME, __file__, "OCTORIC_E2SM_LIB")


_LIB: ctypes.CDLL | None = None


# (name, argument types, result type) of every function this module calls
_SIGNATURES = (
    ("octo_kpm_f3_decode", [ctypes.c_char_p, ctypes.c_size_t], ctypes.c_int32),
    ("octo_kpm_f3_sizes", [ctypes.c_void_p], None),
    ("octo_kpm_f3_fetch", [ctypes.c_void_p] * 9, None),
    ("octo_kpm_f3_shape", [ctypes.c_void_p], None),
    ("octo_ric_indication_decode", [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_void_p],
     ctypes.c_int32),
)  # fmt: skip


def _lib() -> ctypes.CDLL | None:
    """The library, or None where it is not built or is older than this package (it lacks
    a function: the Python fast path then, until make setup rebuilds it)."""
    global _LIB
    if _LIB is None:
        _LIB = native_lib.load(library_path(), _SIGNATURES)
    return _LIB


class NativeFormat3Decoder:
    """``IndicationDecoder``: native decode, the Python fast path (and generic) as fallback."""

    def __init__(self) -> None:
        lib = _lib()
        if lib is None:
            raise RuntimeError(f"{LIB_NAME} not found (make setup builds it)")
        self.lib = lib
        self.python = FastFormat3Decoder()
        self.native = 0
        self.fallbacks = 0
        self._sizes = np.zeros(5, dtype=np.uint64)
        self._info = np.zeros(8, dtype=np.uint64)
        self._sizes_ptr = self._sizes.ctypes.data
        self._info_ptr = self._info.ctypes.data
        self._shape = np.zeros(4, dtype=np.uint64)
        self._shape_ptr = self._shape.ctypes.data
        self._pool: dict[str, tuple[np.ndarray, int]] = {}
        self._names: dict[bytes, str] = {}
        self._guamis: dict[tuple[bytes, int, int, int], Guami] = {}
        self._ues: dict[tuple[object, ...], UeId] = {}
        # whole UE lists by their raw identity columns: a gNB names the same UEs in the same
        # order report after report, so the per-UE work below runs once per UE set
        self._lists: dict[tuple[object, ...], list[UeId | None]] = {}

    def decode_message(self, message: bytes) -> list[UeSeries]:
        check_input(message, "E2SM-KPM-IndicationMessage")
        data = bytes(message)
        if self.lib.octo_kpm_f3_decode(data, len(data)) != 0:
            self.fallbacks += 1
            return self.python.decode_message(data)
        self.native += 1
        return self._series(*self._fetch())

    def decode_columns(
        self, message: bytes, collect_start: float, granularity_ms: int | None
    ) -> KpmColumns | None:
        """The (UE x metric x granule) columns straight from the decoder's buffer when every
        UE reports the same metrics over the same number of granules (what gNBs send); None
        otherwise (the caller stacks ``decode_message``'s series)."""
        check_input(message, "E2SM-KPM-IndicationMessage")
        data = bytes(message)
        if self.lib.octo_kpm_f3_decode(data, len(data)) != 0:
            return None
        return self._columns(collect_start, granularity_ms)

    def decode_ric_indication(
        self, pdu: bytes, granularity_ms: int | None = None
    ) -> tuple[NativeIndication, KpmColumns] | None:
        """A whole E2AP RICindication carrying KPM Format 3 in one native call (envelope,
        the time-stamp-only header, the message): its fields and the columns. None when the
        PDU is not the usual one (a call process ID, header options, another format, a
        non-uniform message, anything malformed): the caller takes the Python path
        (``envelope.decode_ric_indication`` + ``parse_indication``), which gives the same
        answer for what this reads and decides everything else."""
        data = bytes(pdu)
        if self.lib.octo_ric_indication_decode(data, len(data), self._info_ptr) != 0:
            return None
        requestor, instance, rfid, action, sn, insert, ntp, _ = self._info.tolist()
        start = (ntp >> 32) - NTP_UNIX_OFFSET + (ntp & 0xFFFFFFFF) / (1 << 32)
        cols = self._columns(start, granularity_ms)
        if cols is None:
            return None
        ind = NativeIndication(requestor, instance, rfid, action,
                               None if sn == _ABSENT else sn, bool(insert), start)  # fmt: skip
        return ind, cols

    def _columns(self, collect_start: float, granularity_ms: int | None) -> KpmColumns | None:
        """``decode_columns`` of the message the library decoded last."""
        # uniform: every UE the same metrics (none twice: the series path renames those) and
        # records; checked by the library
        self.lib.octo_kpm_f3_shape(self._shape_ptr)
        uniform, nm, n_rec, gp1 = self._shape.tolist()
        if not uniform:
            return None
        f = self._fetch()
        n, refs, values, names = f[0], f[6], f[7], f[8]
        self.native += 1
        gp = granularity_ms
        if gp is None:
            gp = gp1 - 1 if gp1 > 1 else None
        step = (gp or 0) / 1000.0
        timestamps = collect_start + step * np.arange(n_rec, dtype=np.float64)
        metrics = [names[k] for k in refs[:nm].tolist()]
        return KpmColumns(
            self._ue_ids(*f[:6]), metrics, values[: n * nm * n_rec].reshape(n, nm, n_rec),
            timestamps, gp, collect_start,
        )  # fmt: skip

    def _scratch(self, name: str, n: int, dtype: type) -> tuple[np.ndarray, int]:
        """A reusable array of ``n`` elements (grown when needed) and its data pointer."""
        have = self._pool.get(name)
        if have is None or have[0].size < n:
            arr: np.ndarray = np.empty(max(n, 64) * 2, dtype=dtype)
            have = self._pool[name] = (arr, arr.ctypes.data)
        return have[0][:n], have[1]

    def _fetch(
        self,
    ) -> tuple[
        int, np.ndarray, np.ndarray, np.ndarray, bytes, bytes, np.ndarray, np.ndarray, list[str]
    ]:
        self.lib.octo_kpm_f3_sizes(self._sizes_ptr)
        n, nv, nr, nn, nb = self._sizes.tolist()
        # scratch arrays are reused (read before the next decode, never handed out); the
        # values are fresh: they leave in KpmColumns
        u64, p_u64 = self._scratch("u64", n * 6, np.uint64)
        meta, p_meta = self._scratch("meta", n * 4, np.uint32)
        f1ap, p_f1ap = self._scratch("f1ap", n * 4, np.uint64)
        plmn, p_plmn = self._scratch("plmn", n * 3, np.uint8)
        ran, p_ran = self._scratch("ran", n * 8, np.uint8)
        refs, p_refs = self._scratch("refs", nr, np.uint32)
        ends, p_ends = self._scratch("ends", nn, np.uint64)
        blob, p_blob = self._scratch("blob", nb, np.uint8)
        f1ap[:] = 0  # fetch writes only the IDs a UE has; the identity key reads them all
        ran[:] = 0
        values = np.empty(max(nv, 1), dtype=np.float64)
        self.lib.octo_kpm_f3_fetch(
            p_u64, p_meta, p_f1ap, p_plmn, p_ran, p_refs, values.ctypes.data, p_ends, p_blob
        )
        raw = blob.tobytes()
        names = []
        start = 0
        for end in ends[:nn].tolist():
            b = raw[start:end]
            s = self._names.get(b)
            if s is None:
                if len(self._names) >= 4096:  # bounded: names come from the peer
                    self._names.clear()
                s = self._names[b] = b.decode("ascii")
            names.append(s)
            start = end
        return n, u64, meta, f1ap, plmn.tobytes(), ran.tobytes(), refs, values, names

    def _ue_ids(
        self, n: int, u64: np.ndarray, meta: np.ndarray, f1ap: np.ndarray, pb: bytes, rb: bytes
    ) -> list[UeId | None]:
        """The UEs of a decoded message. The same list object is returned for the same
        identity columns: callers read it, never change it."""
        ids = u64.reshape(n, 6)[:, :4]
        lkey = (n, ids.tobytes(), meta.reshape(n, 4)[:, :3].tobytes(), f1ap.tobytes(), pb, rb)
        hit = self._lists.get(lkey)
        if hit is not None:
            return hit
        ul, ml, fl = u64.tolist(), meta.tolist(), f1ap.tolist()
        out: list[UeId | None] = []
        cache = self._ues
        for i in range(n):
            amf, region, aset, ptr = ul[i * 6 : i * 6 + 4]
            du, nf, has_ran = ml[i * 4 : i * 4 + 3]
            f1 = tuple(fl[i * 4 : i * 4 + nf])
            ran_id = rb[i * 8 : i * 8 + 8] if has_ran else None
            gkey = (pb[i * 3 : i * 3 + 3], region, aset, ptr)
            key = (du, amf, gkey, f1, ran_id)
            ue = cache.get(key)
            if ue is None:
                if du:
                    ue = UeId("gNB-DU-UEID", f1ap_ids=f1, ran_ueid=ran_id)
                else:
                    g = self._guamis.get(gkey)
                    if g is None:
                        if len(self._guamis) >= 1024:
                            self._guamis.clear()
                        g = self._guamis[gkey] = Guami(*gkey)
                    ue = UeId("gNB-UEID", amf, g, f1, ran_id, None)
                if len(cache) >= 65536:  # bounded: identities come from the peer
                    cache.clear()
                cache[key] = ue
            out.append(ue)
        if len(self._lists) >= 256:  # bounded: identities come from the peer
            self._lists.clear()
        self._lists[lkey] = out
        return out

    def _series(
        self, n: int, u64: np.ndarray, meta: np.ndarray, f1ap: np.ndarray, pb: bytes, rb: bytes,
        refs: np.ndarray, values: np.ndarray, names: list[str],
    ) -> list[UeSeries]:  # fmt: skip
        ues = self._ue_ids(n, u64, meta, f1ap, pb, rb)
        ul, ml = u64.tolist(), meta.tolist()
        out = []
        vi = ri = 0
        for i in range(n):
            n_rec, gp1 = ul[i * 6 + 4 : i * 6 + 6]
            nm = ml[i * 4 + 3]
            metrics = [names[k] for k in refs[ri : ri + nm].tolist()]
            ri += nm
            arr = values[vi : vi + nm * n_rec].reshape(nm, n_rec)
            vi += nm * n_rec
            out.append(UeSeries(ues[i], metrics, arr, None if gp1 == 0 else gp1 - 1))
        return out


def native_decoder() -> NativeFormat3Decoder | None:
    """The native decoder, or None where its library is not built (or is stale)."""
    return None if _lib() is None else NativeFormat3Decoder()
