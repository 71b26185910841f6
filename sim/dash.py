"""A DASH VoD client (dash.js's model) and Octopus's DASH-H (ToN'22 §IV) over the packet-level
transport.

The set-up is ToN'22 §II-A: a dash.js client, a 30 s maximum buffer, 1.6 s segments of a
20-minute video in {360P, 720P, 1080P, 2K, 4K} at Table III's average bitrates (1.2, 3.6,
7.2, 12.0, 26.8 Mbit/s; constant-size segments: the table gives averages only), fetched one
after another over one TCP connection (``SegmentSender``: the transport of ``traffic: bulk``
with its window scheme, CUBIC by default as the paper's TCP below DASH, sending a segment's
bytes and resending lost ones).

dash.js (v3, the constants of its sources, summarised in its wiki "ABR Logic" and in Spiteri
et al., "From theory to practice: improving bitrate adaptation in the DASH reference player",
ACM TOMM 2019):

- **Throughput** (``ThroughputHistory``): one sample per segment, bytes / (last byte - first
  byte) (``useDeadTimeLatency``), and the latency first byte - request; the average of the
  last 4 samples (``AVERAGE_THROUGHPUT_SAMPLE_AMOUNT_VOD``), widened by one for every ratio of
  neighbouring samples beyond 1.3x (``THROUGHPUT_INCREASE/DECREASE_SCALE``), at most the last
  20 (``MAX_MEASUREMENTS_TO_KEEP``); latency: the mean of the last 4; the safe throughput is
  0.9x the average (``bandwidthSafetyFactor``).
- **ThroughputRule**: the highest bitrate <= safe throughput x (1 - latency / segment
  duration) (``AbrController.getQualityForBitrate``; quality 0 when the latency exceeds a
  segment), only while the buffer is loaded (>= 0.5 s, ``STALL_THRESHOLD``).
- **BolaRule** (BOLA-O with the placeholder buffer): utilities ln(bitrate) shifted to 1 at the
  lowest; buffer time max(stableBufferTime, 10 s + 2 s per bitrate) (``MINIMUM_BUFFER_S``,
  ``MINIMUM_BUFFER_PER_BITRATE_LEVEL_S``), gp = (u_max - 1) / (buffer time / 10 - 1),
  Vp = 10 / gp; quality = argmax (Vp (u_i + gp) - buffer) / bitrate_i on buffer + placeholder;
  no increase beyond the throughput rule's choice (BOLA-O); a STARTUP state that picks by
  throughput and sets the placeholder so BOLA agrees; the placeholder grows by the time
  between a segment's end and the next decision, decays by 0.99 per segment
  (``PLACEHOLDER_BUFFER_DECAY``) and is reset when the buffer runs empty; when buffer +
  placeholder exceeds Vp (u_q + gp) below the top quality, the request waits.
- **Dynamic** (``ABRStrategy: abrDynamic``, the default): BOLA while the buffer is above
  stableBufferTime (12 s), the throughput rule again once it falls to half of it (6 s).
- **Buffer target** (``ScheduleController``): stableBufferTime 12 s below the top quality,
  ``bufferTimeAtTopQuality`` 30 s at it (the paper's 30 s maximum); a segment is requested
  when it fits under the target, so the buffer never exceeds it.
- The first segment is at the lowest bitrate (dash.js's initial bitrate, 1000 kbit/s, is
  below every rung here).

DASH-H (ToN'22 §IV, Fig. 18) runs at the server: when a request asks for a lower bitrate
than the segment served before it, a handover report (Octopus's, on the path BBR-H's takes:
``e2_delay_ms`` after the handover starts, then the wired path to the server) came since the
previous request, and the buffer level the request carries is >= 5 s, the server sends the
previous bitrate instead (type A); with less buffer it allows the drop (B); a handover with
no drop (C) and a drop without a handover (D) pass. The client's ABR state follows what it
asked for (dash.js does not see the swap); the playback metrics follow what was served.

Not modelled: dash.js's InsufficientBufferRule, SwitchHistoryRule, DroppedFramesRule and
AbandonRequestsRule; the EWMA throughput estimate (dash.js's other averaging mode); VBR
segment sizes; audio; HTTP/TCP connection set-up; Linux's cwnd restart after idle (RFC
2861). Playback (re)starts when a whole segment is buffered; start-up is not a stall.
"""

