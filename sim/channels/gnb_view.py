"""What a gNB would report for a UE whose capacity comes from a delivery trace.

A Mahimahi trace says how many bytes a saturating download received, millisecond by
millisecond; it does not say which MCS and how many PRBs carried them. Reporting the trace's
capacity as the UE's bits per PRB on every PRB (``ChannelSpec.report = "capacity"``) turns a
period without deliveries into an MCS of zero, which no gNB reports: a UE that gets no grant
has no PDSCH, so srsRAN (with octoric's patches) sends noValue for its MCS and counts no PRBs
for it, and the PRBs went to other UEs.

``report = "gnb"`` carries each link-adaptation period's bytes (the channel's CSI period) as a
gNB would and reports that: every PRB at the two MCS that bracket the period's rate, or, below
MCS 0 on every PRB, MCS 0 on a share of the PRBs with other UEs on the rest; a period without
deliveries is all others'. Deliveries follow that plan, evenly through the period, as a gNB
serving its UE at one rate does (Mahimahi's 1500-byte quantisation is not a radio property).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from octoric.sim.errors import ScenarioError
from octoric.sim.measurements import KpmReport


@dataclass(frozen=True)
class GnbPlan:
    """Per millisecond of the trace: the MCS the gNB used (-1: the UE had no PRBs), its bits
    per PRB per slot (NaN: none; MCS x layers), the UE's PRBs, and what that carries."""

    mcs: np.ndarray  # int16
    layers: np.ndarray  # int8 (0: no PRBs)
    bits_per_prb: np.ndarray  # float64, per slot
    prbs: np.ndarray  # int32, the UE's PRBs in each of the ms's slots
    delivered_bits: np.ndarray  # float64, per ms: prbs x bits per PRB x slots per ms


def _spread(frac: np.ndarray, j: np.ndarray) -> np.ndarray:
    """How many of a period's first j+1 ms minus its first j ms get the "upper" choice when a
    share ``frac`` of them should: spread evenly, rounded, so a period gets round(P x frac)."""
    out: np.ndarray = (np.round((j + 1) * frac) - np.round(j * frac)).astype(np.int64)
    return out


def _period_rate(per_ms_bits: np.ndarray, period_ms: int) -> np.ndarray:
    """Every ms's link-adaptation period's mean rate (periods from the trace's start)."""
    a = np.asarray(per_ms_bits, dtype=np.float64)
    k = np.arange(a.size) // period_ms
    out: np.ndarray = (np.bincount(k, weights=a) / np.bincount(k))[k]
    return out


def peak_period_bits(per_ms_bits: np.ndarray, period_ms: int) -> float:
    """The highest rate of any link-adaptation period, bits per ms."""
    c = _period_rate(per_ms_bits, period_ms)
    return float(c.max()) if c.size else 0.0


