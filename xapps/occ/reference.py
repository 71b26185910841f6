"""Scalar reference of the OCC engine: one UE, one sample at a time, straight from the
equations, with plain lists instead of prefix sums and monotonic deques. Slow on purpose;
the tests hold ``OccEngine`` to it, and the benchmark uses it as its baseline."""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from octoric.xapps.occ.batch import AbwBatch, Bottleneck, EngineStats
from octoric.xapps.occ.config import OccConfig
from octoric.xapps.occ.errors import OccInputError
from octoric.xapps.occ.metrics import build_block, carry_mcs, check_unique, ue_id_array


@dataclass
class _Ue:
    last_t: int = -1
    touch: int = -1
    idle_run: int = 0
    last_start: int = -1
    prev_start: int = -1
    samples: deque[tuple[int, float, float]] = field(default_factory=deque)  # (t, u, P_alloc)
    window: deque[tuple[int, float, float, float]] = field(default_factory=deque)  # t, C', C_f, r
    rbar: float | None = None
    prev_frame: tuple[float, int] | None = None  # own PRBs (sum, samples) of the last frame
    nb: int = 0
    duty: float = 0.0
    arr: float = 0.0
    buf: float = 0.0
    state: Bottleneck = Bottleneck.UNKNOWN
    handover: bool = False
    outage: bool = False
    out_avg: float = 0.0  # average of 'no MCS' over ~L (outage_fallback)
    target: float = float("nan")
    last_r: float = 0.0  # bits per PRB of the latest granule with an MCS (0: none)

    def reset_estimator(self) -> None:
        self.last_r = 0.0
        self.idle_run = 0
        self.last_start = self.prev_start = -1
        self.samples.clear()
        self.window.clear()
        self.rbar = None
        self.prev_frame = None
        self.out_avg = 0.0


@dataclass
class _Out:
    target: float
    b: float
    cp: float
    cf: float
    cpp: float
    d: int
    aware: bool


