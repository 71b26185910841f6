"""``AbwBatch`` (what one ingest returns), ``Bottleneck`` and ``EngineStats``."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt


class Bottleneck(enum.IntEnum):
    """Where a UE's flow is bottlenecked, judged from its arrivals at the base station."""

    UNKNOWN = 0  # not enough traffic seen yet
    WIRELESS = 1  # bursty arrivals (or a standing queue): OCC's target rate applies
    INTERNET = 2  # smooth arrivals and no queue: the sender uses its end-to-end controller


@dataclass
class AbwBatch:
    """Per-UE results of one KPM batch; row ``i`` is ``ue_ids[i]``. Rates are bit/s.

    ``target_bps`` is the OCC target rate R as transport goodput (after the configured
    overhead); the other rates are physical-layer capacities. ``fallback`` tells the sender to
    use its end-to-end controller (Internet bottleneck, handover in progress, or an outage:
    the latest granule had no MCS, with ``OccConfig.outage_fallback``).
    """

    ue_ids: npt.NDArray[np.int64]
    t_ms: int  # time of the batch's last granule
    target_bps: npt.NDArray[np.float64]  # R of the last granule, goodput
    cp_bps: npt.NDArray[np.float64]  # Eq. (1) C_p of the last granule
    frame_abw_bps: npt.NDArray[np.float64]  # Eq. (3) B: frame-aware average
    fair_share_bps: npt.NDArray[np.float64]  # C_f
    cp_prime_bps: npt.NDArray[np.float64]  # Eq. (4) C_p'
    frame_interval_ms: npt.NDArray[np.int64]  # averaging window used (D, or D_th)
    frame_aware: npt.NDArray[np.bool_]  # True: D from detected frames; False: D_th fallback
    bottleneck: npt.NDArray[np.int8]  # Bottleneck values
    handover: npt.NDArray[np.bool_]
    fallback: npt.NDArray[np.bool_]
    outage: npt.NDArray[np.bool_]  # the latest granule had no MCS (outage_fallback only)
    target_bps_granules: npt.NDArray[np.float64]  # (n_ue, n_granule) R per granule, goodput
    frame_abw_bps_granules: npt.NDArray[np.float64]  # (n_ue, n_granule) B per granule
    cp_bps_granules: npt.NDArray[np.float64]  # (n_ue, n_granule) C_p per granule

    def __len__(self) -> int:
        return int(self.ue_ids.shape[0])


@dataclass
class EngineStats:
    """Counters of one engine (exported by the xApp as metrics)."""

    batches: int = 0
    ue_samples: int = 0
    rejected_batches: int = 0
    rejected_by_reason: dict[str, int] = field(default_factory=dict)
    ues_created: int = 0
    ues_expired: int = 0
    handover_events: int = 0
    mcs_carried: int = 0  # UE rows without an MCS in a batch that took the UE's last one

    def reject(self, reason: str) -> None:
        self.rejected_batches += 1
        self.rejected_by_reason[reason] = self.rejected_by_reason.get(reason, 0) + 1
