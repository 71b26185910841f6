"""TS 38.214 MCS and CQI tables and the bits a PRB carries per slot.

Bits per PRB per slot are the TS 38.214 §5.1.3.2 information bits before TBS quantisation:
N_RE * R * Qm * layers, with N_RE = min(156, 12 * 14 - DMRS - overhead) per PRB.
"""

from __future__ import annotations

import bisect
import math
from typing import Literal

McsTable = Literal["qam64", "qam256"]

# TS 38.214 Table 5.1.3.1-1 (MCS index table 1, up to 64QAM): (Qm, R x 1024).
MCS_QAM64: tuple[tuple[int, float], ...] = (
    (2, 120), (2, 157), (2, 193), (2, 251), (2, 308), (2, 379), (2, 449), (2, 526),
    (2, 602), (2, 679), (4, 340), (4, 378), (4, 434), (4, 490), (4, 553), (4, 616),
    (4, 658), (6, 438), (6, 466), (6, 517), (6, 567), (6, 616), (6, 666), (6, 719),
    (6, 772), (6, 822), (6, 873), (6, 910), (6, 948),
)  # fmt: skip
# TS 38.214 Table 5.1.3.1-2 (MCS index table 2, up to 256QAM).
MCS_QAM256: tuple[tuple[int, float], ...] = (
    (2, 120), (2, 193), (2, 308), (2, 449), (2, 602), (4, 378), (4, 434), (4, 490),
    (4, 553), (4, 616), (4, 658), (6, 466), (6, 517), (6, 567), (6, 616), (6, 666),
    (6, 719), (6, 772), (6, 822), (6, 873), (8, 682.5), (8, 711), (8, 754), (8, 797),
    (8, 841), (8, 885), (8, 916.5), (8, 948),
)  # fmt: skip
# TS 38.214 Table 5.2.2.1-2 (CQI table 1) and 5.2.2.1-3 (CQI table 2); index 0 = out of range.
CQI_QAM64: tuple[tuple[int, float], ...] = (
    (0, 0), (2, 78), (2, 120), (2, 193), (2, 308), (2, 449), (2, 602), (4, 378), (4, 490),
    (4, 616), (6, 466), (6, 567), (6, 666), (6, 772), (6, 873), (6, 948),
)  # fmt: skip
CQI_QAM256: tuple[tuple[int, float], ...] = (
    (0, 0), (2, 78), (2, 193), (2, 449), (4, 378), (4, 490), (4, 616), (6, 466), (6, 567),
    (6, 666), (6, 772), (6, 873), (8, 711), (8, 797), (8, 885), (8, 948),
)  # fmt: skip

RE_PER_PRB = 156  # TS 38.214: N_RE per PRB is capped at 156
DMRS_RE_PER_PRB = 12  # one DMRS symbol, type 1


def mcs_rows(table: McsTable) -> tuple[tuple[int, float], ...]:
    return MCS_QAM256 if table == "qam256" else MCS_QAM64


def cqi_rows(table: McsTable) -> tuple[tuple[int, float], ...]:
    return CQI_QAM256 if table == "qam256" else CQI_QAM64


def spectral_efficiency(qm: int, r1024: float) -> float:
    return qm * r1024 / 1024.0


def re_per_prb(overhead: int = 0) -> int:
    return min(RE_PER_PRB, 12 * 14 - DMRS_RE_PER_PRB - overhead)


def bits_per_prb(mcs: int, table: McsTable = "qam256", layers: int = 1, overhead: int = 0) -> float:
    """Information bits one PRB carries in one slot at ``mcs`` (TS 38.214 N_info per PRB)."""
    rows = mcs_rows(table)
    if not 0 <= mcs < len(rows):
        raise ValueError(f"MCS {mcs} out of range for table {table} (0..{len(rows) - 1})")
    qm, r = rows[mcs]
    return re_per_prb(overhead) * spectral_efficiency(qm, r) * layers


class McsMapper:
    """Fast CQI -> MCS and bits -> MCS look-ups for one table, layers and overhead."""

    def __init__(self, table: McsTable = "qam256", layers: int = 1, overhead: int = 0) -> None:
        self.table = table
        self.layers = layers
        rows = mcs_rows(table)
        self.bits = [bits_per_prb(i, table, layers, overhead) for i in range(len(rows))]
        self.max_mcs = len(rows) - 1
        self._eff = [spectral_efficiency(q, r) for q, r in rows]
        self._cqi_eff = [spectral_efficiency(q, r) for q, r in cqi_rows(table)]

    def mcs_for_cqi(self, cqi: int) -> int:
        """Highest MCS whose efficiency does not exceed the CQI's (0 when CQI is 0)."""
        cqi = max(0, min(15, cqi))
        if cqi == 0:
            return -1
        eff = self._cqi_eff[cqi]
        return max(0, bisect.bisect_right(self._eff, eff + 1e-9) - 1)

    def mcs_for_bits(self, bits: float) -> int:
        """Highest MCS whose bits per PRB do not exceed ``bits`` (-1 below MCS 0)."""
        return bisect.bisect_right(self.bits, bits + 1e-9) - 1

    def cqi_for_snr(self, snr_db: float) -> int:
        """CQI from SNR with a Shannon gap of 3 dB (a common link-abstraction rule)."""
        eff = math.log2(1.0 + 10.0 ** ((snr_db - 3.0) / 10.0))
        return max(0, bisect.bisect_right(self._cqi_eff, eff + 1e-9) - 1)
