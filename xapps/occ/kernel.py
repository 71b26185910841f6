"""The compiled per-sample core of the OCC engine: one call per KPM batch walks every UE's
granules in time order and updates that UE's state in place.

Numba compiles it when importable (``numba`` is a dependency); without numba the same code
runs as plain Python, correct but ~100x slower. All state lives in numpy arrays owned by
``OccEngine``: per UE slot a row of integer scalars (``I_*``), a row of float scalars
(``F_*``), a ring of prefix sums for the frame-interval averages and three monotonic deques
for the minima over the last L ms.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, TypeVar, cast

import numpy as np
import numpy.typing as npt

F = TypeVar("F", bound=Callable[..., Any])

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


def _jit(fn: F) -> F:
    """``numba.njit(cache=True)`` when numba is installed, else the Python function.

    The cache lives beside the source (``__pycache__``) or in ``NUMBA_CACHE_DIR``. Where neither
    can be written (an image's read-only root filesystem without ``NUMBA_CACHE_DIR``; numba
    raises at decoration time) the kernel is compiled at each start instead of not at all."""
    try:
        numba = importlib.import_module("numba")
    except ImportError:  # pragma: no cover - numba is a declared dependency
        return fn
    try:
        return cast(F, numba.njit(cache=True, nogil=True)(fn))
    except RuntimeError as e:
        if "cannot cache" not in str(e):
            raise
        return cast(F, numba.njit(cache=False, nogil=True)(fn))


def compiled() -> bool:
    """True when the kernel runs compiled (numba present)."""
    return hasattr(step_batch, "py_func")


# Integer state columns.
I_LAST_T = 0  # time (ms) of the UE's latest sample, -1 before the first
I_IDLE_RUN = 1  # ms since the latest arrival (gaps count as idle)
I_LAST_START = 2  # time of the latest frame start (-1: none)
I_PREV_START = 3  # time of the frame start before it (-1: none)
I_CNT = 4  # running count of samples (prefix; windows take differences)
I_NB = 5  # samples fed to the bottleneck averages
I_STATE = 6  # Bottleneck state: 0 unknown, 1 wireless, 2 internet
I_PF_INIT = 7  # 1 once the PF rate average has a first sample
I_DQ_HEAD = 8  # three deques (C_p', C_f, r): head index at 8..10, size at 11..13
I_DQ_SIZE = 11
I_PREV_CNT = 14  # samples in the last complete frame interval (0: none)
I_OUTAGE = 15  # 1 while the latest sample had no MCS (outage_fallback only)
N_I = 16
# Float state columns.
F_SUM_U = 0  # running sum of effective PRBs u = P_alloc + P_idle / N_user
F_SUM_A = 1  # running sum of own allocated PRBs P_alloc
F_RBAR = 2  # PF: average bit/s per PRB
F_DUTY = 3  # average of 'arrivals this ms' (0/1): the arrival duty cycle
F_ARR = 4  # average arrived bytes per ms
F_BUF = 5  # average buffer bytes
F_PREV_A = 6  # own PRBs (sum) of the last complete frame interval
F_OUT = 7  # outage_fallback: average of 'no MCS this ms' (0/1), time constant L
N_F = 8
# Parameter vector layout.
P_K = 0  # bit/s per (PRB x bit-per-PRB): DL slots per ms x 1000
P_EPS = 1
P_MIN_IDLE = 2
P_MIN_FRAME = 3
P_MAX_FRAME = 4
P_D_TH = 5
P_BETA = 6
P_PF = 7  # 1.0: proportional fair, 0.0: round robin
P_PF_ALPHA = 8
P_L = 9
P_PROBE = 10
P_GOODPUT = 11  # 1 - overhead
P_BN_ALPHA = 12
P_DUTY_ON = 13
P_DUTY_OFF = 14
P_QTH = 15
P_BN_MIN = 16  # samples before the bottleneck state may leave 'unknown'
P_OUTAGE = 17  # 1.0: a sample without MCS is an outage (fallback, kept out of Eq. 5)
N_P = 18
# Per-UE latest outputs (columns of ``out_last``).
O_CP = 0
O_B = 1
O_CF = 2
O_CPP = 3
O_D = 4
O_AWARE = 5
N_O = 6

STATE_UNKNOWN = 0
STATE_WIRELESS = 1
STATE_INTERNET = 2
REBASE_AT = 1.0e9  # keep running sums small so window differences stay exact to ~1e-12


@_jit
def rows_ok(blk: FloatArray) -> npt.NDArray[np.bool_]:
    """Per UE row of a (metric, UE, granule) block: every value finite and >= 0."""
    n = blk.shape[1]
    ok = np.ones(n, dtype=np.bool_)
    for m in range(blk.shape[0]):
        for i in range(n):
            for j in range(blk.shape[2]):
                v = blk[m, i, j]
                if not (v >= 0.0 and v < np.inf):  # False for NaN, inf, negatives
                    ok[i] = False
    return ok


@_jit
def _dq_expire(dq_t: IntArray, ist: IntArray, s: int, q: int, t: int, lw: int) -> None:
    """Drop the times <= t - lw from the front of deque ``q`` of slot ``s``."""
    head = ist[s, I_DQ_HEAD + q]
    size = ist[s, I_DQ_SIZE + q]
    while size > 0 and dq_t[s, q, head] <= t - lw:
        head += 1
        if head == lw:
            head = 0
        size -= 1
    ist[s, I_DQ_HEAD + q] = head
    ist[s, I_DQ_SIZE + q] = size


@_jit
def _dq_push_min(
    dq_t: IntArray, dq_v: FloatArray, ist: IntArray, s: int, q: int, t: int, v: float, lw: int
) -> float:
    """Push (t, v) on deque ``q`` of slot ``s`` after expiring times <= t - lw; return the
    minimum over (t - lw, t]. Amortised O(1): each value enters and leaves once."""
    _dq_expire(dq_t, ist, s, q, t, lw)
    head = ist[s, I_DQ_HEAD + q]
    size = ist[s, I_DQ_SIZE + q]
    while size > 0:
        back = head + size - 1
        if back >= lw:
            back -= lw
        if dq_v[s, q, back] >= v:
            size -= 1
        else:
            break
    pos = head + size
    if pos >= lw:
        pos -= lw
    dq_t[s, q, pos] = t
    dq_v[s, q, pos] = v
    size += 1
    ist[s, I_DQ_SIZE + q] = size
    return float(dq_v[s, q, head])


@_jit
def _window_min(dq_t: IntArray, dq_v: FloatArray, ist: IntArray, s: int, t: int, lw: int) -> float:
    """The minimum of deque 0 (C_p') over (t - lw, t] without pushing; 0 if none."""
    _dq_expire(dq_t, ist, s, 0, t, lw)
    if ist[s, I_DQ_SIZE] == 0:
        return 0.0
    return float(dq_v[s, 0, ist[s, I_DQ_HEAD]])


@_jit
def _bottleneck_step(
    fst: FloatArray,
    ist: IntArray,
    s: int,
    arr: float,
    buf: float,
    eps: float,
    bn_alpha: float,
    bn_min: int,
    duty_on: float,
    duty_off: float,
    qth: float,
) -> None:
    """Bottleneck state from the arrival pattern (plus the standing queue)."""
    ind = 1.0 if arr > eps else 0.0
    if ist[s, I_NB] == 0:
        fst[s, F_DUTY] = ind
        fst[s, F_ARR] = arr
        fst[s, F_BUF] = buf
    else:
        fst[s, F_DUTY] += (ind - fst[s, F_DUTY]) * bn_alpha
        fst[s, F_ARR] += (arr - fst[s, F_ARR]) * bn_alpha
        fst[s, F_BUF] += (buf - fst[s, F_BUF]) * bn_alpha
    ist[s, I_NB] += 1
    if ist[s, I_NB] >= bn_min and fst[s, F_ARR] > eps:
        qdelay = fst[s, F_BUF] / fst[s, F_ARR]  # ms of arrivals waiting at the BS
        duty = fst[s, F_DUTY]
        st = ist[s, I_STATE]
        if st != STATE_INTERNET and duty >= duty_on and qdelay <= qth:
            ist[s, I_STATE] = STATE_INTERNET
        elif st != STATE_WIRELESS and (duty <= duty_off or qdelay > 2.0 * qth):
            ist[s, I_STATE] = STATE_WIRELESS


@_jit
def step_batch(
    slots: IntArray,
    t0: int,
    blk: FloatArray,
    par: FloatArray,
    ist: IntArray,
    fst: FloatArray,
    ring_u: FloatArray,
    ring_a: FloatArray,
    ring_c: IntArray,
    dq_t: IntArray,
    dq_v: FloatArray,
    out_last: FloatArray,
    out_target: FloatArray,
    out_b: FloatArray,
    out_cp: FloatArray,
) -> None:
    """Process granules t0 .. t0+g-1 of every UE row ``i`` (state slot ``slots[i]``).
    ``blk`` is (7, n_ue, g): the rows of ``metrics.BLOCK_ROWS``."""
    n = slots.shape[0]
    g = blk.shape[2]
    hist = ring_u.shape[1]
    lw = dq_t.shape[2]
    k = par[P_K]
    eps = par[P_EPS]
    min_idle = int(par[P_MIN_IDLE])
    min_frame = int(par[P_MIN_FRAME])
    max_frame = int(par[P_MAX_FRAME])
    d_th = int(par[P_D_TH])
    beta = par[P_BETA]
    pf = par[P_PF] > 0.5
    pf_alpha = par[P_PF_ALPHA]
    probe = par[P_PROBE] > 0.5
    goodput = par[P_GOODPUT]
    bn_alpha = par[P_BN_ALPHA]
    duty_on = par[P_DUTY_ON]
    duty_off = par[P_DUTY_OFF]
    qth = par[P_QTH]
    bn_min = int(par[P_BN_MIN])
    outage_fb = par[P_OUTAGE] > 0.5
    out_alpha = 1.0 / lw
    for i in range(n):
        s = slots[i]
        cp = 0.0
        b = 0.0
        cf = 0.0
        cpp = 0.0
        d = d_th
        aware = 0
        for j in range(g):
            t = t0 + j
            pu = blk[0, i, j]
            pa = blk[1, i, j]
            na = blk[2, i, j]
            bpp = blk[3, i, j]
            buf = blk[4, i, j]
            arr = blk[5, i, j]
            ptot = blk[6, i, j]
            # Missing granules since the UE's last sample: prefixes carry over, gaps are idle.
            last = ist[s, I_LAST_T]
            if last >= 0 and t > last + 1:
                gap = t - last - 1
                ist[s, I_IDLE_RUN] += gap
                fill = gap if gap < hist else hist
                for m in range(fill):
                    tau = t - 1 - m
                    ring_u[s, tau % hist] = fst[s, F_SUM_U]
                    ring_a[s, tau % hist] = fst[s, F_SUM_A]
                    ring_c[s, tau % hist] = ist[s, I_CNT]
            if fst[s, F_SUM_U] > REBASE_AT or fst[s, F_SUM_A] > REBASE_AT:
                su = fst[s, F_SUM_U]
                sa = fst[s, F_SUM_A]
                for m in range(hist):
                    ring_u[s, m] -= su
                    ring_a[s, m] -= sa
                fst[s, F_SUM_U] = 0.0
                fst[s, F_SUM_A] = 0.0
            # Eq. (1): the UE's PRBs plus its share of the idle ones; N_user counts the UE
            # itself when it had nothing to send in this granule.
            active = pu > 0.0 or buf > 0.0 or arr > 0.0
            n_eff = na if active else na + 1.0
            if n_eff < 1.0:
                n_eff = 1.0
            u = pu + pa / n_eff
            r = bpp * k  # bit/s per PRB at this granule's MCS
            cp = u * r
            fst[s, F_SUM_U] += u
            fst[s, F_SUM_A] += pu
            ist[s, I_CNT] += 1
            h = t % hist
            ring_u[s, h] = fst[s, F_SUM_U]
            ring_a[s, h] = fst[s, F_SUM_A]
            ring_c[s, h] = ist[s, I_CNT]
            # Design 1: a frame starts with the first arrival after an idle run.
            if arr > eps:
                ls = ist[s, I_LAST_START]
                if ist[s, I_IDLE_RUN] >= min_idle and (ls < 0 or t - ls >= min_frame):
                    if ls >= 0 and t - ls <= max_frame:
                        # Own PRBs of the frame interval that just ended, [ls, t - 1].
                        h1 = (t - 1) % hist
                        h0 = (ls - 1) % hist
                        fst[s, F_PREV_A] = ring_a[s, h1] - ring_a[s, h0]
                        ist[s, I_PREV_CNT] = ring_c[s, h1] - ring_c[s, h0]
                    else:
                        ist[s, I_PREV_CNT] = 0
                    ist[s, I_PREV_START] = ls
                    ist[s, I_LAST_START] = t
                ist[s, I_IDLE_RUN] = 0
            else:
                ist[s, I_IDLE_RUN] += 1
            ls = ist[s, I_LAST_START]
            ps = ist[s, I_PREV_START]
            if ps >= 0 and t - ls <= max_frame and ls - ps <= max_frame:
                # The last frame interval; stretched while the next frame is late so the
                # window never loses the latest frame's burst.
                d = ls - ps
                if t - ls + 1 > d:
                    d = t - ls + 1
                aware = 1
            else:
                d = d_th
                aware = 0
            hb = (t - d) % hist
            cnt = ist[s, I_CNT] - ring_c[s, hb]
            mean_u = (fst[s, F_SUM_U] - ring_u[s, hb]) / cnt
            mean_a = (fst[s, F_SUM_A] - ring_a[s, hb]) / cnt
            b = mean_u * r  # Eq. (3): PRBs of the last frame interval x R_mcs of now
            avail = 1.0
            if outage_fb:
                # The share of time lost to outages (average over ~L) scales the rate down.
                fst[s, F_OUT] += ((1.0 if r <= 0.0 else 0.0) - fst[s, F_OUT]) * out_alpha
                avail = 1.0 - fst[s, F_OUT]
            if outage_fb and r <= 0.0:
                # No MCS: the UE cannot be served at all (an outage, not a capacity). The
                # sender falls back to its end-to-end controller and Eq. (5)'s window keeps
                # only measured capacities, so the outage does not hold R down for L after;
                # the time it took still lowers R through ``avail``.
                ist[s, I_OUTAGE] = 1
                cf = 0.0
                cpp = 0.0
                out_target[i, j] = _window_min(dq_t, dq_v, ist, s, t, lw) * avail * goodput
                out_b[i, j] = b
                out_cp[i, j] = cp
                _bottleneck_step(
                    fst, ist, s, arr, buf, eps, bn_alpha, bn_min, duty_on, duty_off, qth
                )
                ist[s, I_LAST_T] = t
                continue
            ist[s, I_OUTAGE] = 0
            # Design 2: scheduler-aware fair share and the APP-limit margin, Eq. (4).
            if pf:
                if ist[s, I_PF_INIT] == 0:
                    fst[s, F_RBAR] = r
                    ist[s, I_PF_INIT] = 1
                else:
                    fst[s, F_RBAR] += (r - fst[s, F_RBAR]) * pf_alpha
                rf = r if r < fst[s, F_RBAR] else fst[s, F_RBAR]
            else:
                rf = r
            cf = ptot / n_eff * rf
            cpp = b + beta * (cf - b if cf > b else 0.0)
            # Design 3: minimum over the last L ms.
            m_cpp = _dq_push_min(dq_t, dq_v, ist, s, 0, t, cpp, lw)
            m_cf = _dq_push_min(dq_t, dq_v, ist, s, 1, t, cf, lw)
            m_r = _dq_push_min(dq_t, dq_v, ist, s, 2, t, r, lw)
            if probe:
                # The UE's own rate at the worst channel of the window, stepped by beta toward
                # the window's lowest fair share: the APP-limit recovery of Design 2 without
                # letting any capacity rise of the last L ms through. With frames, the own
                # rate is per frame (the last complete one, or the current one once it is
                # larger) so a burst drained faster is not counted twice.
                pc = ist[s, I_PREV_CNT]
                if aware == 1 and pc > 0:
                    cur_a = fst[s, F_SUM_A] - ring_a[s, (ls - 1) % hist]
                    own_a = fst[s, F_PREV_A] if fst[s, F_PREV_A] > cur_a else cur_a
                    own = own_a / pc * m_r
                else:
                    own = mean_a * m_r
                q = own + beta * (m_cf - own if m_cf > own else 0.0)
                if q > m_cf:
                    q = m_cf
                hold = m_cpp if m_cpp > q else q
                rate = cpp if cpp < hold else hold
            else:
                rate = m_cpp
            out_target[i, j] = rate * avail * goodput
            out_b[i, j] = b
            out_cp[i, j] = cp
            _bottleneck_step(fst, ist, s, arr, buf, eps, bn_alpha, bn_min, duty_on, duty_off, qth)
            ist[s, I_LAST_T] = t
        out_last[i, O_CP] = cp
        out_last[i, O_B] = b
        out_last[i, O_CF] = cf
        out_last[i, O_CPP] = cpp
        out_last[i, O_D] = d
        out_last[i, O_AWARE] = aware