from __future__ import annotations

import itertools
import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from octoric.sim.packets import Packet
from octoric.sim.transport import HEADER, TransportReceiver, TransportSender, WindowScheme

LADDER_MBPS = (1.2, 3.6, 7.2, 12.0, 26.8)  # ToN'22 Table III: 360P, 720P, 1080P, 2K, 4K
SEGMENT_S = 1.6  # ToN'22 §II-A
MAX_BUFFER_S = 30.0  # ToN'22 §II-A; dash.js bufferTimeAtTopQuality
STABLE_BUFFER_S = 12.0  # dash.js stableBufferTime
SAFETY_FACTOR = 0.9  # dash.js abr.bandwidthSafetyFactor
THROUGHPUT_SAMPLES_VOD = 4  # dash.js AVERAGE_THROUGHPUT_SAMPLE_AMOUNT_VOD
LATENCY_SAMPLES = 4  # dash.js AVERAGE_LATENCY_SAMPLE_AMOUNT
THROUGHPUT_SCALE = 1.3  # dash.js THROUGHPUT_INCREASE_SCALE = THROUGHPUT_DECREASE_SCALE
MAX_MEASUREMENTS = 20  # dash.js MAX_MEASUREMENTS_TO_KEEP
STALL_THRESHOLD_S = 0.5  # dash.js BufferController: below it the buffer is "empty"
BOLA_MIN_BUFFER_S = 10.0  # dash.js BolaRule MINIMUM_BUFFER_S
BOLA_BUFFER_PER_LEVEL_S = 2.0  # dash.js BolaRule MINIMUM_BUFFER_PER_BITRATE_LEVEL_S
PLACEHOLDER_DECAY = 0.99  # dash.js BolaRule PLACEHOLDER_BUFFER_DECAY
DASH_H_MIN_BUFFER_S = 5.0  # ToN'22 §IV: enough to fetch the next segment, even 4K

AbrName = Literal["throughput", "bola", "dynamic"]
ABRS = ("throughput", "bola", "dynamic")


@dataclass
class DashConfig:
    """A ``traffic: dash`` flow's client (``flows[].dash`` in YAML)."""

    abr: AbrName = "dynamic"
    dash_h: bool = False  # Octopus's server-side veto (ToN'22 §IV)
    ladder_mbps: list[float] = field(default_factory=lambda: list(LADDER_MBPS))
    segment_s: float = SEGMENT_S
    max_buffer_s: float = MAX_BUFFER_S
    stable_buffer_s: float = STABLE_BUFFER_S
    video_s: float = 1200.0  # a 20-minute video
    dash_h_min_buffer_s: float = DASH_H_MIN_BUFFER_S


def config_errors(c: DashConfig) -> list[tuple[str, str]]:
    """(key, message) for every invalid field (scenario validation)."""
    out = []
    if c.abr not in ABRS:
        out.append(("abr", f"abr must be one of {', '.join(ABRS)}"))
    lad = c.ladder_mbps
    if not lad or min(lad) <= 0 or any(b <= a for a, b in itertools.pairwise(lad)):
        out.append(("ladder_mbps", "ladder_mbps must be > 0 and strictly increasing"))
    if c.segment_s <= 0 or c.video_s < c.segment_s:
        out.append(("segment_s", "segment_s must be > 0 and video_s at least one segment"))
    if not c.segment_s <= c.stable_buffer_s <= c.max_buffer_s:
        out.append(("stable_buffer_s", "need segment_s <= stable_buffer_s <= max_buffer_s"))
    if c.dash_h_min_buffer_s < 0:
        out.append(("dash_h_min_buffer_s", "dash_h_min_buffer_s must be >= 0"))
    return out


