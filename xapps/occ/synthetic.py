"""A tiny per-millisecond cell model that produces the KPM columns the engine reads: UEs
with RLC buffers, one DL slot per ms, a max-min fair (round-robin) scheduler over the UEs
that have data, idle PRBs when every buffer is empty. For the engine's tests and benchmark
(the full simulator lives in ``octoric.sim``; this module must not depend on it)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from octoric.xapps.occ import metrics as M

FloatArray = npt.NDArray[np.float64]


def max_min_share(demand: FloatArray, total: float) -> FloatArray:
    """Water-filling: each UE gets min(demand, level) with the level set so the total is
    used up (or every demand is met). ``inf`` is a backlogged UE."""
    alloc = np.zeros_like(demand)
    left = total
    todo = [i for i in range(demand.size) if demand[i] > 0]
    while todo and left > 1e-12:
        level = left / len(todo)
        small = [i for i in todo if demand[i] <= level]
        if not small:
            for i in todo:
                alloc[i] = level
            left = 0.0
            break
        for i in small:
            alloc[i] = demand[i]
            left -= demand[i]
        todo = [i for i in todo if i not in small]
    return alloc


@dataclass
class SyntheticCell:
    """``n_ue`` UEs in one cell of ``prb_total`` PRBs. ``backlogged[i]`` UEs always have
    data (elastic competitors); the others have buffers fed by ``step``'s arrivals."""

    n_ue: int
    prb_total: float = 100.0
    backlogged: list[bool] = field(default_factory=list)
    buffer_bytes: FloatArray = field(init=False)
    t_ms: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        if not self.backlogged:
            self.backlogged = [False] * self.n_ue
        self.buffer_bytes = np.zeros(self.n_ue)

    def step(self, arrived_bytes: FloatArray, bits_per_prb: FloatArray) -> dict[str, FloatArray]:
        """Advance one ms: arrivals join the buffers, the scheduler serves them. Returns each
        UE's KPM values for this granule (metric name -> shape (n_ue,))."""
        self.buffer_bytes += arrived_bytes
        demand = np.where(
            self.backlogged, np.inf, self.buffer_bytes * 8.0 / np.maximum(bits_per_prb, 1e-9)
        )
        alloc = max_min_share(demand, self.prb_total)
        sent = np.minimum(self.buffer_bytes, alloc * bits_per_prb / 8.0)
        self.buffer_bytes = np.where(self.backlogged, 0.0, self.buffer_bytes - sent)
        idle = max(self.prb_total - float(alloc.sum()), 0.0)
        active = float(np.count_nonzero(demand > 0))
        self.t_ms += 1
        return {
            M.PRB_USED: alloc,
            M.PRB_AVAIL: np.full(self.n_ue, idle),
            M.ACTIVE_UES: np.full(self.n_ue, active),
            M.BITS_PER_PRB: bits_per_prb.astype(np.float64),
            M.BUFFER_BYTES: np.where(self.backlogged, 1e6, self.buffer_bytes),
            M.ARRIVED_BYTES: np.where(self.backlogged, 1500.0, arrived_bytes),
            M.PRB_TOTAL: np.full(self.n_ue, self.prb_total),
        }


def stack_granules(records: list[dict[str, FloatArray]], rows: list[int]) -> dict[str, FloatArray]:
    """Turn per-ms records into one batch: metric -> (len(rows), n_granule)."""
    names = [n for n in M.BLOCK_ROWS if n in records[0]]
    return {name: np.stack([r[name][rows] for r in records], axis=1) for name in names}


def random_batch(rng: np.random.Generator, n_ue: int, n_granule: int) -> dict[str, FloatArray]:
    """Plausible random KPM values (bursty arrivals, some idle granules), for benchmarks."""
    shape = (n_ue, n_granule)
    busy = rng.random(shape) < 0.5
    return {
        M.PRB_USED: rng.uniform(0, 40, shape) * busy,
        M.PRB_AVAIL: rng.uniform(0, 60, shape),
        M.ACTIVE_UES: rng.integers(1, 8, shape).astype(np.float64),
        M.BITS_PER_PRB: rng.uniform(100, 1100, shape),
        M.BUFFER_BYTES: rng.uniform(0, 2e5, shape) * busy,
        M.ARRIVED_BYTES: rng.choice([0.0, 0.0, 0.0, 60.0, 30000.0], shape),
    }
