"""Mobility along a line of cells and the handovers it causes.

Handovers are generated per UE as a renewal process parameterised by the statistics the
ToN'22 paper measured on high-speed rail (mean interval 6.65 s, mean duration 92.8 ms,
12.7 % failures, 19.3 % ping-pong): the UE crosses cell borders spaced ``speed x gap``
apart (gamma-distributed gaps); at a fraction of borders the UE ping-pongs (forward, back,
forward again within a few hundred ms to 2 s). A handover interrupts the UE for its
duration (log-normal); a failed one adds a radio-link-failure outage before the UE
re-establishes in the target cell. Walking and driving use the same model with their own
speeds and cell spacing (interval = spacing / speed).

``model: a3`` instead derives handovers from signal strength: sites every
``cell_spacing_m`` along the line, RSRP = -path loss (128.1 + 37.6 log10 d_km) + shadowing
(Gauss-Markov in distance) + L3 measurement noise, sampled every ``meas_period_ms``; an A3
event (neighbour > serving + offset for time-to-trigger) hands over. Ping-pong then
emerges from shadowing and noise; durations and failures are drawn as above.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass
class MobilityConfig:
    profile: str = "static"  # static | walking | driving | hsr | custom
    speed_kmh: float = 0.0
    cell_spacing_m: float | None = None  # border spacing; None: from ho_interval_s
    ho_interval_s: float | None = None  # mean interval between handovers (all kinds)
    pingpong_fraction: float = 0.193  # share of handovers that are ping-pong ones
    ho_duration_ms: float = 92.8  # mean interruption of one handover
    ho_duration_cv: float = 0.3
    failure_prob: float = 0.127
    rlf_outage_ms: float = 1000.0  # extra outage after a failed handover (assumption)
    gap_shape: float = 4.0  # gamma shape of border-to-border gaps
    model: str = "stats"  # stats: renewal process from the statistics; a3: RSRP + A3 event
    a3_offset_db: float = 3.0  # A3 offset + hysteresis
    a3_ttt_ms: float = 160.0  # time to trigger
    meas_period_ms: float = 20.0
    shadow_std_db: float = 6.0
    shadow_decorr_m: float = 50.0
    meas_noise_db: float = 2.0

    def mean_interval_s(self) -> float | None:
        if self.ho_interval_s is not None:
            return self.ho_interval_s
        if self.speed_kmh <= 0 or self.cell_spacing_m is None:
            return None
        q = self.pingpong_per_border()
        return self.cell_spacing_m / (self.speed_kmh / 3.6) / (1 + 2 * q)

    def pingpong_per_border(self) -> float:
        f = min(max(self.pingpong_fraction, 0.0), 0.9)
        return f / (2 * (1 - f))


PROFILES: dict[str, MobilityConfig] = {
    "static": MobilityConfig(),
    # Walking and driving: our assumptions (cell spacing, fewer ping-pongs and failures).
    "walking": MobilityConfig(
        "walking", speed_kmh=5.0, cell_spacing_m=300.0, pingpong_fraction=0.05, failure_prob=0.02
    ),
    "driving": MobilityConfig(
        "driving", speed_kmh=60.0, cell_spacing_m=500.0, pingpong_fraction=0.1, failure_prob=0.05
    ),
    # ToN'22 HSR statistics; exponential border gaps (shape 1) also give the paper's share
    # of intervals below 2 s (35.5 %; ours ~33 %).
    "hsr": MobilityConfig("hsr", speed_kmh=300.0, ho_interval_s=6.65, gap_shape=1.0),
}  # fmt: skip


@dataclass(frozen=True)
class HandoverEvent:
    ue: int
    start_us: int
    duration_us: int
    outage_us: int  # duration + RLF outage when failed
    source: int  # cell position index along the line (not yet mod n_cells)
    target: int
    failed: bool
    pingpong: bool


def handover_schedule(
    cfg: MobilityConfig, ue: int, end_us: int, rng: np.random.Generator
) -> list[HandoverEvent]:
    """All handovers of one UE in [0, end_us)."""
    if cfg.model == "a3":
        return a3_schedule(cfg, ue, end_us, rng)
    mean = cfg.mean_interval_s()
    if mean is None or mean <= 0:
        return []
    q = cfg.pingpong_per_border()
    gap_mean_s = mean * (1 + 2 * q)
    sigma = math.sqrt(math.log(1 + cfg.ho_duration_cv**2))
    mu = math.log(cfg.ho_duration_ms * 1000) - sigma * sigma / 2
    events: list[HandoverEvent] = []
    pos = 0  # serving cell position
    t = float(rng.uniform(0, gap_mean_s)) * 1e6  # first border: random phase
    busy_until = 0.0
    while t < end_us:
        gap = float(rng.gamma(cfg.gap_shape, gap_mean_s / cfg.gap_shape)) * 1e6
        hops = [(pos, pos + 1, False)]
        if rng.random() < q:
            hops += [(pos + 1, pos, True), (pos, pos + 1, True)]
        ht = t
        for k, (src, dst, pp) in enumerate(hops):
            if k > 0:
                ht += min(2e6, gap * float(rng.uniform(0.05, 0.3)))
            start = max(ht, busy_until)
            if start >= end_us:
                break
            dur = float(rng.lognormal(mu, sigma))
            failed = bool(rng.random() < cfg.failure_prob)
            outage = dur + (cfg.rlf_outage_ms * 1000 if failed else 0.0)
            events.append(
                HandoverEvent(ue, int(start), int(dur), int(outage), src, dst, failed, pp)
            )
            busy_until = start + outage + 1000
        pos += 1
        t += gap
    return events


def _duration(cfg: MobilityConfig, rng: np.random.Generator) -> tuple[float, bool, float]:
    sigma = math.sqrt(math.log(1 + cfg.ho_duration_cv**2))
    mu = math.log(cfg.ho_duration_ms * 1000) - sigma * sigma / 2
    dur = float(rng.lognormal(mu, sigma))
    failed = bool(rng.random() < cfg.failure_prob)
    return dur, failed, dur + (cfg.rlf_outage_ms * 1000 if failed else 0.0)


def a3_schedule(
    cfg: MobilityConfig, ue: int, end_us: int, rng: np.random.Generator
) -> list[HandoverEvent]:
    """Handovers from simulated RSRP and the A3 event (see the module docstring)."""
    v = cfg.speed_kmh / 3.6
    isd = cfg.cell_spacing_m
    if isd is None and cfg.ho_interval_s is not None:
        isd = v * cfg.ho_interval_s
    if v <= 0 or not isd:
        return []
    meas_s = cfg.meas_period_ms / 1000.0
    n = int(end_us / 1e6 / meas_s)
    ttt = max(1, math.ceil(cfg.a3_ttt_ms / cfg.meas_period_ms))
    a = math.exp(-v * meas_s / cfg.shadow_decorr_m)
    innov = rng.normal(0.0, cfg.shadow_std_db * math.sqrt(1 - a * a), (n, 5))
    mnoise = rng.normal(0.0, cfg.meas_noise_db, (n, 5))
    x0 = float(rng.uniform(0, isd))
    serving = round(x0 / isd)
    prev_serving, last_ho_s = serving, -1e9
    shadow: dict[int, tuple[float, int]] = {}
    cand, cand_n = -(10**9), 0
    busy_until = 0.0
    events: list[HandoverEvent] = []
    for i in range(n):
        t = i * meas_s
        if t * 1e6 < busy_until:
            continue
        x = x0 + v * t
        base = math.floor(x / isd)
        sites = (base - 1, base, base + 1, base + 2)
        rsrp: dict[int, float] = {}
        for j, k in enumerate((*sites, serving) if serving not in sites else sites):
            prev = shadow.get(k)
            if prev is None:
                s = float(rng.normal(0.0, cfg.shadow_std_db))
            else:
                gap = i - prev[1]
                s = prev[0] * a**gap + (innov[i, j] if gap == 1 else float(
                    rng.normal(0.0, cfg.shadow_std_db * math.sqrt(max(0.0, 1 - a ** (2 * gap))))
                ))  # fmt: skip
            shadow[k] = (s, i)
            d_km = max(abs(x - k * isd), 10.0) / 1000.0
            rsrp[k] = -(128.1 + 37.6 * math.log10(d_km)) + s + float(mnoise[i, j])
        best = max((k for k in rsrp if k != serving), key=lambda k: rsrp[k])
        if rsrp[best] > rsrp[serving] + cfg.a3_offset_db:
            if best == cand:
                cand_n += 1
            else:
                cand, cand_n = best, 1
            if cand_n >= ttt:
                dur, failed, outage = _duration(cfg, rng)
                pp = best == prev_serving and t - last_ho_s < 2.0
                start = t * 1e6
                events.append(
                    HandoverEvent(ue, int(start), int(dur), int(outage), serving, best, failed, pp)
                )
                prev_serving, serving, last_ho_s = serving, best, t
                busy_until = start + outage + 1000
                cand, cand_n = -(10**9), 0
        else:
            cand, cand_n = -(10**9), 0
        for k in [k for k in shadow if k < base - 2]:
            del shadow[k]  # sites left behind
    return events
