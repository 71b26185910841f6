"""The OCC xApp's native hot path (``xapps/occ/native``, Rust, ``libocto_occ.so``; issue #44).

One ``NativeOcc`` handle holds an xApp's engine state and its feedback sender. octoric's RMR
library hands each KPM indication to it in RMR's receive thread (``rmr_octo_set_tap``): decode,
engine, feedback datagrams and the 30500 report happen there, without the interpreter. What
it declines (anything the Python path treats other than the usual way: see ``fast.rs``) is
queued for the xApp's Python handler as before, which runs on the same state through
``NativeEngine`` (``OccEngine``'s API) and ``NativeFeedback`` (``FeedbackSender``'s). Python
keeps control, REST, SDL checkpoints and metrics: ``NativeOcc.take`` hands it what the native
path did (counters, latencies, each node's latest results) in batches.

``OCTORIC_OCC_NATIVE=0`` keeps the xApp on the Python path (the A/B switch); a library that is
not built, or older than this module, does too (``available``).
"""

from __future__ import annotations

import ctypes
import json
import logging
import math
import os
import socket
import threading
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from octoric import native_lib
from octoric.contracts.schemas import ABW_SCHEMA, VERSION
from octoric.e2sm import kpm
from octoric.xapps.occ import kernel as K
from octoric.xapps.occ.batch import AbwBatch, EngineStats
from octoric.xapps.occ.config import OccConfig
from octoric.xapps.occ.engine import GRANULE_MS, params_vector
from octoric.xapps.occ.errors import OccInputError
from octoric.xapps.occ.feedback import FeedbackSender, UeTarget
from octoric.xapps.occ.flows import Flow
from octoric.xapps.occ.metrics import BLOCK_ROWS, build_block, carry_mcs, check_unique, ue_id_array

log = logging.getLogger("xapps.occ.native")
ENV = "OCTORIC_OCC_NATIVE"
LIB_NAME = "libocto_occ.so"
LATENCY_CAP = 65536  # latencies taken per call (the rest counted, not kept)
# UEs per lock in a checkpoint's export (~15 kB of state each): ~50 us of the indication
# path's time at most, against 3-9 ms for 300 UEs at once (loop bench 3x100@1ms, 2026-11-29)
EXPORT_CHUNK = 16

_c = ctypes
_P = _c.c_void_p
_I64, _U64, _F64, _INT = _c.c_int64, _c.c_uint64, _c.c_double, _c.c_int
_SIGNATURES: tuple[tuple[str, list[Any], Any], ...] = (
    ("occ_new", [_P, _c.c_size_t, _c.c_size_t, _c.c_size_t, _I64, _F64, _c.c_uint16, _I64, _F64,
                 _I64, _INT, _c.c_char_p, _c.c_size_t, _c.c_char_p, _I64, _F64, _F64], _P),
    ("occ_free", [_P], None),
    ("occ_reset_engine", [_P, _P, _c.c_size_t, _c.c_size_t, _c.c_size_t, _I64, _F64], _INT),
    ("occ_configure", [_P, _I64, _F64, _I64, _INT, _F64, _F64], None),
    ("occ_set_reporter", [_P, _P, _P, _P, _P, _P, _INT, _INT], None),
    ("occ_rmr_tap_fn", [], _P),
    ("occ_capture_reports", [_P], None),
    ("occ_captured_report", [_P, _c.c_char_p, _c.c_size_t], _c.c_size_t),
    ("occ_handle", [_P, _c.c_char_p, _c.c_size_t, _c.c_char_p, _INT], _INT),
    ("occ_ingest", [_P, _P, _c.c_size_t, _I64, _P, _c.c_size_t] + [_P] * 8
     + [_P, _c.c_size_t, _P], _INT),
    ("occ_handover", [_P, _I64, _INT, _I64, _INT], None),
    ("occ_latest", [_P, _I64, _P], _INT),
    ("occ_last_r", [_P, _I64], _F64),
    ("occ_expire", [_P, _I64, _P, _c.c_size_t], _c.c_size_t),
    ("occ_ue_ids", [_P, _P, _c.c_size_t], _c.c_size_t),
    ("occ_stats", [_P, _P], None),
    ("occ_export_ues", [_P, _c.c_size_t, _P, _P] + [_P] * 9, _c.c_size_t),
    ("occ_import", [_P, _I64] + [_P] * 9, None),
    ("occ_continue", [_P, _c.c_char_p, _I64, _I64, _P], _I64),
    ("occ_next_t0", [_P, _c.c_char_p, _P], _I64),
    ("occ_set_whole_second", [_P, _c.c_char_p, _INT], None),
    ("occ_fb_add", [_P, _c.c_char_p, _I64, _c.c_char_p, _c.c_uint16, _INT, _INT, _U64, _P,
                    _c.c_size_t, _c.c_uint32, _INT, _F64, _INT, _INT, _U64, _I64], _INT),
    ("occ_fb_remove", [_P, _c.c_char_p], _INT),
    ("occ_fb_forget", [_P, _I64], None),
    ("occ_fb_update", [_P, _I64, _F64, _INT, _INT, _U64, _I64], None),
    ("occ_fb_update_batch", [_P, _P, _c.c_size_t, _P, _P, _P, _P, _I64], None),
    ("occ_fb_tick", [_P], _F64),
    ("occ_fb_counters", [_P, _c.c_char_p, _c.c_size_t], _c.c_size_t),
    ("occ_take", [_P, _c.c_char_p, _c.c_size_t, _P, _c.c_size_t, _P], _c.c_size_t),
    ("occ_latest_sizes", [_P, _c.c_char_p, _P, _c.c_char_p, _c.c_size_t], None),
    ("occ_latest_fetch", [_P, _c.c_char_p, _c.c_size_t, _c.c_size_t, _c.c_size_t] + [_P] * 14,
     _INT),
)  # fmt: skip