# --- throughput ----------------------------------------------------------------------------
class ThroughputHistory:
    """dash.js's per-segment throughput and latency samples and their sliding-window means."""

    def __init__(self) -> None:
        self.kbps: deque[float] = deque(maxlen=MAX_MEASUREMENTS)
        self.latency_ms: deque[float] = deque(maxlen=MAX_MEASUREMENTS)

    def push(self, nbytes: int, request_us: int, first_byte_us: int, done_us: int) -> None:
        download_ms = max((done_us - first_byte_us) / 1000.0, 1.0)  # dash.js: never 0
        self.kbps.append(nbytes * 8 / download_ms)  # bits per ms = kbit/s
        self.latency_ms.append(max((first_byte_us - request_us) / 1000.0, 1.0))

    def sample_size(self) -> int:
        """4 samples, one more for each neighbouring pair among them that differs by 1.3x:
        a varying throughput is averaged over a longer window."""
        arr, n = list(self.kbps), THROUGHPUT_SAMPLES_VOD
        if n >= len(arr):
            return len(arr)
        i = 1
        while i < n:  # the bound grows with n, as in dash.js
            r = arr[-i] / arr[-i - 1]
            if r >= THROUGHPUT_SCALE or r <= 1 / THROUGHPUT_SCALE:
                n += 1
                if n == len(arr):
                    break
            i += 1
        return n

    def average_kbps(self) -> float:
        n = self.sample_size()
        return sum(list(self.kbps)[-n:]) / n if n else math.nan

    def safe_bps(self) -> float:
        return self.average_kbps() * 1000 * SAFETY_FACTOR

    def latency_s(self) -> float:
        lat = list(self.latency_ms)[-LATENCY_SAMPLES:]
        return sum(lat) / len(lat) / 1000 if lat else math.nan


def quality_for_bitrate(ladder_bps: list[float], bps: float, latency_s: float,
                        segment_s: float) -> int:  # fmt: skip
    """dash.js ``getQualityForBitrate``: the time to first byte is lost to the download, so the
    throughput shrinks by latency / segment duration; the highest bitrate under it, else 0."""
    if latency_s > segment_s:
        return 0
    if latency_s > 0:
        bps *= 1 - latency_s / segment_s
    for i in range(len(ladder_bps) - 1, -1, -1):
        if bps >= ladder_bps[i]:
            return i
    return 0


# --- ABR rules -----------------------------------------------------------------------------
@dataclass
class Decision:
    quality: int | None  # None: dash.js's NO_CHANGE (keep the current quality)
    delay_s: float = 0.0  # BOLA: wait before requesting (do not overfill with low quality)


class ThroughputRule:
    def __init__(self, ladder_bps: list[float], segment_s: float) -> None:
        self.ladder, self.segment_s = ladder_bps, segment_s

    def decide(self, hist: ThroughputHistory, buffer_s: float) -> Decision:
        safe = hist.safe_bps()
        if math.isnan(safe) or buffer_s < STALL_THRESHOLD_S:  # not BUFFER_LOADED
            return Decision(None)
        return Decision(quality_for_bitrate(self.ladder, safe, hist.latency_s(), self.segment_s))


