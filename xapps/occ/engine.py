"""``OccEngine``: the OCC algorithm for many UEs, one KPM indication at a time.

Pure code (no I/O): the OCC xApp feeds it decoded indications and handover events; the
simulator can run it in-process. ``ingest`` validates the whole batch first (so a bad batch
changes nothing), maps UE ids to state slots (creating new ones), runs the compiled kernel
(``kernel.step_batch``) over UE x granule, and returns an ``AbwBatch``.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import numpy.typing as npt

from octoric.xapps.occ import kernel as K
from octoric.xapps.occ.batch import AbwBatch, Bottleneck, EngineStats
from octoric.xapps.occ.config import OccConfig
from octoric.xapps.occ.errors import OccInputError
from octoric.xapps.occ.metrics import (
    BITS_PER_PRB,
    BLOCK_ROWS,
    build_block,
    carry_mcs,
    check_unique,
    ue_id_array,
)

_R_ROW = BLOCK_ROWS.index(BITS_PER_PRB)

GRANULE_MS = 1  # the engine's sample period; KPM granularity must match
_INTERNET = int(Bottleneck.INTERNET)


def params_vector(cfg: OccConfig) -> npt.NDArray[np.float64]:
    """The kernel's parameter vector for ``cfg``."""
    p = np.zeros(K.N_P)
    p[K.P_K] = cfg.dl_slots_per_ms * 1000.0
    p[K.P_EPS] = cfg.arrival_eps_bytes
    p[K.P_MIN_IDLE] = cfg.min_idle_ms
    p[K.P_MIN_FRAME] = cfg.min_frame_interval_ms
    p[K.P_MAX_FRAME] = cfg.max_frame_interval_ms
    p[K.P_D_TH] = cfg.d_th_ms
    p[K.P_BETA] = cfg.beta
    p[K.P_PF] = 1.0 if cfg.scheduler == "proportional_fair" else 0.0
    p[K.P_PF_ALPHA] = 1.0 / cfg.pf_window_ms
    p[K.P_L] = cfg.window_l_ms
    p[K.P_PROBE] = 1.0 if cfg.probe_bypasses_min else 0.0
    p[K.P_GOODPUT] = 1.0 - cfg.goodput_overhead
    p[K.P_BN_ALPHA] = 1.0 / cfg.bottleneck_window_ms
    p[K.P_DUTY_ON] = cfg.smooth_duty_on
    p[K.P_DUTY_OFF] = cfg.smooth_duty_off
    p[K.P_QTH] = cfg.queue_delay_th_ms
    p[K.P_BN_MIN] = round(cfg.bottleneck_window_ms)
    p[K.P_OUTAGE] = 1.0 if cfg.outage_fallback else 0.0
    return p


