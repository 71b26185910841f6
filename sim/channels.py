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


def reported_block(ch: Channel, start_slot: int, n: int, delivered: np.ndarray) -> np.ndarray:
    """The bits per PRB the gNB *reports* for these slots (its link-adaptation MCS).

    For most channels that is what it delivers; a channel whose deliveries are not an MCS
    (a Mahimahi trace) defines ``reported(start, n)`` to say what link adaptation would
    have chosen."""
    rep = getattr(ch, "reported", None)
    return delivered if rep is None else np.asarray(rep(start_slot, n), dtype=np.float64)


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


MIN_PACKETS = 4  # a link-adaptation period spans at least this many mean delivery intervals


class MahimahiChannel:
    """A Mahimahi trace as the cell's full capacity: all PRBs carry the trace's bytes.

    Deliveries follow the trace exactly. What the gNB *reports* as the UE's bits per PRB
    (its link-adaptation MCS) is the trace's capacity over the previous CSI period of
    ``csi_period_ms`` (srsRAN_Project's default CSI-RS period is 20 ms), or over
    ``MIN_PACKETS`` mean delivery intervals if that is longer: a trace lists 1500-byte
    delivery opportunities, so at 5 Mbit/s most milliseconds hold none, yet a real gNB's
    MCS does not drop to zero between packets. Only a whole period without a delivery (an
    outage) reports zero. ``csi_period_ms = 0`` reports the deliveries themselves (each
    ms's bytes as its MCS).
    """

    def __init__(
        self, ctx: ChannelContext, path: str, offset_ms: int = 0, csi_period_ms: int = 20
    ) -> None:
        self.trace = read_mahimahi(path)
        self.ctx = ctx
        self.offset = offset_ms
        # At low rates a CSI period may hold no 1500-byte delivery although the link is up
        # (EV-DO at 0.45 Mbit/s: one packet per 27 ms), so the period is at least
        # MIN_PACKETS mean inter-delivery times: only a longer silence reads as an outage.
        n_del = max(1, self.trace.deliveries)
        self.la_period_ms = (
            max(csi_period_ms, math.ceil(MIN_PACKETS * self.trace.period_ms / n_del))
            if csi_period_ms > 0
            else 0
        )
        self.set_deliveries(self.trace.bytes_per_ms * 8.0 / ctx.n_prb)

    def set_deliveries(self, bits_per_ms: np.ndarray) -> None:
        """Replace what the trace delivers per ms and PRB (e.g. spread over blocks); the
        reported MCS follows."""
        self.bits_per_ms = np.asarray(bits_per_ms, dtype=np.float64)
        self.reported_per_ms = (
            previous_period_mean(self.bits_per_ms, self.la_period_ms)
            if self.la_period_ms > 0
            else self.bits_per_ms
        )

    def _ms(self, start_slot: int, n: int) -> np.ndarray:
        t0 = np.arange(start_slot, start_slot + n, dtype=np.int64) * self.ctx.slot_us
        return np.asarray((t0 // 1000 + self.offset) % self.trace.period_ms)

    def block(self, start_slot: int, n: int) -> np.ndarray:
        out: np.ndarray = self.bits_per_ms[self._ms(start_slot, n)] * (self.ctx.slot_us / 1000.0)
        return out

    def reported(self, start_slot: int, n: int) -> np.ndarray:
        out: np.ndarray = self.reported_per_ms[self._ms(start_slot, n)] * (
            self.ctx.slot_us / 1000.0
        )
        return out


def previous_period_mean(per_ms: np.ndarray, period_ms: int) -> np.ndarray:
    """For every ms, the mean of the previous complete period of ``period_ms`` (the trace
    loops, so the first period sees the last). A gNB learns the channel at a CSI report
    and uses it until the next."""
    a = np.asarray(per_ms, dtype=np.float64)
    n_full = a.size // period_ms
    if n_full == 0:
        return np.full(a.size, a.mean() if a.size else 0.0)
    means = a[: n_full * period_ms].reshape(n_full, period_ms).mean(axis=1)
    k = np.arange(a.size) // period_ms  # this ms's period; the tail joins the last one
    k = np.minimum(k, n_full - 1)
    out: np.ndarray = means[(k - 1) % n_full]
    return out


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