class BolaRule:
    """dash.js's BolaRule (see the module docstring); times in µs, buffers in seconds."""

    def __init__(self, ladder_bps: list[float], segment_s: float, stable_buffer_s: float) -> None:
        self.ladder, self.segment_s = ladder_bps, segment_s
        u0 = math.log(ladder_bps[0])
        self.utility = [math.log(b) - u0 + 1 for b in ladder_bps]
        per_level = BOLA_MIN_BUFFER_S + BOLA_BUFFER_PER_LEVEL_S * len(ladder_bps)
        buffer_time = max(stable_buffer_s, per_level)
        top = len(ladder_bps) - 1
        self.gp = (self.utility[top] - 1) / (buffer_time / BOLA_MIN_BUFFER_S - 1) if top else 1.0
        self.vp = BOLA_MIN_BUFFER_S / self.gp
        self.steady = False
        self.placeholder = 0.0
        self.last_quality = 0
        self.last_segment_s: float | None = None
        self.last_call_us: int | None = None
        self.last_finish_us: int | None = None

    def quality_for_buffer(self, level: float) -> int:
        """BOLA's core: maximise (Vp (u_i + gp) - level) / bitrate_i (ties: the higher)."""
        best, score = 0, -math.inf
        for i, b in enumerate(self.ladder):
            s = (self.vp * (self.utility[i] + self.gp) - level) / b
            if s >= score:
                best, score = i, s
        return best

    def max_buffer_for(self, q: int) -> float:
        return self.vp * (self.utility[q] + self.gp)

    def min_buffer_for(self, q: int) -> float:
        """The smallest buffer level at which BOLA prefers ``q`` to every lower bitrate."""
        lo = 0.0
        bq, uq = self.ladder[q], self.utility[q]
        for i in range(q):
            bi, ui = self.ladder[i], self.utility[i]
            lo = max(lo, self.vp * (self.gp + (bq * ui - bi * uq) / (bq - bi)))
        return lo

    def on_buffer_empty(self) -> None:
        if self.steady:  # a rebuffer must not let the placeholder raise the quality
            self.placeholder = 0.0

    def on_segment_loaded(self, q: int, request_us: int, finish_us: int, buffer_s: float) -> None:
        """``checkNewSegment``: decay the placeholder and keep it under what the last segment's
        quality allowed at its request."""
        self.last_quality, self.last_segment_s = q, self.segment_s
        self.placeholder *= PLACEHOLDER_DECAY
        at_request = buffer_s + (finish_us - request_us) / 1e6
        self.placeholder = min(self.placeholder, max(0.0, self.max_buffer_for(q) - at_request))
        self.last_finish_us = finish_us

    def decide(self, hist: ThroughputHistory, buffer_s: float, now_us: int) -> Decision:
        safe = hist.safe_bps()
        if math.isnan(safe):  # no throughput sample yet
            return Decision(None)
        lat = hist.latency_s()
        if not self.steady:
            q = quality_for_bitrate(self.ladder, safe, lat, self.segment_s)
            self.placeholder = max(0.0, self.min_buffer_for(q) - buffer_s)
            self.last_quality = q
            if self.last_segment_s is not None and buffer_s >= self.last_segment_s:
                self.steady = True
            return Decision(q)
        self._grow_placeholder(now_us)
        q = self.quality_for_buffer(buffer_s + self.placeholder)
        q_tput = quality_for_bitrate(self.ladder, safe, lat, self.segment_s)
        if q > self.last_quality and q > q_tput:  # BOLA-O: no unsustainable increase
            q = max(q_tput, self.last_quality)
        delay = max(0.0, buffer_s + self.placeholder - self.max_buffer_for(q))
        if delay <= self.placeholder:
            self.placeholder -= delay
            delay = 0.0
        else:
            delay -= self.placeholder
            self.placeholder = 0.0
            if q == len(self.ladder) - 1:  # at the top the buffer target decides
                delay = 0.0
        self.last_quality = q
        return Decision(q, delay)

    def _grow_placeholder(self, now_us: int) -> None:
        """Time not spent downloading (a full buffer, BOLA's own wait) must not lower BOLA's
        view of the buffer."""
        since = self.last_finish_us if self.last_finish_us is not None else self.last_call_us
        if since is not None:
            self.placeholder += max(0.0, (now_us - since) / 1e6)
        self.last_call_us, self.last_finish_us = now_us, None


class Abr:
    """One of dash.js's strategies: throughput, BOLA, or Dynamic (BOLA above stableBufferTime,
    throughput again at half of it)."""

    def __init__(self, cfg: DashConfig) -> None:
        ladder = [b * 1e6 for b in cfg.ladder_mbps]
        self.kind = cfg.abr
        self.tput = ThroughputRule(ladder, cfg.segment_s)
        self.bola = BolaRule(ladder, cfg.segment_s, cfg.stable_buffer_s)
        self.on_s, self.off_s = cfg.stable_buffer_s, 0.5 * cfg.stable_buffer_s
        self.use_bola = cfg.abr == "bola"

    def decide(self, hist: ThroughputHistory, buffer_s: float, now_us: int) -> Decision:
        if self.kind == "dynamic":  # hysteresis, as AbrController's dynamic strategy
            self.use_bola = buffer_s > (self.off_s if self.use_bola else self.on_s)
        if self.use_bola:
            return self.bola.decide(hist, buffer_s, now_us)
        return self.tput.decide(hist, buffer_s)


