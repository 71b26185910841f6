"""``mahimahi``: a Mahimahi delivery trace as the cell's capacity, with the MCS a gNB
would report from it."""

from __future__ import annotations

import math

import numpy as np

from octoric.sim.channels import gnb_view
from octoric.sim.channels.base import ChannelContext
from octoric.sim.channels.traces import read_mahimahi

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

    ``report = "gnb"`` (``gnb_view``): deliveries spread evenly over each period, reported as
    a gNB would (an MCS and a PRB share, others' PRBs, noValue without a grant); ``reported``
    then gives the period's true capacity on all PRBs (what PBE-CC's PHY view measures).
    """

    def __init__(
        self,
        ctx: ChannelContext,
        path: str,
        offset_ms: int = 0,
        csi_period_ms: int = 20,
        report: str = "capacity",
    ) -> None:
        self.trace = read_mahimahi(path)
        self.ctx = ctx
        self.offset = offset_ms
        self.report_mode = report
        self.gnb: gnb_view.GnbPlan | None = None
        # At low rates a CSI period may hold no 1500-byte delivery although the link is up
        # (EV-DO at 0.45 Mbit/s: one packet per 27 ms), so the period is at least
        # MIN_PACKETS mean inter-delivery times: only a longer silence reads as an outage.
        n_del = max(1, self.trace.deliveries)
        self.la_period_ms = (
            max(csi_period_ms, math.ceil(MIN_PACKETS * self.trace.period_ms / n_del))
            if csi_period_ms > 0
            else 0
        )
        if report == "gnb" and self.la_period_ms == 0:
            raise ValueError("report 'gnb' needs a CSI period (csi_period_ms > 0)")
        self.set_deliveries(self.trace.bytes_per_ms * 8.0 / ctx.n_prb)

    def set_deliveries(self, bits_per_ms: np.ndarray) -> None:
        """Replace what the trace delivers per ms and PRB (e.g. spread over blocks); the
        reported MCS follows."""
        self.bits_per_ms = np.asarray(bits_per_ms, dtype=np.float64)
        if self.report_mode == "gnb":
            ctx = self.ctx
            one_layer = np.asarray(ctx.mapper.bits) / ctx.mapper.layers
            self.gnb = gnb_view.plan(self.bits_per_ms * ctx.n_prb, self.la_period_ms, ctx.n_prb,
                                     one_layer, ctx.slot_us, ctx.mapper.layers)  # fmt: skip
            self.bits_per_ms = self.gnb.delivered_bits / ctx.n_prb
            self.reported_per_ms = self.bits_per_ms
            return
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

    def gnb_slots(self, start_slot: int, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``report = "gnb"``: per slot, the MCS, bits per PRB and the UE's PRBs (``GnbPlan``)."""
        assert self.gnb is not None
        i = self._ms(start_slot, n)
        return self.gnb.mcs[i], self.gnb.bits_per_prb[i], self.gnb.prbs[i]

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
