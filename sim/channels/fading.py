"""``fading``: SNR as a Gauss-Markov random walk, mapped through CQI to an MCS."""

from __future__ import annotations

import math

import numpy as np

from octoric.sim.channels.base import ChannelContext


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