# --- DASH-H --------------------------------------------------------------------------------
class DashH:
    """Octopus's server-side veto (ToN'22 §IV, Fig. 18), with its decision types counted."""

    def __init__(self, enabled: bool, min_buffer_s: float) -> None:
        self.enabled, self.min_buffer_s = enabled, min_buffer_s
        self.handover_since_last = False
        self.reports = 0
        self.types = {"A": 0, "B": 0, "C": 0, "D": 0}

    def on_handover_report(self) -> None:
        self.reports += 1
        self.handover_since_last = True

    def serve(self, requested: int, previous: int | None, buffer_s: float) -> int:
        """The quality the server sends for a request."""
        ho, self.handover_since_last = self.handover_since_last, False
        drop = previous is not None and requested < previous
        if not drop:
            if ho:
                self.types["C"] += 1
            return requested
        if not ho:
            self.types["D"] += 1
            return requested
        if buffer_s >= self.min_buffer_s:
            self.types["A"] += 1
            if self.enabled:
                assert previous is not None
                return previous
            return requested
        self.types["B"] += 1
        return requested


# --- client --------------------------------------------------------------------------------
@dataclass
class Request:
    segment: int
    quality: int  # what the client's ABR asked for
    buffer_s: float  # the buffer level the request carries (DASH-H reads it)
    sent_us: int


@dataclass
class SegmentRecord:
    requested: int
    served: int = -1
    request_us: int = 0
    first_byte_us: int = -1
    done_us: int = -1
    nbytes: int = 0


class DashClient:
    """Playback buffer, stalls and requests of one dash.js player (pure logic: the engine
    calls ``on_timer``, ``on_first_byte`` and ``on_segment_done`` at their times)."""

    def __init__(self, cfg: DashConfig, start_us: int = 0) -> None:
        self.cfg = cfg
        self.n_segments = max(1, int(cfg.video_s / cfg.segment_s + 1e-9))
        self.abr = Abr(cfg)
        self.hist = ThroughputHistory()
        self.quality = 0  # the current representation (dash.js's initial bitrate: lowest)
        self.segments: list[SegmentRecord] = []
        self.downloading = False
        self.wake_us: int | None = start_us
        self.t_us = start_us
        self.buffer_s = 0.0
        self.playing = False
        self.stalled = False  # a stall in progress (start-up is not one)
        self.started = False
        self.startup_s: float | None = None
        self.played_s = 0.0
        self.rebuffer_s = 0.0
        self.stalls = 0
        self.max_buffer_seen_s = 0.0
        self._emptied = False  # the buffer fell below dash.js's stall threshold
        self._start_us = start_us

    def buffer_target_s(self) -> float:
        top = self.quality == len(self.cfg.ladder_mbps) - 1
        return self.cfg.max_buffer_s if top else self.cfg.stable_buffer_s

    def advance(self, now_us: int) -> None:
        """Play (drain the buffer) or rebuffer from the last call until ``now_us``."""
        dt = (now_us - self.t_us) / 1e6
        self.t_us = now_us
        if dt <= 0:
            return
        if self.stalled:
            self.rebuffer_s += dt
            return
        if not self.playing:
            return
        if self.buffer_s - dt < STALL_THRESHOLD_S:
            self._emptied = True
        if dt < self.buffer_s:
            self.buffer_s -= dt
            self.played_s += dt
            return
        self.played_s += self.buffer_s
        self.playing = False
        if len(self.segments) < self.n_segments or self.downloading:
            self.stalled = True  # ran dry before the end of the video: a stall
            self.stalls += 1
            self.rebuffer_s += dt - self.buffer_s
        self.buffer_s = 0.0

    def on_timer(self, now_us: int) -> Request | None:
        """Request the next segment if there is room for it; else set ``wake_us``."""
        self.advance(now_us)
        self.wake_us = None
        if self.downloading or len(self.segments) >= self.n_segments:
            return None
        room = self.buffer_target_s() - self.buffer_s
        if room + 1e-9 < self.cfg.segment_s:
            # the buffer drains while playing: there is room once it has fallen by the rest
            self.wake_us = now_us + math.ceil((self.cfg.segment_s - room) * 1e6)
            return None
        if self._emptied:
            self.abr.bola.on_buffer_empty()
            self._emptied = False
        d = self.abr.decide(self.hist, self.buffer_s, now_us) if self.segments else Decision(None)
        if d.quality is not None:
            self.quality = d.quality
        if d.delay_s > 0:  # BOLA: wait, then ask again
            self.wake_us = now_us + math.ceil(d.delay_s * 1e6)
            return None
        self.downloading = True
        self.segments.append(SegmentRecord(self.quality, request_us=now_us))
        return Request(len(self.segments) - 1, self.quality, self.buffer_s, now_us)

    def on_first_byte(self, now_us: int) -> None:
        self.segments[-1].first_byte_us = now_us

    def on_segment_done(self, now_us: int) -> None:
        self.advance(now_us)
        rec = self.segments[-1]
        rec.done_us = now_us
        self.downloading = False
        self.buffer_s += self.cfg.segment_s
        self.max_buffer_seen_s = max(self.max_buffer_seen_s, self.buffer_s)
        self.hist.push(rec.nbytes, rec.request_us, rec.first_byte_us, now_us)
        self.abr.bola.on_segment_loaded(rec.requested, rec.request_us, now_us, self.buffer_s)
        if not self.playing:  # a whole segment buffered: playback (re)starts
            self.playing, self.stalled = True, False
            if not self.started:
                self.started = True
                self.startup_s = (now_us - self._start_us) / 1e6
        self.wake_us = now_us

    def metrics(self, now_us: int) -> dict[str, Any]:
        """Table VII's metrics over the segments played so far (ToN'22 §V-C)."""
        self.advance(now_us)
        seg = self.cfg.segment_s
        n_played = min(len(self.segments), math.ceil(self.played_s / seg - 1e-9))
        rates = [self.cfg.ladder_mbps[s.served] for s in self.segments[:n_played]]
        top = len(self.cfg.ladder_mbps) - 1
        watched = self.played_s + self.rebuffer_s
        done = [s for s in self.segments if s.done_us >= 0]
        return {
            "abr": self.cfg.abr,
            "played_segments": n_played,
            "avg_bitrate_mbps": _r(sum(rates) / n_played) if n_played else None,
            "share_4k": _r(sum(s.served == top for s in self.segments[:n_played]) / n_played, 4)
            if n_played else None,
            "oscillation_mbps": _r(oscillation_mbps(rates, seg), 4) if n_played else None,
            "stall_rate": _r(self.rebuffer_s / watched, 5) if watched > 0 else None,
            "rebuffer_s": _r(self.rebuffer_s),
            "stalls": self.stalls,
            "startup_s": _r(self.startup_s) if self.startup_s is not None else None,
            "played_s": _r(self.played_s),
            "max_buffer_s": _r(self.max_buffer_seen_s),
            "segments": len(done),
            "requested": [s.requested for s in done],
            "served": [s.served for s in done],
            "download_done_s": [_r(s.done_us / 1e6) for s in done],
        }  # fmt: skip


