"""Issue #7 engine acceptance, points 1-5, on KPM streams from a synthetic cell
(``octoric.xapps.occ.synthetic``): frames arriving as bursts, a max-min fair scheduler,
idle PRBs when buffers empty, elastic competitors that take what the RTC UE leaves."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pytest

from octoric.xapps.occ import Bottleneck, OccConfig, OccEngine
from octoric.xapps.occ import metrics as M
from octoric.xapps.occ.baseline import moving_average
from octoric.xapps.occ.synthetic import SyntheticCell, stack_granules

pytestmark = pytest.mark.unit

FloatArray = npt.NDArray[np.float64]
PERIOD = 10  # KPM reporting period: 10 granules of 1 ms per indication
BPP = 1000.0  # bits per PRB per slot; 1 slot per ms -> 1 PRB = 1 Mbit/s


@dataclass
class Trace:
    """Per-ms outputs for UE row 0, plus the cell's ground truth."""

    target: FloatArray
    frame_abw: FloatArray
    cp: FloatArray
    truth_cp: FloatArray  # Eq. (1) from the cell model's own allocation, bit/s
    bottleneck: list[int]
    fallback: list[bool]


def run_open_loop(
    engine: OccEngine,
    cell: SyntheticCell,
    arrivals: FloatArray,  # (n_ms, n_ue) bytes
    bpp: FloatArray,  # (n_ms, n_ue) bits per PRB
    events: dict[int, bool] | None = None,  # ms -> handover start/end of UE 0
) -> Trace:
    n_ms = arrivals.shape[0]
    out: dict[str, list[FloatArray]] = {"t": [], "b": [], "c": []}
    truth: list[float] = []
    states: list[int] = []
    fbs: list[bool] = []
    recs = []
    for t in range(n_ms):
        if events and t in events:
            engine.on_handover(0, events[t], t)
        r = cell.step(arrivals[t], bpp[t])
        recs.append(r)
        active = r[M.PRB_USED][0] > 0 or r[M.BUFFER_BYTES][0] > 0 or r[M.ARRIVED_BYTES][0] > 0
        n_eff = max(r[M.ACTIVE_UES][0] + (0 if active else 1), 1)
        truth.append((r[M.PRB_USED][0] + r[M.PRB_AVAIL][0] / n_eff) * bpp[t, 0] * 1000.0)
        if len(recs) == PERIOD:
            b = engine.ingest(np.array([0]), t - PERIOD + 1, stack_granules(recs, [0]))
            out["t"].append(b.target_bps_granules[0])
            out["b"].append(b.frame_abw_bps_granules[0])
            out["c"].append(b.cp_bps_granules[0])
            states += [int(b.bottleneck[0])] * PERIOD
            fbs += [bool(b.fallback[0])] * PERIOD
            recs = []
    return Trace(
        np.concatenate(out["t"]),
        np.concatenate(out["b"]),
        np.concatenate(out["c"]),
        np.array(truth),
        states,
        fbs,
    )


def frame_arrivals(
    n_ms: int, frame_bytes: float, interval_ms: int = 40, jitter_ms: int = 0, seed: int = 1
) -> FloatArray:
    """Bytes arriving per ms: one frame per interval, all in one 1 ms burst."""
    rng = np.random.default_rng(seed)
    a = np.zeros(n_ms)
    t = 5
    while t < n_ms:
        j = int(rng.integers(-jitter_ms, jitter_ms + 1)) if jitter_ms else 0
        if 0 <= t + j < n_ms:
            a[t + j] += frame_bytes
        t += interval_ms
    return a


# --- 1. frame-aware measurement ----------------------------------------------------------


def test_frame_aware_within_10pct_where_30ms_moving_average_errs_over_30pct() -> None:
    """Frames of 250 kbit every 40 ms (+-1 ms jitter) arrive in 1 ms bursts; the scheduler
    drains them at the UE's share (50 PRBs) and an elastic competitor takes every PRB the
    UE leaves. The physical-layer capacity is therefore 50 Mbit/s for ~5 ms and 0 for the
    rest of each frame interval. The true ABW of the flow is the capacity the cell gives it
    over whole frame intervals (the reference of the paper's Fig. 5), computed here from the
    cell model over the whole run."""
    n_ms = 4000
    cell = SyntheticCell(n_ue=2, prb_total=100.0, backlogged=[False, True])
    arr = np.zeros((n_ms, 2))
    arr[:, 0] = frame_arrivals(n_ms, 250_000 / 8, jitter_ms=1)
    tr = run_open_loop(OccEngine(OccConfig()), cell, arr, np.full((n_ms, 2), BPP))
    true_abw = float(tr.truth_cp[200:].mean())
    assert true_abw == pytest.approx(6.25e6, rel=0.02)
    np.testing.assert_allclose(tr.cp, tr.truth_cp)  # the engine's Eq. (1) is the cell's
    warm = slice(200, None)  # two frames are needed to learn D
    occ_err = np.abs(tr.frame_abw[warm] / true_abw - 1.0)
    ma_err = np.abs(moving_average(tr.cp, 30)[warm] / true_abw - 1.0)
    assert occ_err.max() <= 0.10, f"frame-aware max error {occ_err.max():.3f}"
    assert ma_err.max() > 0.30
    assert np.mean(ma_err > 0.30) > 0.5, f"30 ms MA errs > 30% in {np.mean(ma_err > 0.3):.0%}"
    assert ma_err.mean() > 0.30