_LIB: ctypes.CDLL | None = None
_LIB_TRIED = False


def library_path() -> Path | None:
    """``$OCTORIC_OCC_LIB``, ``$OCTORIC_LIB_DIR``, ``<repo>/build/lib`` (``make setup`` builds it
    there), then beside this file (the wheel carries it there)."""
    return native_lib.find(LIB_NAME, __file__, "OCTORIC_OCC_LIB")


def _lib() -> ctypes.CDLL | None:
    global _LIB, _LIB_TRIED
    if _LIB_TRIED:
        return _LIB
    _LIB_TRIED = True
    path = library_path()
    _LIB = native_lib.load(path, _SIGNATURES)
    if path is not None and _LIB is None:
        log.warning("%s is older than this package (make setup rebuilds it): Python path", path)
    return _LIB


def available() -> bool:
    """The native path can run: the library is built and not switched off (``ENV``)."""
    return os.environ.get(ENV, "1") != "0" and _lib() is not None


def _ptr(a: npt.NDArray[Any]) -> int:
    return int(a.ctypes.data)


def pack_guami(g: str | None) -> int:
    """``<PLMN hex>:<region>:<set>:<pointer>`` as the native side's integer (0: none)."""
    if g is None:
        return 0
    plmn, region, set_, pointer = g.split(":")
    return (int(plmn, 16) << 32) | (int(region) << 16) | (int(set_) << 6) | int(pointer)


def guami_of(v: int) -> str:
    return f"{v >> 32:06x}:{(v >> 16) & 0xFFFF}:{(v >> 6) & 0x3FF}:{v & 0x3F}"


@dataclass
class NodeLatest:
    """A node's latest indication the native path handled (``NativeOcc.latest``)."""

    batch: AbwBatch
    guamis: list[str | None]
    t0_ms: int
    sn: int | None
    at: float
    metrics: dict[str, npt.NDArray[np.float64]]