def oscillation_mbps(rates: list[float], segment_s: float) -> float:
    """ToN'22 Eq. 3: rho = D sum_{i>=2} |B(i) - B(i-1)| / T, T = N D the playback time of the
    N segments (Mbit/s)."""
    if not rates:
        return 0.0
    steps = sum(abs(b - a) for a, b in itertools.pairwise(rates))
    return segment_s * steps / (len(rates) * segment_s)


def _r(x: float, nd: int = 3) -> float:
    return round(float(x), nd)


# --- the server and the transport ---------------------------------------------------------
class SegmentQueue:
    """The server socket's send buffer (the transport's ``MediaQueue``): a segment's bytes in
    MSS-sized chunks, and lost chunks put back in front (TCP resends them)."""

    def __init__(self, flow: int, mss: int) -> None:
        self.flow, self.mss = flow, mss
        self.pending: deque[Packet] = deque()
        self.next_chunk = 0

    def push_segment(self, nbytes: int) -> range:
        """Queue a segment; returns its chunk ids (``Packet.msg``)."""
        first = self.next_chunk
        for off in range(0, nbytes, self.mss):
            payload = min(self.mss, nbytes - off)
            self.pending.append(Packet(self.flow, -1, payload + HEADER, 0, msg=self.next_chunk))
            self.next_chunk += 1
        return range(first, self.next_chunk)

    def send_head(self, now_us: int, seq: int) -> Packet:
        p = self.pending.popleft()
        p.seq, p.send_us = seq, now_us
        return p

    def drop_head(self) -> Packet:
        return self.pending.popleft()