def test_frame_interval_detected_and_fixed_window_fallback() -> None:
    """30 fps bursts give D = 33 ms; fully paced arrivals (no idle gap) fall back to D_th."""
    eng = OccEngine(OccConfig(d_th_ms=40))
    n = 400
    m = {name: np.zeros((1, n)) for name in M.REQUIRED}
    m[M.PRB_AVAIL][:] = 50.0
    m[M.ACTIVE_UES][:] = 1.0
    m[M.BITS_PER_PRB][:] = BPP
    m[M.ARRIVED_BYTES][0, 3::33] = 20_000.0
    b = eng.ingest(np.array([7]), 0, m)
    assert b.frame_aware[0] and b.frame_interval_ms[0] >= 33
    m[M.ARRIVED_BYTES][:] = 3_000.0  # paced: data every ms
    b = eng.ingest(np.array([7]), n, m)
    assert not b.frame_aware[0] and b.frame_interval_ms[0] == 40


# --- 2. APP limit: probing toward the fair share ------------------------------------------


def run_app_limited(cfg: OccConfig, release_ms: int, n_ms: int) -> tuple[FloatArray, float]:
    """Closed loop: a 25 fps sender sizes each frame as min(app demand, OCC target) x 40 ms.
    The app demand is 20% of the fair share until ``release_ms``, unlimited after. The cell
    has 100 PRBs and an elastic competitor, so the fair share is 50 PRBs = 50 Mbit/s."""
    eng = OccEngine(cfg)
    cell = SyntheticCell(n_ue=2, prb_total=100.0, backlogged=[False, True])
    fair = 50e6
    bpp = np.full(2, BPP)
    targets = np.zeros(n_ms)
    recs = []
    target = 0.2 * fair
    for t in range(n_ms):
        arr = np.zeros(2)
        if t % 40 == 5:
            demand = 0.2 * fair if t < release_ms else np.inf
            arr[0] = min(demand, target) * 0.040 / 8.0
        recs.append(cell.step(arr, bpp))
        if len(recs) == PERIOD:
            b = eng.ingest(np.array([0]), t - PERIOD + 1, stack_granules(recs, [0]))
            targets[t - PERIOD + 1 : t + 1] = b.target_bps_granules[0]
            target = float(b.target_bps[0])
            recs = []
    return targets, fair


def test_app_limited_flow_probes_to_fair_share_within_1s() -> None:
    release = 3000
    targets, fair = run_app_limited(OccConfig(goodput_overhead=0.0), release, release + 1500)
    # APP-limited: the target is C_p plus beta of the gap, ~0.2 + 0.1 x 0.8 = 0.28 of C_f.
    assert targets[release - 100 : release].mean() == pytest.approx(0.28 * fair, rel=0.05)
    after = targets[release:]
    steps = np.diff(after)
    assert steps.min() > -1e-6 * fair, "the probe never steps back while the cell is steady"
    assert steps.max() <= 0.1 * fair, "never a jump: at most beta x C_f per sample"
    assert after[500] < 0.9 * fair  # gradual, not an immediate jump to C_f
    assert after[1000] >= 0.9 * fair, f"after 1 s: {after[1000] / fair:.2f} of the fair share"


def test_plain_min_window_would_hold_the_probe_back() -> None:
    """Why ``probe_bypasses_min`` exists: with R = min of C_p' over L (Eq. 5 alone) each
    beta step waits a whole L window, so 1 s after the release the flow is still far below
    its fair share."""
    release = 3000
    cfg = OccConfig(goodput_overhead=0.0, probe_bypasses_min=False)
    targets, fair = run_app_limited(cfg, release, release + 1100)
    assert targets[release + 1000] < 0.5 * fair