class ReferenceEngine:
    """Same API and semantics as ``OccEngine`` (see there), written for clarity."""

    def __init__(self, config: OccConfig | None = None) -> None:
        self.config = config or OccConfig()
        self.stats = EngineStats()
        self.ues: dict[int, _Ue] = {}
        self._now = -1

    def expire(self, now_ms: int) -> list[int]:
        gone = [u for u, st in self.ues.items() if st.touch < now_ms - self.config.expire_ms]
        for u in gone:
            del self.ues[u]
        self.stats.ues_expired += len(gone)
        return sorted(gone)

    def _get(self, ue: int, now: int) -> _Ue:
        st = self.ues.get(ue)
        if st is None:
            st = self.ues[ue] = _Ue(touch=now)
            self.stats.ues_created += 1
        return st

    def on_handover(self, ue_id: int, start: bool, t_ms: int | None = None) -> None:
        now = self._now if t_ms is None else int(t_ms)
        st = self._get(int(ue_id), now)
        st.touch = max(st.touch, now)
        self.stats.handover_events += 1
        if start:
            st.handover = True
        else:
            if st.handover:
                st.reset_estimator()
            st.handover = False

    def latest(self, ue_id: int) -> tuple[float, bool] | None:
        st = self.ues.get(int(ue_id))
        if st is None:
            return None
        return st.target, st.handover or st.state == Bottleneck.INTERNET or st.outage

    def step(
        self,
        st: _Ue,
        t: int,
        pu: float,
        pa: float,
        na: float,
        bpp: float,
        buf: float,
        arr: float,
        ptot: float,
    ) -> _Out:
        """One UE, one 1-ms sample."""
        c = self.config
        if st.last_t >= 0 and t > st.last_t + 1:
            st.idle_run += t - st.last_t - 1  # missing granules count as idle
        # Eq. (1); N_user counts the UE itself when it had nothing to send.
        active = pu > 0 or buf > 0 or arr > 0
        n_user = max(na if active else na + 1.0, 1.0)
        u = pu + pa / n_user
        r = bpp * c.dl_slots_per_ms * 1000.0
        cp = u * r
        st.samples.append((t, u, pu))
        while st.samples[0][0] <= t - c.history_ms:
            st.samples.popleft()
        # Design 1: frame starts, frame interval D, Eq. (3).
        if arr > c.arrival_eps_bytes:
            if st.idle_run >= c.min_idle_ms and (
                st.last_start < 0 or t - st.last_start >= c.min_frame_interval_ms
            ):
                if st.last_start >= 0 and t - st.last_start <= c.max_frame_interval_ms:
                    done = [aa for (tt, _, aa) in st.samples if st.last_start <= tt < t]
                    st.prev_frame = (sum(done), len(done))
                else:
                    st.prev_frame = None
                st.prev_start, st.last_start = st.last_start, t
            st.idle_run = 0
        else:
            st.idle_run += 1
        aware = (
            st.prev_start >= 0
            and t - st.last_start <= c.max_frame_interval_ms
            and st.last_start - st.prev_start <= c.max_frame_interval_ms
        )
        # D: the last frame interval, stretched while the next frame is late.
        d = max(st.last_start - st.prev_start, t - st.last_start + 1) if aware else c.d_th_ms
        in_frame = [(uu, aa) for (tt, uu, aa) in st.samples if tt > t - d]
        mean_u = sum(uu for uu, _ in in_frame) / len(in_frame)
        mean_a = sum(aa for _, aa in in_frame) / len(in_frame)
        b = mean_u * r
        st.outage = c.outage_fallback and r <= 0.0
        avail = 1.0
        if c.outage_fallback:
            st.out_avg += ((1.0 if r <= 0.0 else 0.0) - st.out_avg) * (1.0 / c.window_l_ms)
            avail = 1.0 - st.out_avg
        if st.outage:
            # no MCS: an outage; fall back, and keep it out of Eq. (5)'s window
            while st.window and st.window[0][0] <= t - c.window_l_ms:
                st.window.popleft()
            m = min(w[1] for w in st.window) if st.window else 0.0
            target = m * avail * (1.0 - c.goodput_overhead)
            self._bottleneck(st, arr, buf)
            st.last_t = t
            st.target = target
            return _Out(target, b, cp, 0.0, 0.0, d, aware)
        # Design 2: fair share and Eq. (4).
        if c.scheduler == "proportional_fair":
            st.rbar = r if st.rbar is None else st.rbar + (r - st.rbar) * (1.0 / c.pf_window_ms)
            cf = ptot / n_user * min(r, st.rbar)
        else:
            cf = ptot / n_user * r
        cpp = b + c.beta * max(cf - b, 0.0)
        # Design 3: minimum over the last L ms.
        st.window.append((t, cpp, cf, r))
        while st.window[0][0] <= t - c.window_l_ms:
            st.window.popleft()
        m_cpp = min(w[1] for w in st.window)
        if c.probe_bypasses_min:
            m_cf = min(w[2] for w in st.window)
            r_min = min(w[3] for w in st.window)
            if aware and st.prev_frame is not None:
                cur = sum(aa for (tt, _, aa) in st.samples if tt >= st.last_start)
                own = max(st.prev_frame[0], cur) / st.prev_frame[1] * r_min
            else:
                own = mean_a * r_min
            q = min(own + c.beta * max(m_cf - own, 0.0), m_cf)
            rate = min(cpp, max(m_cpp, q))
        else:
            rate = m_cpp
        target = rate * avail * (1.0 - c.goodput_overhead)
        self._bottleneck(st, arr, buf)
        st.last_t = t
        st.target = target
        return _Out(target, b, cp, cf, cpp, d, aware)

    def _bottleneck(self, st: _Ue, arr: float, buf: float) -> None:
        """Bottleneck state from the arrival pattern (plus the standing queue)."""
        c = self.config
        ind = 1.0 if arr > c.arrival_eps_bytes else 0.0
        a = 1.0 / c.bottleneck_window_ms
        if st.nb == 0:
            st.duty, st.arr, st.buf = ind, arr, buf
        else:
            st.duty += (ind - st.duty) * a
            st.arr += (arr - st.arr) * a
            st.buf += (buf - st.buf) * a
        st.nb += 1
        if st.nb >= round(c.bottleneck_window_ms) and st.arr > c.arrival_eps_bytes:
            qdelay = st.buf / st.arr
            if (
                st.state != Bottleneck.INTERNET
                and st.duty >= c.smooth_duty_on
                and qdelay <= c.queue_delay_th_ms
            ):
                st.state = Bottleneck.INTERNET
            elif st.state != Bottleneck.WIRELESS and (
                st.duty <= c.smooth_duty_off or qdelay > 2.0 * c.queue_delay_th_ms
            ):
                st.state = Bottleneck.WIRELESS

    def ingest(
        self, ue_ids: object, t0_ms: int, metrics: Mapping[str, object], granule_ms: int = 1
    ) -> AbwBatch:
        try:
            if granule_ms != 1:
                raise OccInputError("granularity", f"granule must be 1 ms, got {granule_ms}")
            if isinstance(t0_ms, bool) or not isinstance(t0_ms, int | np.integer) or t0_ms < 0:
                raise OccInputError("time", f"t0_ms must be an integer >= 0, got {t0_ms!r}")
            ids = ue_id_array(ue_ids)
            check_unique(ids)
            metrics, carried = carry_mcs(
                ids, metrics, lambda u: self.ues[u].last_r if u in self.ues else 0.0
            )
            blk = build_block(ids, metrics, self.config.prb_total_dl)
            late = [u for u in ids.tolist() if u in self.ues and self.ues[u].last_t >= t0_ms]
            if late:
                raise OccInputError("time", "t0_ms not after the latest sample", late)
        except OccInputError as e:
            self.stats.reject(e.reason)
            raise
        t0 = int(t0_ms)
        n, g = blk.shape[1], blk.shape[2]
        tg = np.empty((n, g))
        bg = np.empty((n, g))
        cg = np.empty((n, g))
        outs: list[_Out] = []
        for i, ue in enumerate(ids.tolist()):
            st = self._get(ue, t0)
            o = None
            for j in range(g):
                o = self.step(st, t0 + j, *(float(blk[m, i, j]) for m in range(7)))
                tg[i, j], bg[i, j], cg[i, j] = o.target, o.b, o.cp
                if blk[3, i, j] > 0.0:
                    st.last_r = float(blk[3, i, j])
            assert o is not None
            outs.append(o)
            st.touch = t0 + g - 1
        t_last = t0 + g - 1
        self._now = max(self._now, t_last)
        self.stats.mcs_carried += carried
        self.stats.batches += 1
        self.stats.ue_samples += n * g
        states = [self.ues[u].state for u in ids.tolist()]
        ho = np.array([self.ues[u].handover for u in ids.tolist()], dtype=np.bool_)
        outage = np.array([self.ues[u].outage for u in ids.tolist()], dtype=np.bool_)
        bn = np.array(states, dtype=np.int8)
        self.expire(self._now)
        return AbwBatch(
            ue_ids=ids,
            t_ms=t_last,
            target_bps=tg[:, -1].copy(),
            cp_bps=np.array([o.cp for o in outs]),
            frame_abw_bps=np.array([o.b for o in outs]),
            fair_share_bps=np.array([o.cf for o in outs]),
            cp_prime_bps=np.array([o.cpp for o in outs]),
            frame_interval_ms=np.array([o.d for o in outs], dtype=np.int64),
            frame_aware=np.array([o.aware for o in outs], dtype=np.bool_),
            bottleneck=bn,
            handover=ho,
            fallback=ho | (bn == Bottleneck.INTERNET) | outage,
            outage=outage,
            target_bps_granules=tg,
            frame_abw_bps_granules=bg,
            cp_bps_granules=cg,
        )