class NativeOcc:
    """One handle: engine state, feedback sender, the indication path's settings."""

    def __init__(self, config: OccConfig, shown: tuple[str, ...] = ()) -> None:
        lib = _lib()
        if lib is None:
            raise RuntimeError(f"{LIB_NAME} is not built (make setup)")
        self.lib = lib
        self.config = config
        par = params_vector(config)
        names = "\n".join((*BLOCK_ROWS, *shown)).encode()
        self._par = par  # kept: the handle copies it, but keep the buffer alive over the call
        h = lib.occ_new(
            _ptr(par), K.N_P, config.history_ms, config.window_l_ms, config.expire_ms,
            config.prb_total_dl, kpm.RAN_FUNCTION_ID, 1, 5000.0, 2, 1, names, len(BLOCK_ROWS),
            ABW_SCHEMA.encode(), VERSION, 0.02, 0.05,
        )  # fmt: skip
        if not h:
            raise RuntimeError("occ_new refused the configuration")
        self.h: int = h
        self.settings: tuple[int, float, int, bool] = (1, 5000.0, 2, True)
        self.policy: tuple[float, float] = (0.02, 0.05)
        self._tap: tuple[int, int] | None = None  # (RMR context, message type) while set
        self._lock = threading.Lock()  # take(): one taker at a time

    def reset_engine(self, config: OccConfig) -> None:
        """A fresh engine for a new configuration (flows and the node clocks stay)."""
        par = params_vector(config)
        rc = self.lib.occ_reset_engine(self.h, _ptr(par), K.N_P, config.history_ms,
                                       config.window_l_ms, config.expire_ms,
                                       config.prb_total_dl)  # fmt: skip
        if rc != 0:
            raise RuntimeError("occ_reset_engine refused the configuration")
        self.config = config

    def configure(self, granularity_ms: int, max_clock_ahead_ms: float, max_time_overlap_ms: int,
                  publish_reports: bool) -> None:  # fmt: skip
        """The indication path's settings (the xApp's controls)."""
        self.settings = (granularity_ms, max_clock_ahead_ms, max_time_overlap_ms, publish_reports)
        self._push()

    def set_policy(self, min_change: float, max_interval_s: float) -> None:
        """The feedback policy (``FeedbackSender.set_policy``)."""
        self.policy = (min_change, max_interval_s)
        self._push()

    def _push(self) -> None:
        g, ahead, overlap, publish = self.settings
        self.lib.occ_configure(self.h, g, ahead, overlap, int(publish), *self.policy)

    # --- RMR ---------------------------------------------------------------------------------
    def attach(self, rmr_lib: ctypes.CDLL, ctx: int, mtype: int, report_mtype: int) -> bool:
        """Take ``mtype`` messages in RMR's receive thread on context ``ctx`` of ``rmr_lib``
        (octoric's RMR: ``rmr_octo_set_tap``); reports go out through the same library. False
        where the library has no taps (another RMR build): the Python path then."""
        if not hasattr(rmr_lib, "rmr_octo_set_tap"):
            return False
        names = ("rmr_alloc_msg", "rmr_send_msg", "rmr_free_msg", "rmr_bytes2meid")
        fns = [ctypes.cast(getattr(rmr_lib, n), ctypes.c_void_p).value for n in names]
        self.lib.occ_set_reporter(self.h, ctx, *fns, report_mtype, 2)
        set_tap = rmr_lib.rmr_octo_set_tap
        set_tap.argtypes = [_P, _INT, _P, _P]
        set_tap.restype = _INT
        if set_tap(ctx, mtype, self.lib.occ_rmr_tap_fn(), self.h) != 0:
            return False
        self._tap = (ctx, mtype)
        self._rmr = rmr_lib
        return True

    def capture_reports(self) -> None:
        """Tests: keep the 30500 reports here instead of sending them (``captured_reports``)."""
        self.lib.occ_capture_reports(self.h)

    def captured_reports(self) -> list[bytes]:
        out: list[bytes] = []
        cap = 1 << 16
        while True:
            buf = ctypes.create_string_buffer(cap)
            n = self.lib.occ_captured_report(self.h, buf, cap)
            if n == 0:
                return out
            if n > cap:
                cap = n
                continue
            out.append(buf.raw[:n])

    def detach(self) -> None:
        if self._tap is not None:
            ctx, mtype = self._tap
            self._rmr.rmr_octo_set_tap(ctx, mtype, None, None)
            self._tap = None

    def handle(self, payload: bytes, meid: str, sub_id: int) -> bool:
        """The native path on one payload, as RMR's tap runs it: True handled, False declined."""
        rc: int = self.lib.occ_handle(self.h, payload, len(payload), meid.encode(), sub_id)
        return rc == 0

    # --- the node clocks ----------------------------------------------------------------------
    def continue_(self, meid: str, t0_ms: int, span_ms: int) -> tuple[int, bool]:
        shifted = ctypes.c_int(0)
        t = self.lib.occ_continue(self.h, meid.encode(), t0_ms, span_ms, ctypes.byref(shifted))
        return int(t), bool(shifted.value)

    def next_t0(self, meid: str) -> int | None:
        found = ctypes.c_int(0)
        v = self.lib.occ_next_t0(self.h, meid.encode(), ctypes.byref(found))
        return int(v) if found.value else None

    def set_whole_second(self, meid: str, whole: bool) -> None:
        """Node ``meid`` announces E2SM-KPM v02.03 (its stamps have whole seconds)."""
        self.lib.occ_set_whole_second(self.h, meid.encode(), int(whole))

    # --- what the native path did -----------------------------------------------------------------
    def take(self) -> tuple[dict[str, Any], npt.NDArray[np.uint64]]:
        """Counters since the last take (JSON object: indications, ue_samples, by_instance,
        reports_*, declined, fresh: the nodes with a new latest result) and the indications'
        handling times (ns)."""
        with self._lock:
            lat = np.empty(LATENCY_CAP, dtype=np.uint64)
            n_lat = ctypes.c_size_t(0)
            cap = 4096
            while True:
                buf = ctypes.create_string_buffer(cap)
                n = self.lib.occ_take(self.h, buf, cap, _ptr(lat), LATENCY_CAP,
                                      ctypes.byref(n_lat))  # fmt: skip
                if n < cap:
                    return json.loads(buf.value), lat[: n_lat.value]
                cap = n + 1

    def latest(self, meid: str) -> NodeLatest | None:
        """Node ``meid``'s latest handled indication (marks it taken)."""
        for _ in range(3):
            sizes = np.zeros(4, dtype=np.uint64)
            names = ctypes.create_string_buffer(4096)
            self.lib.occ_latest_sizes(self.h, meid.encode(), _ptr(sizes), names, 4096)
            found, n, g, m = (int(x) for x in sizes)
            if not found:
                return None
            ues = np.empty(n, dtype=np.int64)
            gm = np.empty(n, dtype=np.uint64)
            has_g = np.empty(n, dtype=np.uint8)
            target, b, cp = (np.empty((n, g)) for _ in range(3))
            last = np.empty((n, K.N_O))
            state = np.empty(n, dtype=np.int8)
            ho, outage, fallback = (np.empty(n, dtype=np.uint8) for _ in range(3))
            metrics = np.empty((m, n, g))
            info = np.empty(3, dtype=np.int64)
            at = ctypes.c_double(0.0)
            rc = self.lib.occ_latest_fetch(
                self.h, meid.encode(), n, g, m, _ptr(ues), _ptr(gm), _ptr(has_g), _ptr(target),
                _ptr(b), _ptr(cp), _ptr(last), _ptr(state), _ptr(ho), _ptr(outage),
                _ptr(fallback), _ptr(metrics), _ptr(info), ctypes.addressof(at),
            )  # fmt: skip
            if rc != 0:
                continue
            batch = _batch(ues, int(info[0]), target, b, cp, last, state, ho, outage, fallback)
            guamis = [guami_of(int(v)) if h else None for v, h in zip(gm, has_g, strict=True)]
            labels = names.value.decode().split("\n")
            return NodeLatest(batch, guamis, int(info[1]), None if info[2] < 0 else int(info[2]),
                              at.value, {k: metrics[i] for i, k in enumerate(labels)})  # fmt: skip
        return None

    def close(self) -> None:
        self.detach()
        if self.h:
            self.lib.occ_free(self.h)
            self.h = 0


