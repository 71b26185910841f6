"""KPM format-3 indications carrying the OCC measurements, for a ScriptedNode.

A ``SyntheticCell`` (51 PRBs) with video UEs (one frame every 40 ms, staggered) is run for
``pool_periods`` reporting periods and each period encoded once (pycrate encoding is slow);
headers are encoded per indication with contiguous collection start times, as a gNB sends.
``mode`` switches the next indications to a malformed variant.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from octoric.e2sm import kpm
from octoric.e2sm.common import Guami, UeId, ntp_timestamp
from octoric.xapps.occ import metrics as M
from octoric.xapps.occ.synthetic import SyntheticCell

GUAMI = Guami(bytes.fromhex("00f110"), 1, 1, 0)
NAMES = kpm.OCC_MEASUREMENTS


def _report(
    ue: UeId, rows: list[list[float]], granularity: int, names: tuple[str, ...]
) -> kpm.UeReport:
    recs = tuple(kpm.MeasRecord(tuple(r)) for r in rows)
    f1 = kpm.IndicationFormat1(recs, tuple(kpm.MeasInfo(n) for n in names), granularity)
    return kpm.UeReport(ue, f1)


def encode_period(
    ue_ids: list[int], records: list[dict[str, Any]], granularity: int = 1,
    names: tuple[str, ...] = NAMES, ue_kind: str = "gNB-UEID",
) -> bytes:  # fmt: skip
    """A NaN value is sent as noValue. ``ue_kind``: how the UEs are named: gNB-UEID
    (AMF-UE-NGAP-ID and GUAMI), gNB-DU-UEID (the ids are F1AP IDs) or gNB-CU-UP-UEID (E1AP IDs:
    a kind the OCC xApp cannot key)."""
    reports = []
    for u, ue in enumerate(ue_ids):
        rows = []
        for r in records:
            mcs = 20
            thp = r[M.PRB_USED][u] * r[M.BITS_PER_PRB][u]  # kbit/s at 1 slot/ms
            full = {
                M.PRB_USED: float(r[M.PRB_USED][u]),
                M.PRB_AVAIL: float(r[M.PRB_AVAIL][u]),
                M.ACTIVE_UES: int(r[M.ACTIVE_UES][u]),
                "OCC.McsDl": mcs,
                M.BITS_PER_PRB: float(r[M.BITS_PER_PRB][u]),
                M.BUFFER_BYTES: int(r[M.BUFFER_BYTES][u]),
                M.ARRIVED_BYTES: int(r[M.ARRIVED_BYTES][u]),
                "DRB.UEThpDl": float(thp),
            }
            # NaN: noValue (what a gNB sends for a granule without the value)
            rows.append([None if v != v else v for v in (full[n] for n in names)])
        if ue_kind == "gNB-DU-UEID":
            uid = UeId(ue_kind, f1ap_ids=(ue,))
        elif ue_kind == "gNB-CU-UP-UEID":
            uid = UeId(ue_kind, other={"gNB-CU-CP-UE-E1AP-ID": ue})
        else:
            uid = UeId.gnb(ue, GUAMI)
        reports.append(_report(uid, rows, granularity, names))
    return kpm.encode_kpm(kpm.KpmIndicationMessage(kpm.IndicationFormat3(tuple(reports))))


class OccIndications:
    def __init__(
        self, ue_ids: list[int], period_ms: int = 10, pool_periods: int = 8, seed: int = 1,
        ue_kind: str = "gNB-UEID",
    ) -> None:  # fmt: skip
        rng = np.random.default_rng(seed)
        n = len(ue_ids)
        self.ue_ids, self.period_ms = ue_ids, period_ms
        cell = SyntheticCell(n, prb_total=51.0)
        bits = np.array([600.0 + 80 * i for i in range(n)])
        frame_bytes = np.array([30_000.0 + 5_000 * i for i in range(n)])
        records = []
        for t in range(pool_periods * period_ms):
            arrived = np.where((t + 7 * np.arange(n)) % 40 == 0, frame_bytes, 0.0)
            records.append(cell.step(arrived, bits * rng.uniform(0.97, 1.03, n)))
        self.pool = [
            encode_period(ue_ids, records[i * period_ms : (i + 1) * period_ms], ue_kind=ue_kind)
            for i in range(pool_periods)
        ]
        one = records[:period_ms]
        self.bad = {
            "missing_metric": encode_period(
                ue_ids, one, names=tuple(x for x in NAMES if x != M.BITS_PER_PRB)
            ),
            "granularity": encode_period(ue_ids, one, granularity=10),
            "unknown_ue": encode_period(ue_ids, one, ue_kind="gNB-CU-UP-UEID"),
        }
        self.mode: str | None = None
        self.bad_left = 0
        self.bad_sent: dict[str, int] = {}
        self._base: dict[tuple[int, int], int] = {}

    def malformed(self, mode: str, count: int) -> None:
        self.mode, self.bad_left = mode, count

    def __call__(self, sub: Any, sn: int) -> tuple[bytes, bytes]:
        key = (sub.request_id.requestor_id, sub.request_id.instance_id)
        base = self._base.setdefault(key, int(time.time() * 1000))
        t0 = base + sn * self.period_ms
        header = kpm.encode_kpm(kpm.KpmIndicationHeader(ntp_timestamp(t0 / 1000.0)))
        if self.mode is not None and self.bad_left > 0:
            self.bad_left -= 1
            self.bad_sent[self.mode] = self.bad_sent.get(self.mode, 0) + 1
            msg = self.bad[self.mode]
            if self.bad_left == 0:
                self.mode = None
            return header, msg
        return header, self.pool[sn % len(self.pool)]