def plan(per_ms_bits: np.ndarray, period_ms: int, n_prb: int, bits_per_slot: np.ndarray,
         slot_us: int, max_layers: int = 1) -> GnbPlan:  # fmt: skip
    """What the gNB used, ms by ms, to carry each link-adaptation period's bytes of the trace
    (``per_ms_bits``: the cell's capacity for the UE, bits per ms; ``bits_per_slot``: one
    layer's bits per PRB per slot at each MCS; up to ``max_layers`` layers).

    Above MCS 0 on every PRB the UE has every PRB and link adaptation alternates between the
    two (MCS, layers) that bracket the period's rate (OLLA moves the MCS slot by slot; a single
    table entry would leave a fraction of the PRBs to nobody). Below it, MCS 0 on a share of
    the PRBs (others hold the rest). Each period's bits are kept within half a ms of one step
    (or of one PRB), unbiased. Raises ``ScenarioError`` if a period needs more than the cell's
    PRBs carry at the top MCS and layers."""
    a = np.asarray(per_ms_bits, dtype=np.float64)
    base = np.asarray(bits_per_slot, dtype=np.float64)
    # every (MCS, layers) a gNB could use, by bits per PRB (fewer layers first on a tie)
    cm = np.tile(np.arange(base.size), max_layers)
    cl = np.repeat(np.arange(1, max_layers + 1), base.size)
    cb = base[cm] * cl
    order = np.lexsort((cl, cb))
    cm, cl, cb = cm[order], cl[order], cb[order]
    per_ms = cb * (1000.0 / slot_us)  # one PRB for a ms at each choice
    whole = n_prb * per_ms
    c = _period_rate(a, period_ms)  # the period's rate, every ms
    peak = float(c.max()) if c.size else 0.0
    if peak > whole[-1] * (1 + 1e-9):
        raise ScenarioError(
            f"report 'gnb': the trace peaks at {peak / 1000:.1f} Mbit/s over a "
            f"{period_ms} ms period, more than {n_prb} PRBs carry at the top MCS with "
            f"{max_layers} layer(s) ({whole[-1] / 1000:.1f} Mbit/s): give the cell more PRBs "
            "or layers (ran.n_prb, ran.layers)",
            "channel.report",
        )
    j = np.arange(a.size) % period_ms  # the ms's index in its period
    top = len(cb) - 1
    # above the floor: choices i - 1 and i bracket c (whole[i - 1] < c <= whole[i])
    i = np.clip(np.searchsorted(whole, c, side="left"), 1, top)
    x = np.clip((c - whole[i - 1]) / (whole[i] - whole[i - 1]), 0.0, 1.0)
    pick = i - 1 + _spread(x, j)
    prbs = np.full(a.size, n_prb, dtype=np.int64)
    low = c <= whole[0]
    share = c / per_ms[0]  # PRBs at the lowest choice
    prbs[low] = np.floor(share[low]) + _spread(share[low] % 1.0, j[low])
    pick[low] = 0
    none = prbs <= 0
    prbs[none] = 0
    return GnbPlan(
        mcs=np.where(none, -1, cm[pick]).astype(np.int16),
        layers=np.where(none, 0, cl[pick]).astype(np.int8),
        bits_per_prb=np.where(none, np.nan, cb[pick]),
        prbs=prbs.astype(np.int32),
        delivered_bits=np.where(none, 0.0, prbs * per_ms[pick]),
    )


def apply(rep: KpmReport, col: int, n_prb: int, mcs: np.ndarray, bits: np.ndarray,
          prbs: np.ndarray) -> KpmReport:  # fmt: skip
    """A copy of ``rep`` with UE column ``col`` (alone in its cell) as the gNB reports it,
    given its plan for the report's slots (``mcs``, ``bits``, ``prbs`` per slot)."""
    sent_bits = rep.ue_thp_dl_kbps[:, col] * rep.slot_us / 1000.0
    served = sent_bits > 0.0
    with np.errstate(invalid="ignore", divide="ignore"):
        own = np.where(served, np.ceil(sent_bits / np.where(served, bits, 1.0) - 1e-6), 0.0)
    own = np.minimum(own, n_prb).astype(np.int32)
    others = n_prb - prbs
    # how many other UEs: as many as a proportional-fair cell needs to leave the UE its share
    # (12 of 106 PRBs: 8 others), so the fair share the cell's state implies is the UE's own
    # (one other with 94 PRBs would tell OCC's Eq. 4 the UE could have half the cell); a
    # period without PRBs: one PRB each
    n_others = np.where(prbs > 0, np.ceil(n_prb / np.maximum(prbs, 1) - 1e-9) - 1, n_prb)
    n_others = np.where(others > 0, np.maximum(n_others, 1), 0).astype(np.int32)
    cell = rep.ue_cell[:, col]
    on = cell >= 0
    rows = np.flatnonzero(on)
    prb = rep.prb_used_dl.copy()
    prb[:, col] = own
    b = rep.bits_per_prb_dl.copy()
    b[:, col] = np.where(served, bits, np.nan)
    m = rep.mcs_dl.copy()
    m[:, col] = np.where(served, mcs, -1)
    idle = rep.prb_avail_dl.copy()
    act = rep.active_ues_dl.copy()
    c = cell[rows]
    # the UE's unused PRBs are idle only where nobody else is on the cell: other UEs with
    # data (they held PRBs this period) take what it leaves, and count as active
    idle[rows, c] = np.where(others[rows] > 0, 0, n_prb - own[rows])
    act[rows, c] = act[rows, c] + n_others[rows]
    return replace(rep, prb_used_dl=prb, bits_per_prb_dl=b, mcs_dl=m, prb_avail_dl=idle,
                   active_ues_dl=act)  # fmt: skip