def _batch(ues: npt.NDArray[np.int64], t_ms: int, target: npt.NDArray[np.float64],
           b: npt.NDArray[np.float64], cp: npt.NDArray[np.float64],
           last: npt.NDArray[np.float64], state: npt.NDArray[np.int8],
           ho: npt.NDArray[np.uint8], outage: npt.NDArray[np.uint8],
           fallback: npt.NDArray[np.uint8]) -> AbwBatch:  # fmt: skip
    return AbwBatch(
        ue_ids=ues, t_ms=t_ms, target_bps=target[:, -1].copy(),
        cp_bps=last[:, K.O_CP].copy(), frame_abw_bps=last[:, K.O_B].copy(),
        fair_share_bps=last[:, K.O_CF].copy(), cp_prime_bps=last[:, K.O_CPP].copy(),
        frame_interval_ms=last[:, K.O_D].astype(np.int64), frame_aware=last[:, K.O_AWARE] > 0.5,
        bottleneck=state, handover=ho.astype(np.bool_), fallback=fallback.astype(np.bool_),
        outage=outage.astype(np.bool_), target_bps_granules=target, frame_abw_bps_granules=b,
        cp_bps_granules=cp,
    )  # fmt: skip


class NativeEngine:
    """``OccEngine``'s API on a handle's native engine (the xApp's Python path uses it for
    what the native path declines; the differential tests compare it with ``OccEngine``)."""

    def __init__(self, occ: NativeOcc, config: OccConfig | None = None) -> None:
        self.occ = occ
        if config is not None and config != occ.config:
            occ.reset_engine(config)
        self.config = occ.config
        self._stats = EngineStats()
        self._lib, self._h = occ.lib, occ.h

    @property
    def stats(self) -> EngineStats:
        v = np.zeros(7, dtype=np.uint64)
        self._lib.occ_stats(self._h, _ptr(v))
        s = self._stats
        s.batches, s.ue_samples, s.ues_created, s.ues_expired, s.handover_events = (
            int(x) for x in v[:5]
        )
        return s

    @property
    def ue_ids(self) -> list[int]:
        cap = 1024
        while True:
            out = np.empty(cap, dtype=np.int64)
            n = self._lib.occ_ue_ids(self._h, _ptr(out), cap)
            if n <= cap:
                return sorted(out[:n].tolist())
            cap = n + 64

    def _last_r_of(self, ue: int) -> float:
        return float(self._lib.occ_last_r(self._h, int(ue)))

    def expire(self, now_ms: int) -> list[int]:
        out = np.empty(4096, dtype=np.int64)
        n = self._lib.occ_expire(self._h, int(now_ms), _ptr(out), 4096)
        gone: list[int] = out[: min(n, 4096)].tolist()
        return gone

    def on_handover(self, ue_id: int, start: bool, t_ms: int | None = None) -> None:
        self._lib.occ_handover(self._h, int(ue_id), int(start), int(t_ms or 0),
                               int(t_ms is not None))  # fmt: skip

    def latest(self, ue_id: int) -> tuple[float, bool] | None:
        out = np.zeros(2)
        if not self._lib.occ_latest(self._h, int(ue_id), _ptr(out)):
            return None
        return float(out[0]), bool(out[1] > 0.5)

    def _shapes(self) -> dict[str, tuple[int, ...]]:
        h, lw = self.config.history_ms, self.config.window_l_ms
        return {"ist": (K.N_I,), "fst": (K.N_F,), "ring_u": (h,), "ring_a": (h,), "ring_c": (h,),
                "dq_t": (3, lw), "dq_v": (3, lw), "flags": (2,), "last_out": (2,)}  # fmt: skip

    _INTS = ("ist", "ring_c", "dq_t", "flags")

    def export_states(self) -> tuple[list[int], dict[str, npt.NDArray[np.generic]]]:
        """Every UE's state (the checkpoint's), ``EXPORT_CHUNK`` UEs per lock of the native
        state: the indication path waits at most one chunk's copy. Each UE's row is one
        moment's; a UE gone between chunks is left out, one that came waits for the next
        checkpoint."""
        ids = np.asarray(self.ue_ids, dtype=np.int64)
        found, arrs = self._export(ids)
        return ids[found].tolist(), {k: a[found] for k, a in arrs.items()}

    def export_ue(self, ue_id: int) -> dict[str, npt.NDArray[np.generic]] | None:
        found, arrs = self._export(np.asarray([int(ue_id)], dtype=np.int64))
        return {k: a[0] for k, a in arrs.items()} if found[0] else None

    def _export(self, ids: npt.NDArray[np.int64]
                ) -> tuple[npt.NDArray[np.bool_], dict[str, npt.NDArray[np.generic]]]:  # fmt: skip
        """The rows of ``ids`` (``occ_export_ues``), and which of them the engine knows."""
        shapes = self._shapes()
        n = len(ids)
        found = np.zeros(n, dtype=np.uint8)
        # np.full writes every page now, so they fault in here and not under the native lock
        arrs: dict[str, npt.NDArray[np.generic]] = {
            k: np.full((n, *s), 0, dtype=np.int64 if k in self._INTS else np.float64)
            for k, s in shapes.items()
        }
        for at in range(0, n, EXPORT_CHUNK):
            m = min(EXPORT_CHUNK, n - at)
            self._lib.occ_export_ues(self._h, m, _ptr(ids[at:]), _ptr(found[at:]),
                                     *(_ptr(arrs[k][at:]) for k in shapes))  # fmt: skip
        return found.astype(bool), arrs

    def import_ue(self, ue_id: int, state: Mapping[str, npt.NDArray[np.generic]]) -> None:
        ue = int(ue_id)
        arrs = {}
        for k, shape in self._shapes().items():
            a = state.get(k)
            if a is None or np.asarray(a).shape != shape:
                raise OccInputError("state", f"checkpoint field {k!r} missing or misshaped", [ue])
            dt = np.int64 if k in self._INTS else np.float64
            arrs[k] = np.ascontiguousarray(np.asarray(a), dtype=dt)
        self._lib.occ_import(self._h, ue, *(_ptr(arrs[k]) for k in self._shapes()))

    def ingest(self, ue_ids: object, t0_ms: int, metrics: Mapping[str, object],
               granule_ms: int = GRANULE_MS) -> AbwBatch:  # fmt: skip
        """``OccEngine.ingest``: the same checks in the same order, then the native kernel."""
        try:
            if granule_ms != GRANULE_MS:
                why = f"granule must be {GRANULE_MS} ms, got {granule_ms}"
                raise OccInputError("granularity", why)
            if isinstance(t0_ms, bool) or not isinstance(t0_ms, int | np.integer) or t0_ms < 0:
                raise OccInputError("time", f"t0_ms must be an integer >= 0, got {t0_ms!r}")
            ids = np.ascontiguousarray(ue_id_array(ue_ids), dtype=np.int64)
            check_unique(ids)
            metrics, carried = carry_mcs(ids, metrics, self._last_r_of)
            blk = build_block(ids, metrics, self.config.prb_total_dl)
        except OccInputError as e:
            self._stats.reject(e.reason)
            raise
        n, g = blk.shape[1], blk.shape[2]
        target, b, cp = (np.empty((n, g)) for _ in range(3))
        last = np.empty((n, K.N_O))
        state = np.empty(n, dtype=np.int8)
        ho, outage, fallback = (np.empty(n, dtype=np.uint8) for _ in range(3))
        bad = np.empty(n, dtype=np.int64)
        n_bad = ctypes.c_size_t(0)
        rc = self._lib.occ_ingest(
            self._h, _ptr(ids), n, int(t0_ms), _ptr(blk), g, _ptr(target), _ptr(b), _ptr(cp),
            _ptr(last), _ptr(state), _ptr(ho), _ptr(outage), _ptr(fallback), _ptr(bad), n,
            ctypes.byref(n_bad),
        )  # fmt: skip
        if rc == 1:
            self._stats.reject("time")
            raise OccInputError(
                "time", f"t0_ms={int(t0_ms)} is not after the latest sample of "
                f"{n_bad.value} UE(s)", bad[: n_bad.value].tolist(),
            )  # fmt: skip
        if rc != 0:
            raise OccInputError("internal", "the native engine refused the batch's arguments")
        self._stats.mcs_carried += carried
        return _batch(ids.copy(), int(t0_ms) + g - 1, target, b, cp, last, state, ho, outage,
                      fallback)  # fmt: skip


