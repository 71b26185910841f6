"""Per-UE channel models: each yields the bits one PRB carries per slot, block by block.

A channel is consumed in order (``block(start, n)`` for consecutive ranges), so stateful
models (random walks) stay cheap: numpy per block, never Python per slot.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from octoric.sim.mcs import McsMapper
from octoric.sim.traces import read_cqi_csv, read_mahimahi


@dataclass(frozen=True)
class ChannelContext:
    slot_us: int
    n_prb: int
    mapper: McsMapper


class Channel(Protocol):
    def block(self, start_slot: int, n: int) -> np.ndarray:
        """Bits per PRB for slots [start_slot, start_slot + n) (float64)."""
        ...


class ConstantChannel:
    """A fixed rate (the whole cell's PRBs carry ``rate_bps``) or a fixed MCS."""

    def __init__(
        self, ctx: ChannelContext, rate_bps: float | None = None, mcs: int | None = None
    ) -> None:
        if rate_bps is not None:
            self.bits = rate_bps * ctx.slot_us / 1e6 / ctx.n_prb
        else:
            self.bits = ctx.mapper.bits[ctx.mapper.max_mcs if mcs is None else mcs]

    def block(self, start_slot: int, n: int) -> np.ndarray:
        return np.full(n, self.bits)


class PulseChannel:
    """Square wave between ``high_bps`` and ``low_bps``, switching every ``switch_s``."""

    def __init__(
        self, ctx: ChannelContext, high_bps: float, low_bps: float, switch_s: float
    ) -> None:
        k = ctx.slot_us / 1e6 / ctx.n_prb
        self.high, self.low = high_bps * k, low_bps * k
        self.switch_slots = max(1, round(switch_s * 1e6 / ctx.slot_us))

    def block(self, start_slot: int, n: int) -> np.ndarray:
        idx = np.arange(start_slot, start_slot + n) // self.switch_slots
        return np.where(idx % 2 == 0, self.high, self.low)


class FadingChannel:
    """SNR as a Gauss-Markov random walk (mean, std, correlation time) -> CQI -> MCS.

    The SNR is updated every ``step_ms`` (default 1 ms) with the AR(1) coefficient
    exp(-step / corr_time); its stationary spread is ``std_db``.
    """

    def __init__(
        self,
        ctx: ChannelContext,
        rng: np.random.Generator,
        mean_snr_db: float = 20.0,
        std_db: float = 4.0,
        corr_time_s: float = 1.0,
        step_ms: float = 1.0,
    ) -> None:
        self.ctx = ctx
        self.rng = rng
        self.mean, self.std = mean_snr_db, std_db
        self.step_slots = max(1, round(step_ms * 1000 / ctx.slot_us))
        self.a = math.exp(-step_ms / 1000.0 / max(corr_time_s, 1e-6))
        self.x = rng.normal(0.0, std_db)
        self.base = 0  # step index of buf[0]
        self.buf = np.empty(0)
        # SNR (0.25 dB grid, -10..40 dB) -> bits per PRB, computed once.
        grid = np.arange(-10.0, 40.25, 0.25)
        m = ctx.mapper
        self.grid_bits = np.array(
            [m.bits[mc] if (mc := m.mcs_for_cqi(m.cqi_for_snr(s))) >= 0 else 0.0 for s in grid]
        )

    def _snr_steps(self, n_steps: int) -> np.ndarray:
        """x_i = a x_(i-1) + e_i, vectorised per chunk as x_i = a^i (x_0 + sum a^-k e_k);
        chunks are short enough that a^-k stays below 1e6 (no precision loss)."""
        noise = self.rng.normal(0.0, self.std * math.sqrt(1 - self.a * self.a), n_steps)
        out = np.empty(n_steps)
        a = self.a
        la = -math.log(a) if a < 1.0 else 0.0
        chunk = n_steps if la == 0.0 else max(1, min(n_steps, int(13.8 / la)))
        x = self.x
        for c0 in range(0, n_steps, chunk):
            e = noise[c0 : c0 + chunk]
            k = np.arange(1, e.size + 1)
            pw = np.exp(-la * k)  # a^k
            seg = pw * (x + np.cumsum(e / pw))
            out[c0 : c0 + e.size] = seg
            x = float(seg[-1])
        self.x = x
        return out + self.mean

    def block(self, start_slot: int, n: int) -> np.ndarray:
        last = (start_slot + n - 1) // self.step_slots
        missing = last + 1 - (self.base + self.buf.size)
        if missing > 0:
            self.buf = np.concatenate([self.buf, self._snr_steps(missing)])
        steps = np.arange(start_slot, start_slot + n) // self.step_slots - self.base
        snr = self.buf[steps]
        drop = last - self.base  # later blocks start at or after step ``last``
        self.buf = self.buf[drop:]
        self.base = last
        idx = np.clip(np.round((snr + 10.0) * 4).astype(np.int64), 0, self.grid_bits.size - 1)
        out: np.ndarray = self.grid_bits[idx]
        return out


class MahimahiChannel:
    """A Mahimahi trace as the cell's full capacity: all PRBs carry the trace's bytes."""

    def __init__(self, ctx: ChannelContext, path: str, offset_ms: int = 0) -> None:
        self.trace = read_mahimahi(path)
        self.ctx = ctx
        self.offset = offset_ms
        self.bits_per_ms = self.trace.bytes_per_ms * 8.0 / ctx.n_prb

    def block(self, start_slot: int, n: int) -> np.ndarray:
        us = self.ctx.slot_us
        t0 = np.arange(start_slot, start_slot + n, dtype=np.int64) * us
        ms = (t0 // 1000 + self.offset) % self.trace.period_ms
        return self.bits_per_ms[ms] * (us / 1000.0)


class CqiTraceChannel:
    """Per-second CQI samples (e.g. the 5G production dataset) -> MCS -> bits per PRB."""

    def __init__(self, ctx: ChannelContext, path: str, offset_s: int = 0) -> None:
        self.trace = read_cqi_csv(path)
        m = ctx.mapper
        self.bits_per_s = np.array(
            [m.bits[mc] if (mc := m.mcs_for_cqi(int(c))) >= 0 else 0.0 for c in self.trace.cqi]
        )
        self.slots_per_s = 1_000_000 // ctx.slot_us
        self.offset = offset_s

    def block(self, start_slot: int, n: int) -> np.ndarray:
        s = (
            np.arange(start_slot, start_slot + n) // self.slots_per_s + self.offset
        ) % self.bits_per_s.size
        return self.bits_per_s[s]
