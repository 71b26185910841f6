"""``OccConfig``: the OCC engine's parameters (paper's D_th, beta, L plus the details an
implementation needs), validated on construction."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Literal

from octoric.xapps.occ.errors import OccConfigError

Scheduler = Literal["round_robin", "proportional_fair"]


@dataclass(frozen=True)
class OccConfig:
    """Parameters of the OCC engine. Times are in milliseconds (one KPM granule = 1 ms)."""

    # Design 1 (frame-aware measurement)
    d_th_ms: int = 40  # D_th: fixed averaging window when no frame structure is seen
    min_idle_ms: int = 3  # an arrival after >= this many ms without arrivals starts a frame
    min_frame_interval_ms: int = 5  # frame starts closer than this are one frame (jitter)
    max_frame_interval_ms: int = 200  # longer intervals / older frames: fall back to D_th
    arrival_eps_bytes: float = 100.0  # arrivals up to this per ms are control noise, not data
    # Design 2 (APP-limit-aware estimation)
    beta: float = 0.1  # probing coefficient of Eq. (4)
    scheduler: Scheduler = "round_robin"  # MAC scheduler the fair share C_f is computed for
    pf_window_ms: float = 100.0  # PF scheduler's throughput-averaging time constant
    prb_total_dl: float = 51.0  # P_total when the batch has no OCC.PrbTotalDl (20 MHz, 30 kHz)
    # Design 3 (encoder-friendly smoothing)
    window_l_ms: int = 500  # L: target = min over the last L ms
    probe_bypasses_min: bool = True  # APP-limit probing steps are not held back by the L window
    outage_fallback: bool = True  # no MCS = outage: fall back, keep it out of the L window
    # Units and goodput
    dl_slots_per_ms: float = 1.0  # DL slots per 1 ms granule (PRB counts are per DL slot)
    goodput_overhead: float = 0.1  # share of PHY capacity lost to headers and retransmissions
    # Bottleneck state (bursty arrivals = wireless bottleneck, smooth = Internet)
    bottleneck_window_ms: float = 200.0  # time constant of the arrival-pattern averages
    smooth_duty_on: float = 0.9  # arrival duty cycle at/above which arrivals are smooth
    smooth_duty_off: float = 0.7  # duty cycle at/below which arrivals are bursty again
    queue_delay_th_ms: float = 10.0  # a standing BS queue above this means wireless bottleneck
    # State housekeeping
    expire_ms: int = 5000  # a UE without samples for this long is forgotten

    def __post_init__(self) -> None:
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, float) and not math.isfinite(v):
                raise OccConfigError(f.name, f"must be finite, got {v}")
        _positive_int(self, "d_th_ms", "min_idle_ms", "min_frame_interval_ms")
        _positive_int(self, "max_frame_interval_ms", "window_l_ms", "expire_ms")
        if self.max_frame_interval_ms < self.min_frame_interval_ms:
            raise OccConfigError("max_frame_interval_ms", "must be >= min_frame_interval_ms")
        if self.max_frame_interval_ms > 10_000 or self.d_th_ms > 10_000:
            raise OccConfigError("max_frame_interval_ms", "frame windows are capped at 10 s")
        if self.window_l_ms > 60_000:
            raise OccConfigError("window_l_ms", "must be <= 60000")
        if not 0.0 < self.beta < 1.0:
            raise OccConfigError("beta", f"must be in (0, 1), got {self.beta}")
        if self.scheduler not in ("round_robin", "proportional_fair"):
            raise OccConfigError("scheduler", f"unknown scheduler {self.scheduler!r}")
        for name in ("pf_window_ms", "prb_total_dl", "dl_slots_per_ms", "bottleneck_window_ms"):
            if not getattr(self, name) > 0:
                raise OccConfigError(name, "must be > 0")
        if self.pf_window_ms < 1.0 or self.bottleneck_window_ms < 1.0:
            raise OccConfigError("pf_window_ms", "averaging time constants must be >= 1 ms")
        if self.arrival_eps_bytes < 0 or self.queue_delay_th_ms < 0:
            raise OccConfigError("arrival_eps_bytes", "thresholds must be >= 0")
        if not 0.0 <= self.goodput_overhead < 1.0:
            raise OccConfigError("goodput_overhead", "must be in [0, 1)")
        if not 0.0 <= self.smooth_duty_off < self.smooth_duty_on <= 1.0:
            raise OccConfigError(
                "smooth_duty_on", "need 0 <= smooth_duty_off < smooth_duty_on <= 1"
            )

    @property
    def history_ms(self) -> int:
        """Length of the per-UE ring of prefix sums (longest averaging window + 1)."""
        return max(self.max_frame_interval_ms + 1, self.d_th_ms) + 1


def _positive_int(cfg: OccConfig, *names: str) -> None:
    for name in names:
        v = getattr(cfg, name)
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise OccConfigError(name, f"must be an integer >= 1, got {v!r}")