class NativeFeedback:
    """``FeedbackSender``'s API on a handle's native sender. The registry (``flows``,
    ``version``) is mirrored here for REST; sends, the policy and the targets are native. A
    flow's host name is resolved when it is added (the native side sends to addresses)."""

    def __init__(
        self, occ: NativeOcc, min_change: float = 0.02, max_interval_s: float = 0.05
    ) -> None:
        self.occ = occ
        self._lib, self._h = occ.lib, occ.h
        self.min_change, self.max_interval_s = min_change, max_interval_s
        self.flows: dict[str, Flow] = {}
        self.version = 0
        self.counters_py: Counter[str] = Counter()  # what Python itself refused
        self._lock = threading.Lock()
        self.lookup: Callable[[int], UeTarget | None] | None = None
        self.timer_running = False
        self.set_policy(min_change, max_interval_s)

    @property
    def counters(self) -> Counter[str]:
        cap = 4096
        while True:
            buf = ctypes.create_string_buffer(cap)
            n = self._lib.occ_fb_counters(self._h, buf, cap)
            if n < cap:
                return Counter(json.loads(buf.value)) + self.counters_py
            cap = n + 1

    def add(self, flow: Flow) -> None:
        known = self.lookup(flow.ue) if self.lookup is not None else None
        try:
            ip = socket.getaddrinfo(flow.host, flow.port, type=socket.SOCK_DGRAM)[0][4][0]
        except OSError:
            ip = None
        with self._lock:
            self.flows[flow.id] = flow
            self.version += 1
            if ip is None:  # kept (it may resolve later: re-register it), never sent to
                self.counters_py["unresolved_host"] += 1
                return
            ssrcs = np.asarray(flow.ssrcs, dtype=np.uint32)
            k = known if known is not None and math.isfinite(known.target_bps) else None
            self._lib.occ_fb_add(
                self._h, flow.id.encode(), flow.ue, str(ip).encode(), flow.port,
                int(flow.format == "remb"), int(flow.guami is not None), pack_guami(flow.guami),
                _ptr(ssrcs), len(flow.ssrcs), flow.sender_ssrc, int(k is not None),
                k.target_bps if k else 0.0, int(k.fallback) if k else 0,
                int(k is not None and k.guami is not None), pack_guami(k.guami if k else None),
                k.t_ms if k else 0,
            )  # fmt: skip

    def adopt(self, old: FeedbackSender) -> None:
        """Take over ``old``'s flows and targets (each flow hears its UE's target at once) and
        retire it (its timer stops)."""
        with old._lock:
            flows = list(old.flows.values())
            targets = dict(old.targets)
        self.set_policy(old.min_change, old.max_interval_s)
        for t_ue, t in targets.items():
            self.update(t_ue, t)
        for f in flows:
            self.add(f)
        old.retire()

    def remove(self, flow_id: str) -> Flow | None:
        with self._lock:
            flow = self.flows.pop(flow_id, None)
            if flow is not None:
                self.version += 1
                self._lib.occ_fb_remove(self._h, flow_id.encode())
            return flow

    def list_flows(self) -> list[Flow]:
        with self._lock:
            return sorted(self.flows.values(), key=lambda f: f.id)

    def set_policy(self, min_change: float, max_interval_s: float) -> None:
        self.min_change, self.max_interval_s = min_change, max_interval_s
        self.occ.set_policy(min_change, max_interval_s)

    def update(self, ue: int, target: UeTarget) -> None:
        self._lib.occ_fb_update(self._h, int(ue), target.target_bps, int(target.fallback),
                                int(target.guami is not None), pack_guami(target.guami),
                                int(target.t_ms))  # fmt: skip

    def update_batch(self, ue_ids: npt.NDArray[np.int64], target_bps: npt.NDArray[np.float64],
                     fallback: npt.NDArray[np.bool_], guamis: list[str | None],
                     t_ms: int) -> None:  # fmt: skip
        if not self.flows:
            return
        ues = np.ascontiguousarray(ue_ids, dtype=np.int64)
        bps = np.ascontiguousarray(target_bps, dtype=np.float64)
        fb = np.ascontiguousarray(fallback, dtype=np.uint8)
        has_g = np.asarray([g is not None for g in guamis], dtype=np.uint8)
        gm = np.asarray([pack_guami(g) for g in guamis], dtype=np.uint64)
        self._lib.occ_fb_update_batch(self._h, _ptr(ues), len(ues), _ptr(bps), _ptr(fb),
                                      _ptr(has_g), _ptr(gm), int(t_ms))  # fmt: skip

    def forget(self, ue: int) -> None:
        self._lib.occ_fb_forget(self._h, int(ue))

    def tick(self) -> float:
        return float(self._lib.occ_fb_tick(self._h))

    def start_timer(self, stop: threading.Event, period_s: float = 0.01) -> None:
        self.timer_running = True
        threading.Thread(target=self.run_timer, args=(stop, period_s), name="feedback",
                         daemon=True).start()  # fmt: skip

    def run_timer(self, stop: threading.Event, period_s: float = 0.01) -> None:
        wait = period_s
        while not stop.wait(wait):
            try:
                wait = min(max(self.tick(), period_s), max(self.max_interval_s, period_s))
            except Exception:
                self.counters_py["timer_errors"] += 1
                log.exception("feedback tick failed")
                wait = period_s
