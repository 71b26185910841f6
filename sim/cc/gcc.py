"""``gcc``: Google Congestion Control as libwebrtc runs it (delay- and loss-based parts)."""

from __future__ import annotations

import math
from collections import deque

from octoric.sim.cc.base import RateController, SchemeContext, register_scheme
from octoric.sim.receiver import FeedbackBatch


class Gcc(RateController):
    """Google Congestion Control, delay-based part as in libwebrtc (inter-arrival groups of
    5 ms, trendline estimator with window 20 and smoothing 0.9, adaptive threshold with
    k_up 0.0087 / k_down 0.039 in [6, 600] ms, AIMD with 8 %/s multiplicative and
    packet-per-response-time additive increase, beta 0.85) plus the loss-based rule
    (decrease by loss/2 above 10 % loss)."""

    name = "gcc"
    GROUP_MS = 5.0
    WINDOW = 20
    SMOOTHING = 0.9
    GAIN = 4.0
    K_UP = 0.0087
    K_DOWN = 0.039
    OVERUSE_TIME_MS = 10.0
    BETA = 0.85

    def __init__(self, ctx: SchemeContext) -> None:
        self.min_bps, self.max_bps = ctx.min_bps, ctx.max_bps
        self.rate = ctx.start_bps
        self.rtt_ms = ctx.rtt_ms
        # inter-arrival grouping
        self.g_first_send = -1.0
        self.g_last_send = 0.0
        self.g_last_arr = 0.0
        self.prev_group: tuple[float, float] | None = None
        # trendline
        self.acc = 0.0
        self.smoothed = 0.0
        self.hist: deque[tuple[float, float]] = deque()
        self._n_upd = 0
        self._ref = 0.0
        self._sx = self._sy = self._sxx = self._sxy = 0.0
        self.first_arr = -1.0
        self.num_deltas = 0
        self.trend = 0.0
        self.prev_trend = 0.0
        # overuse detector
        self.threshold = 12.5
        self.last_thr_ms = -1.0
        self.time_over = -1.0
        self.over_count = 0
        self.signal = "normal"
        # AIMD
        self.state = "increase"
        self.last_change_ms = -1.0
        self.last_decrease_ms = -1e9
        self.cap_avg = -1.0
        self.cap_var = 0.4
        self.acked: deque[tuple[int, int]] = deque()
        self.acked_bytes = 0
        self.last_max_seq = -1

    # -- trendline (inter-arrival grouping is inlined in on_feedback) -------------------
    def _trendline(self, delta_ms: float, arr_ms: float, send_d: float) -> None:
        self.num_deltas = min(self.num_deltas + 1, 1000)
        if self.first_arr < 0:
            self.first_arr = arr_ms
        self.acc += delta_ms
        self.smoothed = self.SMOOTHING * self.smoothed + (1 - self.SMOOTHING) * self.acc
        # Least-squares slope over the window with running sums of x - ref (ref re-based
        # every WINDOW updates from scratch, so rounding cannot accumulate).
        h = self.hist
        x, y = arr_ms - self.first_arr, self.smoothed
        h.append((x, y))
        self._n_upd += 1
        if len(h) > self.WINDOW:
            ox, oy = h.popleft()
            ox -= self._ref
            self._sx -= ox
            self._sy -= oy
            self._sxx -= ox * ox
            self._sxy -= ox * oy
        if self._n_upd % self.WINDOW == 0:
            self._ref = h[0][0]
            self._sx = self._sy = self._sxx = self._sxy = 0.0
            for hx, hy in h:
                hx -= self._ref
                self._sx += hx
                self._sy += hy
                self._sxx += hx * hx
                self._sxy += hx * hy
        else:
            x -= self._ref
            self._sx += x
            self._sy += y
            self._sxx += x * x
            self._sxy += x * y
        if len(h) == self.WINDOW:
            n = self.WINDOW
            den = self._sxx - self._sx * self._sx / n
            if den > 1e-9:
                self.trend = (self._sxy - self._sx * self._sy / n) / den
        self._detect(send_d, arr_ms)

    def _detect(self, ts_delta: float, now_ms: float) -> None:
        if self.num_deltas < 2:
            self.signal = "normal"
            return
        mt = min(self.num_deltas, 60) * self.trend * self.GAIN
        if mt > self.threshold:
            if self.time_over < 0:
                self.time_over = ts_delta / 2
            else:
                self.time_over += ts_delta
            self.over_count += 1
            if (
                self.time_over > self.OVERUSE_TIME_MS
                and self.over_count > 1
                and self.trend >= self.prev_trend
            ):
                self.time_over = 0.0
                self.over_count = 0
                self.signal = "overuse"
        elif mt < -self.threshold:
            self.time_over = -1.0
            self.over_count = 0
            self.signal = "underuse"
        else:
            self.time_over = -1.0
            self.over_count = 0
            self.signal = "normal"
        self.prev_trend = self.trend
        if self.last_thr_ms < 0:
            self.last_thr_ms = now_ms
        if abs(mt) > self.threshold + 15.0:
            self.last_thr_ms = now_ms
            return
        k = self.K_DOWN if abs(mt) < self.threshold else self.K_UP
        dt = min(now_ms - self.last_thr_ms, 100.0)
        self.threshold += k * (abs(mt) - self.threshold) * dt
        self.threshold = min(max(self.threshold, 6.0), 600.0)
        self.last_thr_ms = now_ms

    # -- AIMD ---------------------------------------------------------------------------
    def _acked_bps(self, now_us: int) -> float | None:
        a = self.acked
        while a and a[0][0] < now_us - 500_000:
            self.acked_bytes -= a.popleft()[1]
        if len(a) < 2:
            return None
        span = max(now_us - a[0][0], 100_000)
        return self.acked_bytes * 8e6 / span

    def _aimd(self, now_us: int, loss: float) -> None:
        now_ms = now_us / 1000.0
        acked = self._acked_bps(now_us)
        sig = self.signal
        if sig == "overuse":
            self.state = "decrease"
        elif sig == "underuse":
            self.state = "hold"
        elif self.state == "hold":
            self.state = "increase"
        if self.last_change_ms < 0:
            self.last_change_ms = now_ms
        dt_s = min(max(now_ms - self.last_change_ms, 0.0) / 1000.0, 1.0)
        rate = self.rate
        if self.state == "increase":
            if acked is not None and self.cap_avg > 0:
                std = math.sqrt(self.cap_var * self.cap_avg)
                if acked > self.cap_avg + 3 * std:
                    self.cap_avg = -1.0  # link capacity estimate is stale
            if self.cap_avg > 0:
                bits_per_frame = rate / 30.0
                pkts = max(1.0, math.ceil(bits_per_frame / (1200 * 8)))
                avg_pkt_bits = bits_per_frame / pkts
                resp_s = (self.rtt_ms + 100.0) / 1000.0
                rate += max(4000.0, avg_pkt_bits / resp_s) * dt_s
            else:
                rate += max(rate * (1.08**dt_s - 1.0), 1000.0 * dt_s)
            if acked is not None:
                rate = min(rate, 1.5 * acked + 10e3)
        elif self.state == "decrease":
            rtt = min(max(self.rtt_ms, 10.0), 200.0)
            if acked is not None and now_ms - self.last_decrease_ms >= rtt:
                new = self.BETA * acked
                if new > rate and self.cap_avg > 0:
                    new = self.BETA * self.cap_avg
                rate = min(rate, new)
                self._update_capacity(acked)
                self.last_decrease_ms = now_ms
            self.state = "hold"
        if loss > 0.10:
            rate *= 1.0 - 0.5 * loss
        self.rate = min(max(rate, self.min_bps), self.max_bps)
        self.last_change_ms = now_ms

    def _update_capacity(self, acked_bps: float) -> None:
        x = acked_bps / 1000.0
        if self.cap_avg < 0:
            self.cap_avg = acked_bps
            return
        avg = self.cap_avg / 1000.0
        avg = 0.95 * avg + 0.05 * x
        norm = max(avg, 1.0)
        self.cap_var = 0.95 * self.cap_var + 0.05 * (avg - x) ** 2 / norm
        self.cap_var = min(max(self.cap_var, 0.4), 2.5)
        self.cap_avg = avg * 1000.0

    # -- interface ----------------------------------------------------------------------
    def on_feedback(self, now_us: int, fb: FeedbackBatch) -> None:
        if not fb.seqs:
            self._aimd(now_us, 0.0)
            return
        rows = sorted(zip(fb.seqs, fb.send_us, fb.recv_us, fb.sizes, strict=True))
        acked = self.acked
        total = 0
        # Inter-arrival groups of 5 ms by send time (inlined: the per-packet hot path)
        gfs, gls, gla = self.g_first_send, self.g_last_send, self.g_last_arr
        group_ms = self.GROUP_MS
        for _, send_us, recv_us, size in rows:
            acked.append((recv_us, size))
            total += size
            send_ms = send_us / 1000.0
            arr_ms = recv_us / 1000.0
            if gfs < 0:
                gfs, gls, gla = send_ms, send_ms, arr_ms
            elif send_ms - gfs <= group_ms:
                if send_ms > gls:
                    gls = send_ms
                if arr_ms > gla:
                    gla = arr_ms
            else:
                prev = self.prev_group
                if prev is not None:
                    send_d = gls - prev[0]
                    self._trendline((gla - prev[1]) - send_d, gla, send_d)
                self.prev_group = (gls, gla)
                gfs, gls, gla = send_ms, send_ms, arr_ms
        self.g_first_send, self.g_last_send, self.g_last_arr = gfs, gls, gla
        self.acked_bytes += total
        hi = rows[-1][0]
        expected = hi - self.last_max_seq if self.last_max_seq >= 0 else len(fb.seqs)
        self.last_max_seq = max(self.last_max_seq, hi)
        loss = max(0.0, 1.0 - len(fb.seqs) / expected) if expected > 0 else 0.0
        self._aimd(now_us, loss)

    def target_bps(self, now_us: int) -> float:
        return self.rate


register_scheme("gcc")(Gcc)