# --- 3. deep fade ---------------------------------------------------------------------------


@pytest.mark.parametrize("app_limited", [False, True])
def test_deep_fade_shows_in_the_same_sample(app_limited: bool) -> None:
    n_ms, fade = 2000, 1203
    cell = SyntheticCell(n_ue=2, prb_total=100.0, backlogged=[not app_limited, True])
    arr = np.zeros((n_ms, 2))
    if app_limited:
        arr[:, 0] = frame_arrivals(n_ms, 40_000)
    bpp = np.full((n_ms, 2), BPP)
    bpp[fade, 0] = BPP / 10  # capacity / 10 for one slot
    tr = run_open_loop(OccEngine(), cell, arr, bpp)
    before = tr.target[fade - 1]
    assert before > 0
    assert tr.target[fade] <= before / 10 * (1 + 1e-9)
    # The low value is held for L (Design 3), then the target recovers.
    assert tr.target[fade + 1 : fade + 500].max() <= before / 10 * (1 + 1e-9)
    assert tr.target[fade + 520] > 0.9 * before


# --- 4. increases shorter than L never raise R ----------------------------------------------


@pytest.mark.parametrize("kind", ["channel", "competitor_leaves", "competitor_idle_prbs"])
@pytest.mark.parametrize("app_limited", [False, True])
def test_increases_shorter_than_L_never_raise_target(kind: str, app_limited: bool) -> None:
    rng = np.random.default_rng(hash((kind, app_limited)) % 2**32)
    n_ms = 3000
    cell = SyntheticCell(n_ue=3, prb_total=100.0, backlogged=[not app_limited, True, False])
    arr = np.zeros((n_ms, 3))
    if app_limited:
        arr[:, 0] = frame_arrivals(n_ms, 30_000)
    arr[:, 2] = 2_500.0  # a CBR neighbour (20 PRBs)
    bpp = np.full((n_ms, 3), BPP)
    starts = []
    for k in range(3):
        s = 1200 + 600 * k
        length = int(rng.integers(20, 450))  # < L = 500 ms
        starts.append((s, s + length))
        if kind == "channel":
            bpp[s : s + length, 0] = BPP * rng.uniform(1.5, 3.0)
        elif kind == "competitor_leaves":
            cell_off = np.zeros((length, 3))
            cell_off[:, 1] = 1.0
            bpp[s : s + length, 1] = BPP  # marker only: handled below via backlog toggling
        else:
            arr[s : s + length, 2] = 0.0  # the CBR neighbour goes quiet: idle PRBs appear
    if kind == "competitor_leaves":
        tr = _run_with_backlog_gaps(cell, arr, bpp, starts)
    else:
        tr = run_open_loop(OccEngine(), cell, arr, bpp)
    base = tr.target[1100:1200].max()
    assert tr.target[1100:1200].min() == pytest.approx(base, rel=1e-6)  # steady before
    assert tr.target[1200:].max() <= base * (1 + 1e-9)
    # The increases are real: the physical-layer capacity rose during each of them.
    assert max(tr.cp[s:e].max() for s, e in starts) > 1.2 * tr.cp[1100:1200].max()


def _run_with_backlog_gaps(
    cell: SyntheticCell, arr: FloatArray, bpp: FloatArray, gaps: list[tuple[int, int]]
) -> Trace:
    """Like ``run_open_loop`` but the elastic competitor (UE 1) stops during ``gaps``."""
    eng = OccEngine()
    n_ms = arr.shape[0]
    parts: dict[str, list[FloatArray]] = {"t": [], "b": [], "c": []}
    recs = []
    for t in range(n_ms):
        cell.backlogged[1] = not any(s <= t < e for s, e in gaps)
        recs.append(cell.step(arr[t], bpp[t]))
        if len(recs) == PERIOD:
            b = eng.ingest(np.array([0]), t - PERIOD + 1, stack_granules(recs, [0]))
            parts["t"].append(b.target_bps_granules[0])
            parts["b"].append(b.frame_abw_bps_granules[0])
            parts["c"].append(b.cp_bps_granules[0])
            recs = []
    z = np.zeros(0)
    return Trace(
        np.concatenate(parts["t"]), np.concatenate(parts["b"]), np.concatenate(parts["c"]),
        z, [], [],
    )  # fmt: skip


def test_increase_longer_than_L_does_raise_target() -> None:
    n_ms = 2500
    cell = SyntheticCell(n_ue=2, prb_total=100.0, backlogged=[True, True])
    bpp = np.full((n_ms, 2), BPP)
    bpp[1000:, 0] = 2 * BPP
    tr = run_open_loop(OccEngine(), cell, np.zeros((n_ms, 2)), bpp)
    assert tr.target[1400] == pytest.approx(tr.target[900])
    assert tr.target[1600] == pytest.approx(2 * tr.target[900])


