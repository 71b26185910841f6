"""RoCC as the Dumbo thesis gives it (Rahmanian, "Dumbo: backlogged video congestion control",
MIT 2023, §5.2.1 and Table A.1; the algorithm is from Agarwal et al., CCmatic, HotNets 2022),
on the packet-level transport.

- cwnd = bytes acknowledged in the last (1 + gamma) x min_rtt, plus C (Eq. 5.1); gamma 0.1,
  C 1500 bytes: the window is what the path delivered in slightly more than one RTT, so
  about gamma x min_rtt of queue stands at the bottleneck.
- propagation_time = alpha x rtt_i + (1 - alpha) x propagation_time (Eq. 5.2, per ACK),
  alpha 0.95.
- Sending rate = cwnd / propagation_time (Eq. 5.3): the pacing rate and what a video encoder
  is told.
- min_rtt: the smallest RTT of the flow's life (the thesis: "observed in a long period of
  time"). A sliding window would ratchet: a backlogged RoCC never drains its standing queue,
  so after one window the smallest RTT in it is (1 + gamma) x the last one, and the queue
  grows by that factor per window.
- Approximated: before the first ACK the window is the transport's initial 10 packets (the
  thesis does not say); the thesis subtracts the receiver's ACK wait from RTT samples, which
  per-packet ACKs do not have.
"""

from __future__ import annotations

from collections import deque

from octoric.sim.transport import (
    INITIAL_CWND,
    RateSample,
    TransportSender,
    WindowContext,
    WindowScheme,
    register_window_scheme,
)


class Rocc(WindowScheme):
    """RoCC (CCmatic, HotNets 2022, as the Dumbo thesis §5.2.1 gives it, Eqs. 5.1-5.3):
    cwnd = bytes acked in the last (1 + gamma) x min_rtt + C, gamma 0.1, C 1500 B; sending
    (pacing) rate = cwnd / an EWMA of RTT (alpha 0.95); min_rtt over the flow's life. Keeps
    ~gamma x min_rtt of queue at full utilization."""

    name = "rocc"

    def __init__(self, ctx: WindowContext) -> None:
        super().__init__(ctx)
        self.gamma = float(ctx.params.get("gamma", 0.1))
        self.c_bytes = int(ctx.params.get("c_bytes", 1500))
        self.alpha = float(ctx.params.get("alpha", 0.95))
        self.acks: deque[tuple[int, int]] = deque()  # (time, bytes) of recent ACKs
        self.acked_in_window = 0
        self.min_rtt_us = 0
        self.prop_us = 0.0  # propagation_time (Eq. 5.2)
        self.window = INITIAL_CWND

    def cwnd(self) -> int:
        return self.window

    def pacing_bps(self) -> float | None:
        if self.prop_us <= 0:
            return None
        return self.window * 8e6 / self.prop_us

    def sending_bps(self, sender: TransportSender) -> float | None:
        return self.pacing_bps()

    def on_ack(self, now_us: int, rs: RateSample, sender: TransportSender) -> None:
        self.min_rtt_us = sender.min_rtt_us
        self.prop_us = (
            float(rs.rtt_us) if self.prop_us <= 0
            else self.alpha * rs.rtt_us + (1 - self.alpha) * self.prop_us
        )  # fmt: skip
        self.acks.append((now_us, rs.acked))
        self.acked_in_window += rs.acked
        horizon = now_us - int((1 + self.gamma) * self.min_rtt_us)
        acks = self.acks
        while acks and acks[0][0] < horizon:
            self.acked_in_window -= acks.popleft()[1]
        self.window = self.acked_in_window + self.c_bytes


register_window_scheme("rocc")(Rocc)
