"""``route``: the OCC paper's over-the-air routes as SNR processes (OCC §6, Fig. 12 and 19: a
20 MHz, 51-PRB srsRAN cell of ~50 Mbit/s, a Quectel UE), mapped per slot through CQI to an
MCS like ``fading``.

The paper describes its routes, it does not measure their SNR; the profiles in ``ROUTES`` are
our model, chosen so that the routes differ the way the paper says (docs/sim.md, "Routes"):

- ``good`` (route 1, free space near the BS): SNR 26 +- 2 dB, 1 s correlation.
- ``blockage`` (route 2, moving in a lab, blocked by test benches): 22 +- 4 dB (0.3 s);
  blockages every 5 s on average (Poisson), 0.3-1.5 s long, 15-25 dB deep, 50 ms edges.
- ``poor`` (route 3, a corridor behind walls): 8 +- 5 dB (0.5 s); 10 dB blockages every 10 s
  for 0.3-1 s.
- ``walk-slow``, ``walk-fast`` (Fig. 19, walking into poor coverage and back): the mean swings
  between 25 and 5 dB with a period of 40 s or 20 s, +- 3 dB fast fading (0.2 s).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from octoric.sim.channels.base import ChannelContext
from octoric.sim.channels.fading import FadingChannel


@dataclass(frozen=True)
class RouteProfile:
    mean_db: float
    std_db: float
    corr_s: float
    blockage_every_s: float = 0.0  # mean time between blockages (0: none)
    blockage_s: tuple[float, float] = (0.3, 1.5)
    blockage_db: tuple[float, float] = (15.0, 25.0)
    walk_period_s: float = 0.0  # the mean swings between walk_hi and walk_lo (0: static)
    walk_hi_db: float = 25.0
    walk_lo_db: float = 5.0


ROUTES: dict[str, RouteProfile] = {
    "good": RouteProfile(26.0, 2.0, 1.0),
    "blockage": RouteProfile(22.0, 4.0, 0.3, blockage_every_s=5.0),
    "poor": RouteProfile(
        8.0, 5.0, 0.5, blockage_every_s=10.0, blockage_s=(0.3, 1.0), blockage_db=(10.0, 10.0)
    ),
    "walk-slow": RouteProfile(0.0, 3.0, 0.2, walk_period_s=40.0),
    "walk-fast": RouteProfile(0.0, 3.0, 0.2, walk_period_s=20.0),
}
EDGE_S = 0.05  # a blockage fades in and out over this long


class RouteChannel(FadingChannel):
    """A ``FadingChannel`` around a route's mean, plus its walk and its blockages."""

    def __init__(self, ctx: ChannelContext, rng: np.random.Generator, route: str,
                 step_ms: float = 1.0) -> None:  # fmt: skip
        p = ROUTES[route]
        super().__init__(ctx, rng, 0.0, p.std_db, p.corr_s, step_ms)
        self.profile = p
        self.step_s = self.step_slots * ctx.slot_us / 1e6
        self.next_step = 0  # absolute index of the next SNR step
        self.blockages: list[tuple[float, float, float]] = []  # (start s, end s, depth dB)
        self.scheduled_until = 0.0
        self.brng = np.random.default_rng(rng.integers(1 << 62))

    def _mean(self, t: np.ndarray) -> np.ndarray:
        p = self.profile
        if p.walk_period_s <= 0:
            return np.full(t.size, p.mean_db)
        mid, amp = (p.walk_hi_db + p.walk_lo_db) / 2, (p.walk_hi_db - p.walk_lo_db) / 2
        out: np.ndarray = mid + amp * np.cos(2 * math.pi * t / p.walk_period_s)
        return out

    def _schedule(self, until_s: float) -> None:
        p = self.profile
        while self.scheduled_until < until_s:
            start = self.scheduled_until + self.brng.exponential(p.blockage_every_s)
            dur = self.brng.uniform(*p.blockage_s)
            depth = self.brng.uniform(*p.blockage_db)
            self.blockages.append((start, start + dur, depth))
            self.scheduled_until = start + dur

    def _loss(self, t: np.ndarray) -> np.ndarray:
        out = np.zeros(t.size)
        if self.profile.blockage_every_s <= 0 or t.size == 0:
            return out
        t0, t1 = float(t[0]), float(t[-1])
        self._schedule(t1 + 1.0)
        self.blockages = [b for b in self.blockages if b[1] + EDGE_S >= t0]
        for start, end, depth in self.blockages:
            if start - EDGE_S > t1:
                break
            ramp_in = np.clip((t - (start - EDGE_S)) / EDGE_S, 0.0, 1.0)
            ramp_out = np.clip(((end + EDGE_S) - t) / EDGE_S, 0.0, 1.0)
            out += depth * np.minimum(ramp_in, ramp_out)
        return out

    def _snr_steps(self, n_steps: int) -> np.ndarray:
        fading = super()._snr_steps(n_steps)  # around a mean of 0
        t = (self.next_step + np.arange(n_steps)) * self.step_s
        self.next_step += n_steps
        out: np.ndarray = fading + self._mean(t) - self._loss(t)
        return out