# --- 5. bottleneck state and handover -------------------------------------------------------


def test_bottleneck_bursty_wireless_smooth_internet_and_back() -> None:
    n_ms = 3000
    cell = SyntheticCell(n_ue=2, prb_total=100.0, backlogged=[False, True])
    arr = np.zeros((n_ms, 2))
    arr[:1000, 0] = frame_arrivals(1000, 60_000)  # bursts: wireless bottleneck
    arr[1000:2000, 0] = 1_500.0  # paced by an Internet bottleneck at 12 Mbit/s: no BS queue
    arr[2000:, 0] = frame_arrivals(1000, 60_000)
    tr = run_open_loop(OccEngine(), cell, arr, np.full((n_ms, 2), BPP))
    assert tr.bottleneck[990] == Bottleneck.WIRELESS and not tr.fallback[990]
    assert tr.bottleneck[1990] == Bottleneck.INTERNET and tr.fallback[1990]
    assert tr.bottleneck[2990] == Bottleneck.WIRELESS and not tr.fallback[2990]
    # Detection takes a few hundred ms (the arrival averages' time constant), not seconds.
    switch = next(t for t in range(1000, 2000) if tr.bottleneck[t] == Bottleneck.INTERNET)
    assert switch < 1500


def test_paced_sender_on_a_wireless_bottleneck_is_not_an_internet_bottleneck() -> None:
    """Smooth arrivals that queue at the base station (the sender paces above the wireless
    capacity) are a wireless bottleneck: the standing queue tells them apart."""
    n_ms = 1500
    cell = SyntheticCell(n_ue=2, prb_total=100.0, backlogged=[False, True])
    arr = np.zeros((n_ms, 2))
    arr[:, 0] = 6_500.0  # 52 Mbit/s paced into a 50 Mbit/s share: the queue grows
    tr = run_open_loop(OccEngine(), cell, arr, np.full((n_ms, 2), BPP))
    assert tr.bottleneck[-1] == Bottleneck.WIRELESS and not tr.fallback[-1]


def test_handover_sets_fallback_until_it_ends() -> None:
    n_ms = 1500
    cell = SyntheticCell(n_ue=2, prb_total=100.0, backlogged=[False, True])
    arr = np.zeros((n_ms, 2))
    arr[:, 0] = frame_arrivals(n_ms, 60_000)
    tr = run_open_loop(
        OccEngine(), cell, arr, np.full((n_ms, 2), BPP), events={600: True, 900: False}
    )
    assert not any(tr.fallback[300:600])
    assert all(tr.fallback[610:900])  # from the first batch after the start event
    assert not any(tr.fallback[910:])
    # Estimation resumes right after the handover (history from the old cell dropped).
    assert tr.target[905] > 0


# --- outages (an extension: the paper's testbed has none) ------------------------------------


@pytest.mark.parametrize("outage_fallback", [False, True])
def test_outage_holds_target_for_L_unless_outage_fallback(outage_fallback: bool) -> None:
    """A 40 ms outage (no MCS: bits per PRB 0). Eq. (5) as written holds R at 0 for L after
    it; with ``outage_fallback`` the UE falls back during the outage only and R returns to
    the capacity measured before it."""
    n_ms, o0, o1 = 2000, 1205, 1245
    cell = SyntheticCell(n_ue=2, prb_total=100.0, backlogged=[False, True])
    arr = np.zeros((n_ms, 2))
    arr[:, 0] = frame_arrivals(n_ms, 60_000)
    bpp = np.full((n_ms, 2), BPP)
    bpp[o0:o1, :] = 0.0  # the whole cell blinks (no UE can be served)
    tr = run_open_loop(OccEngine(OccConfig(outage_fallback=outage_fallback)), cell, arr, bpp)
    before = tr.target[o0 - 1]
    assert before > 0 and not any(tr.fallback[300 : o0 - 5])
    if not outage_fallback:
        assert tr.target[o0 : o1 - 1 + 500].max() == 0.0  # held at zero for L after it
        assert tr.target[o1 + 520] > 0.8 * before
        assert not any(tr.fallback[o0:o1])
    else:
        assert all(tr.fallback[o0 + 5 : o1 - 5])  # batches whose last granule is an outage
        assert not any(tr.fallback[o1 + 10 :])
        assert tr.target[o1 + 1 : o1 + 100].min() > 0.8 * before