class OccEngine:
    """Per-UE OCC state for any number of UEs; see the module docstring."""

    _ist: npt.NDArray[np.int64]  # (slots, kernel.N_I) integer scalars
    _fst: npt.NDArray[np.float64]  # (slots, kernel.N_F) float scalars
    _ring_u: npt.NDArray[np.float64]  # (slots, history) running sums of u, by time mod history
    _ring_a: npt.NDArray[np.float64]  # (slots, history) running sums of P_alloc
    _ring_c: npt.NDArray[np.int64]  # (slots, history) running sample counts
    _dq_t: npt.NDArray[np.int64]  # (slots, 3, L) monotonic deques: times
    _dq_v: npt.NDArray[np.float64]  # (slots, 3, L) monotonic deques: values
    _ho: npt.NDArray[np.bool_]  # handover in progress
    _touch: npt.NDArray[np.int64]  # latest sample or event time (expiry)
    _in_use: npt.NDArray[np.bool_]
    _last_out: npt.NDArray[np.float64]  # (slots, 2) latest target goodput, fallback

    def __init__(self, config: OccConfig | None = None, capacity: int = 64) -> None:
        self.config = config or OccConfig()
        self.stats = EngineStats()
        self._par = params_vector(self.config)
        self._hist = self.config.history_ms
        self._lw = self.config.window_l_ms
        self._slot_of: dict[int, int] = {}
        self._free: list[int] = []
        self._cap = 0
        self._n_slots = 0  # slots ever handed out (high-water mark)
        self._alloc(max(1, capacity))
        self._now = -1  # latest time seen (ms)
        # slots of UE-id lists seen before (one per node: each names its UEs in the same order
        # report after report); cleared whenever a slot is created or freed
        self._slot_cache: dict[bytes, npt.NDArray[np.int64]] = {}

    # --- state storage ------------------------------------------------------------------
    def _alloc(self, cap: int) -> None:
        """Grow every state array to ``cap`` slots, keeping the existing rows."""
        old = self._cap
        h, lw = self._hist, self._lw
        ist = np.zeros((cap, K.N_I), dtype=np.int64)
        fst = np.zeros((cap, K.N_F))
        ring_u = np.zeros((cap, h))
        ring_a = np.zeros((cap, h))
        ring_c = np.zeros((cap, h), dtype=np.int64)
        dq_t = np.zeros((cap, 3, lw), dtype=np.int64)
        dq_v = np.zeros((cap, 3, lw))
        ho = np.zeros(cap, dtype=np.bool_)
        touch = np.full(cap, -1, dtype=np.int64)
        in_use = np.zeros(cap, dtype=np.bool_)
        last_out = np.zeros((cap, 2))  # target goodput, fallback flag of the latest sample
        last_r = np.zeros(cap)  # bits per PRB of the latest granule with an MCS (0: none)
        if old:
            ist[:old] = self._ist
            fst[:old] = self._fst
            ring_u[:old] = self._ring_u
            ring_a[:old] = self._ring_a
            ring_c[:old] = self._ring_c
            dq_t[:old] = self._dq_t
            dq_v[:old] = self._dq_v
            ho[:old] = self._ho
            touch[:old] = self._touch
            in_use[:old] = self._in_use
            last_out[:old] = self._last_out
            last_r[:old] = self._last_r
        self._ist, self._fst = ist, fst
        self._ring_u, self._ring_a, self._ring_c = ring_u, ring_a, ring_c
        self._dq_t, self._dq_v = dq_t, dq_v
        self._ho, self._touch, self._in_use, self._last_out = ho, touch, in_use, last_out
        self._last_r: npt.NDArray[np.float64] = last_r
        self._cap = cap

    def _reset_estimator(self, s: int) -> None:
        """Forget a slot's measurement history (windows, frames, PF average), keep its
        clock, handover flag and bottleneck state."""
        self._ist[s, K.I_IDLE_RUN] = 0
        self._ist[s, K.I_LAST_START] = -1
        self._ist[s, K.I_PREV_START] = -1
        self._ist[s, K.I_CNT] = 0
        self._ist[s, K.I_PF_INIT] = 0
        self._ist[s, K.I_PREV_CNT] = 0
        self._fst[s, K.F_PREV_A] = 0.0
        self._ist[s, K.I_DQ_HEAD : K.I_DQ_HEAD + 3] = 0
        self._ist[s, K.I_DQ_SIZE : K.I_DQ_SIZE + 3] = 0
        self._fst[s, K.F_SUM_U] = 0.0
        self._fst[s, K.F_SUM_A] = 0.0
        self._fst[s, K.F_RBAR] = 0.0
        self._fst[s, K.F_OUT] = 0.0
        self._ring_u[s] = 0.0
        self._ring_a[s] = 0.0
        self._ring_c[s] = 0
        self._last_r[s] = 0.0

    def _new_slot(self, ue: int, now: int) -> int:
        if self._free:
            s = self._free.pop()
        else:
            if self._n_slots == self._cap:
                self._alloc(self._cap * 2)
            s = self._n_slots
            self._n_slots += 1
        self._ist[s] = 0
        self._ist[s, K.I_LAST_T] = -1
        self._fst[s] = 0.0
        self._reset_estimator(s)
        self._ho[s] = False
        self._touch[s] = now
        self._in_use[s] = True
        self._last_out[s] = (np.nan, 0.0)
        self._slot_of[ue] = s
        self.stats.ues_created += 1
        self._slot_cache.clear()
        return s

    def _last_r_of(self, ue: int) -> float:
        s = self._slot_of.get(ue)
        return 0.0 if s is None else float(self._last_r[s])

    def _drop_slot(self, ue: int) -> None:
        s = self._slot_of.pop(ue)
        self._in_use[s] = False
        self._free.append(s)
        self._slot_cache.clear()

    # --- public API -----------------------------------------------------------------------
    @property
    def ue_ids(self) -> list[int]:
        """UEs that currently have state."""
        return sorted(self._slot_of)

    def expire(self, now_ms: int) -> list[int]:
        """Forget UEs without a sample or event for ``config.expire_ms``; returns their ids."""
        limit = now_ms - self.config.expire_ms
        stale = np.flatnonzero(
            self._in_use[: self._n_slots] & (self._touch[: self._n_slots] < limit)
        )
        if stale.size == 0:
            return []
        inv = {s: u for u, s in self._slot_of.items()}
        gone = [inv[int(s)] for s in stale]
        for ue in gone:
            self._drop_slot(ue)
        self.stats.ues_expired += len(gone)
        return gone

    def on_handover(self, ue_id: int, start: bool, t_ms: int | None = None) -> None:
        """A handover of ``ue_id`` starts (``start=True``) or ends. Between the two the UE's
        ``fallback`` flag is set; at the end its measurement history is dropped, since the
        new cell's capacity owes nothing to the old one's."""
        ue = int(ue_id)
        now = self._now if t_ms is None else int(t_ms)
        s = self._slot_of.get(ue)
        if s is None:
            s = self._new_slot(ue, now)
        self._touch[s] = max(int(self._touch[s]), now)
        self.stats.handover_events += 1
        if start:
            self._ho[s] = True
        else:
            if self._ho[s]:
                self._reset_estimator(s)
            self._ho[s] = False
        self._last_out[s, 1] = float(self._fallback_of(s))

    def _fallback_of(self, s: int) -> bool:
        return (
            bool(self._ho[s])
            or int(self._ist[s, K.I_STATE]) == Bottleneck.INTERNET
            or int(self._ist[s, K.I_OUTAGE]) > 0
        )

    def latest(self, ue_id: int) -> tuple[float, bool] | None:
        """(target goodput bit/s, fallback) of the UE's latest sample; None if unknown."""
        s = self._slot_of.get(int(ue_id))
        if s is None:
            return None
        return float(self._last_out[s, 0]), self._fallback_of(s)

    def export_ue(self, ue_id: int) -> dict[str, npt.NDArray[np.generic]] | None:
        """A copy of one UE's whole state (for a checkpoint), or None if the UE is unknown."""
        s = self._slot_of.get(int(ue_id))
        if s is None:
            return None
        return {k: v[0] for k, v in self._states(np.array([s], dtype=np.int64)).items()}

    def export_states(self) -> tuple[list[int], dict[str, npt.NDArray[np.generic]]]:
        """Every UE's state at once: (UE ids, arrays whose row i is ``export_ue`` of UE i).
        One fancy-indexed copy per array (a checkpoint of 1000 UEs in ~0.2 ms, not 1000
        ``export_ue`` calls on the indication path)."""
        ues = list(self._slot_of)
        slots = np.fromiter((self._slot_of[u] for u in ues), dtype=np.int64, count=len(ues))
        return ues, self._states(slots)

    def _states(self, slots: npt.NDArray[np.int64]) -> dict[str, npt.NDArray[np.generic]]:
        """The state arrays of ``slots``, row by row (fancy indexing: copies)."""
        flags = np.stack([self._ho[slots].astype(np.int64), self._touch[slots].astype(np.int64)],
                         axis=1)  # fmt: skip
        return {
            "ist": self._ist[slots], "fst": self._fst[slots], "ring_u": self._ring_u[slots],
            "ring_a": self._ring_a[slots], "ring_c": self._ring_c[slots],
            "dq_t": self._dq_t[slots], "dq_v": self._dq_v[slots], "flags": flags,
            "last_out": self._last_out[slots],
        }  # fmt: skip

    def import_ue(self, ue_id: int, state: Mapping[str, npt.NDArray[np.generic]]) -> None:
        """Restore a UE from ``export_ue`` output of an engine with the same config. Raises
        ``OccInputError`` ("state") for arrays that do not fit, changing nothing."""
        ue = int(ue_id)
        want = {
            "ist": self._ist.shape[1:], "fst": self._fst.shape[1:],
            "ring_u": self._ring_u.shape[1:], "ring_a": self._ring_a.shape[1:],
            "ring_c": self._ring_c.shape[1:], "dq_t": self._dq_t.shape[1:],
            "dq_v": self._dq_v.shape[1:], "flags": (2,), "last_out": (2,),
        }  # fmt: skip
        for k, shape in want.items():
            a = state.get(k)
            if a is None or np.asarray(a).shape != shape:
                raise OccInputError("state", f"checkpoint field {k!r} missing or misshaped", [ue])
        s = self._slot_of.get(ue)
        if s is None:
            s = self._new_slot(ue, int(np.asarray(state["flags"])[1]))
            self.stats.ues_created -= 1  # a restored UE is not a new one
        self._ist[s] = state["ist"]
        self._fst[s] = state["fst"]
        self._ring_u[s] = state["ring_u"]
        self._ring_a[s] = state["ring_a"]
        self._ring_c[s] = state["ring_c"]
        self._dq_t[s] = state["dq_t"]
        self._dq_v[s] = state["dq_v"]
        flags = np.asarray(state["flags"])
        self._ho[s] = bool(flags[0])
        self._touch[s] = int(flags[1])
        self._last_out[s] = state["last_out"]
        self._now = max(self._now, int(self._ist[s, K.I_LAST_T]), int(flags[1]))
        self._slot_cache.clear()

    def ingest(
        self,
        ue_ids: object,
        t0_ms: int,
        metrics: Mapping[str, object],
        granule_ms: int = GRANULE_MS,
    ) -> AbwBatch:
        """Run OCC over one KPM batch: ``metrics[name]`` has shape (n_ue, n_granule), granule
        ``j`` of every UE is at time ``t0_ms + j`` ms. Raises ``OccInputError`` (and counts
        it) for a malformed batch, leaving every UE's state as it was."""
        try:
            ids, slots, blk, t0, carried = self._prepare(ue_ids, t0_ms, metrics, granule_ms)
        except OccInputError as e:
            self.stats.reject(e.reason)
            raise
        n, g = blk.shape[1], blk.shape[2]
        out_last = np.empty((n, K.N_O))
        out_target = np.empty((n, g))
        out_b = np.empty((n, g))
        out_cp = np.empty((n, g))
        K.step_batch(
            slots, t0, blk, self._par, self._ist, self._fst, self._ring_u, self._ring_a,
            self._ring_c, self._dq_t, self._dq_v, out_last, out_target, out_b, out_cp,
        )  # fmt: skip
        t_last = t0 + g - 1
        self._now = max(self._now, t_last)
        self._touch[slots] = t_last
        r = blk[_R_ROW]
        pos = r > 0.0
        last_pos = r[np.arange(n), g - 1 - np.argmax(pos[:, ::-1], axis=1)]
        self._last_r[slots] = np.where(pos.any(axis=1), last_pos, self._last_r[slots])
        self.stats.mcs_carried += carried
        state = self._ist[slots, K.I_STATE].astype(np.int8)
        ho = self._ho[slots].copy()
        outage = self._ist[slots, K.I_OUTAGE] > 0
        fallback = ho | (state == _INTERNET) | outage
        self._last_out[slots, 0] = out_target[:, -1]
        self._last_out[slots, 1] = fallback
        self.stats.batches += 1
        self.stats.ue_samples += n * g
        self.expire(self._now)
        return AbwBatch(
            ue_ids=ids,
            t_ms=t_last,
            target_bps=out_target[:, -1].copy(),
            cp_bps=out_last[:, K.O_CP].copy(),
            frame_abw_bps=out_last[:, K.O_B].copy(),
            fair_share_bps=out_last[:, K.O_CF].copy(),
            cp_prime_bps=out_last[:, K.O_CPP].copy(),
            frame_interval_ms=out_last[:, K.O_D].astype(np.int64),
            frame_aware=out_last[:, K.O_AWARE] > 0.5,
            bottleneck=state,
            handover=ho,
            fallback=fallback,
            outage=outage,
            target_bps_granules=out_target,
            frame_abw_bps_granules=out_b,
            cp_bps_granules=out_cp,
        )

    def _prepare(
        self, ue_ids: object, t0_ms: int, metrics: Mapping[str, object], granule_ms: int
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.float64], int, int]:
        """Validate the batch and map UEs to slots (creating them only once all is valid); the
        last item: rows whose MCS was carried (``carry_mcs``)."""
        if granule_ms != GRANULE_MS:
            raise OccInputError("granularity", f"granule must be {GRANULE_MS} ms, got {granule_ms}")
        if isinstance(t0_ms, bool) or not isinstance(t0_ms, int | np.integer) or t0_ms < 0:
            raise OccInputError("time", f"t0_ms must be an integer >= 0, got {t0_ms!r}")
        t0 = int(t0_ms)
        ids = ue_id_array(ue_ids)
        key = ids.tobytes()
        cached = self._slot_cache.get(key)
        if cached is None:
            check_unique(ids)  # a cached id list was checked when it was cached
        metrics, carried = carry_mcs(ids, metrics, self._last_r_of)
        blk = build_block(ids, metrics, self.config.prb_total_dl)
        if cached is not None:
            slots = cached
            known = np.ones(ids.shape[0], dtype=np.bool_)
        else:
            lookup = [self._slot_of.get(int(u), -1) for u in ids.tolist()]
            slots = np.array(lookup, dtype=np.int64)
            known = slots >= 0
        if known.any():
            last = self._ist[slots[known], K.I_LAST_T]
            late = last >= t0
            if late.any():
                bad = ids[known][late]
                raise OccInputError(
                    "time",
                    f"t0_ms={t0} is not after the latest sample of {bad.size} UE(s)",
                    bad.tolist(),
                )
        if not known.all():
            slots = slots.copy()
            for i in np.flatnonzero(~known).tolist():
                slots[i] = self._new_slot(int(ids[i]), t0)  # clears the cache
        if cached is None:
            if len(self._slot_cache) >= 1024:
                self._slot_cache.clear()
            self._slot_cache[key] = slots
        return ids, slots, blk, t0, carried


__all__ = ["BLOCK_ROWS", "GRANULE_MS", "OccEngine", "params_vector"]