class SegmentSender(TransportSender):
    """The transport of ``traffic: bulk`` sending the server's segments: reliable (a lost
    chunk goes back to the front of the send buffer), idle between segments (app-limited)."""

    def __init__(self, flow: int, scheme: WindowScheme, queue: SegmentQueue) -> None:
        super().__init__(flow, scheme, media=queue)
        self.queue = queue
        self.chunk_of: dict[int, int] = {}  # transport seq -> chunk id, while unacknowledged

    def send(self, now_us: int) -> list[Packet]:
        out = super().send(now_us)
        for p in out:
            self.chunk_of[p.seq] = p.msg
        return out

    def on_ack(self, now_us: int, seq: int) -> None:
        self.chunk_of.pop(seq, None)
        super().on_ack(now_us, seq)

    def _declare_lost(self, seq: int) -> None:
        size = self.unacked[seq].size
        super()._declare_lost(seq)
        chunk = self.chunk_of.pop(seq, None)
        if chunk is not None:
            self.queue.pending.appendleft(Packet(self.flow, -1, size, 0, msg=chunk))
            self.retransmitted_bytes += size


class DashSession:
    """One ``traffic: dash`` flow: the client, the server (DASH-H) and the socket buffer."""

    def __init__(self, cfg: DashConfig, flow: int, mss: int, start_us: int) -> None:
        self.cfg = cfg
        self.client = DashClient(cfg, start_us)
        self.dash_h = DashH(cfg.dash_h, cfg.dash_h_min_buffer_s)
        self.queue = SegmentQueue(flow, mss)
        self.last_served: int | None = None
        self.chunks: range = range(0)  # the segment in flight
        self._got: bytearray = bytearray()
        self._left = 0

    def serve(self, req: Request) -> None:
        """The request reached the server: DASH-H decides, the segment is queued."""
        q = self.dash_h.serve(req.quality, self.last_served, req.buffer_s)
        self.last_served = q
        rec = self.client.segments[req.segment]
        rec.served = q
        rec.nbytes = round(self.cfg.ladder_mbps[q] * 1e6 * self.cfg.segment_s / 8)
        self.chunks = self.queue.push_segment(rec.nbytes)
        self._got = bytearray(len(self.chunks))
        self._left = len(self.chunks)

    def on_chunk(self, chunk: int, now_us: int) -> bool:
        """A chunk reached the client; True when it completed the segment."""
        if chunk not in self.chunks:  # a duplicate from an earlier segment (spurious resend)
            return False
        k = chunk - self.chunks.start
        if self._got[k]:
            return False
        if self._left == len(self.chunks):
            self.client.on_first_byte(now_us)
        self._got[k] = 1
        self._left -= 1
        if self._left:
            return False
        self.client.on_segment_done(now_us)
        return True

    def summary(self, now_us: int) -> dict[str, Any]:
        m = self.client.metrics(now_us)
        m["dash_h"] = self.cfg.dash_h
        m["handover_reports"] = self.dash_h.reports
        m["decision_types"] = dict(self.dash_h.types)
        m["vetoes"] = sum(s.served != s.requested for s in self.client.segments if s.served >= 0)
        return m


class DashReceiver(TransportReceiver):
    """The client's socket: ACKs and counts every packet, hands its chunk to the session and
    calls ``on_done`` when a segment is complete."""

    def __init__(self, ack: Callable[[Packet, int], None], session: DashSession,
                 on_done: Callable[[int], None]) -> None:  # fmt: skip
        super().__init__(ack)
        self.session, self.on_done = session, on_done

    def on_packet(self, p: Packet, t_us: int) -> None:
        super().on_packet(p, t_us)
        if self.session.on_chunk(p.msg, t_us):
            self.on_done(t_us)


__all__ = [
    "ABRS",
    "LADDER_MBPS",
    "Abr",
    "BolaRule",
    "DashClient",
    "DashConfig",
    "DashH",
    "DashReceiver",
    "DashSession",
    "Decision",
    "Request",
    "SegmentQueue",
    "SegmentRecord",
    "SegmentSender",
    "ThroughputHistory",
    "ThroughputRule",
    "config_errors",
    "oscillation_mbps",
    "quality_for_bitrate",
]
