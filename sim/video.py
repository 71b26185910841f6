"""Real-time video sender side: frame source, encoder model, packetizer, pacer, wired path.

Frames are split into *messages* (a whole frame, or one SVC spatial layer of a frame);
each message is the unit the receiver decodes and the Octopus dropper drops. The flow keeps
its message table in flat lists (``MessageTable``) so packets carry only an index.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from octoric.contracts.octopus_header import OctopusHeader
from octoric.sim.packets import Packet
from octoric.sim.vbv_encoder import VbvEncoder

SvcMode = Literal["none", "temporal", "spatial"]
EncoderModel = Literal["lag", "x264"]
Packetization = Literal["full", "equal"]


@dataclass
class VideoConfig:
    fps: float = 30.0
    gop: int = 300  # frames per GoP (first frame is an I-frame); 0 = only the first frame
    i_ratio: float = 4.0  # I-frame size / P-frame size
    complexity_std: float = 0.15  # content complexity: log-normal AR(1) spread
    complexity_corr_s: float = 2.0
    lag_ms: float = (
        100.0  # encoder output follows its target with this time constant (OCC: ~103 ms)
    )
    overshoot_std: float = 0.1  # per-frame size noise (log-normal sigma)
    # "lag": output follows the target with lag_ms (VideoEncoder); "x264": one-pass ABR
    # inside a VBV buffer of vbv_frames frames (vbv_encoder.VbvEncoder, OCC Fig. 15)
    encoder: EncoderModel = "lag"
    vbv_frames: float = 4.0
    svc: SvcMode = "none"
    spatial_cumulative: list[float] = field(default_factory=lambda: [0.2, 0.5, 1.0])
    mtu: int = 1200  # payload bytes per packet (Octopus header included when enabled)
    # a frame's packets: "full" fills each to mtu and the last takes the rest; "equal"
    # splits it into the fewest packets of at most mtu, their sizes within a byte of each
    # other (libwebrtc's RtpPacketizer::SplitAboutEqually, which its VP8, VP9 and H.264
    # packetizers use), so a frame's last packet is not a small remainder behind full ones
    packetization: Packetization = "full"
    pacing_multiplier: float = 2.5  # the pacing rate over the target (GoogCC's default)
    # the pacer may send at once while its debt stays under this long at the pacing rate
    # (libwebrtc's PacingController send_burst_interval, 40 ms by default since M11x; a frame
    # then leaves as one burst); 0: every packet waits for the previous one's time
    pacer_burst_ms: float = 0.0
    # bytes every packet carries on the wire besides its payload (IPv4/UDP, SRTP, RTP and its
    # header extensions); libwebrtc subtracts their rate from the encoder's target
    # (send-side BWE with overhead); 0: packets are their payload
    packet_overhead_bytes: int = 0
    # the bytes a packet costs in the sender's own rate accounting, which takes their rate
    # (at packets of mtu + packet_overhead_bytes) off the network rate before the encoder
    # gets it; None: packet_overhead_bytes. Right after the network rate falls by 10 % or
    # more, for target_decrease_s, target_decrease_overhead_bytes instead (None: the same)
    target_overhead_bytes: int | None = None
    target_decrease_overhead_bytes: int | None = None
    target_decrease_s: float = 3.0
    # the packet size (wire bytes) at which that accounting counts packets; None: mtu +
    # packet_overhead_bytes (libwebrtc counts at its maximum RTP packet size, not at the
    # smaller payload its packetizer leaves room for FEC and RTX in)
    rate_packet_bytes: int | None = None
    octopus: bool = False  # mark packets with the Octopus header
    min_bps: float = 50e3
    max_bps: float = 200e6
    # the receiver asks for a key frame (RTCP PLI) when decoding is stuck on a lost reference,
    # and the sender's next frame is one (WebRTC; sim/receiver.py). Off: a loss leaves the
    # frames that depend on it undecodable until the next GoP
    keyframe_on_loss: bool = False
    # ICE connectivity checks between the two agents over the media path (sim/ice.py): in an
    # outage they go unanswered and, unreliable, the sender discards its media and the
    # receiver its feedback until a response gets through (WebRTC). Off: the path is always up
    ice_checks: bool = False
    # picture quality (sim/quality.py): the measured rate -> SSIM/PSNR curve of this content
    # ("camera": a fixed camera over a street scene; "animation"), the resolution it is
    # encoded at, what SVC costs, and SQI-SSIM's decay of a frozen picture
    quality_model: str = "camera"
    width: int = 1280
    height: int = 720
    svc_overhead: float = 0.165  # Octopus SEC'23 §6.1: VP8-SVC frames 15-18 % larger
    sqi_decay_s: float = 1.0


# libwebrtc's default key frame interval for VP8, VP9 and H.264 (VideoEncoder::
# GetDefault*Settings: keyFrameInterval 3000): key frames at the start and on request only.
WEBRTC_KEY_FRAME_INTERVAL = 3000
# libwebrtc's pacer burst interval (PacingController::kDefaultBurstInterval, M125)
WEBRTC_PACER_BURST_MS = 40.0
# the pacing rate over the estimate for a video stream: GoogCC's 2.5 is its default, but a
# video send stream with transport-wide sequence numbers (every Chromium call) sets its own,
# kStrictPacingMultiplier 1.1 (M125 VideoSendStreamImpl, no ALR or rate-control field trial);
# Chromium 156 measured: the clip's 26 kB scene-cut frame left over 196 ms at ~1.1x its
# 0.9 Mbit/s estimate (tests/sim/test_webrtc_packetization.py)
WEBRTC_VIDEO_PACING_FACTOR = 1.1
# a WebRTC video packet's bytes besides its payload, measured on Debian's Chromium 156
# (issue #47): RTP header with extensions 25 (getStats headerBytesSent / packetsSent), SRTP
# and the transport's ~12 (candidate-pair bytesSent over outbound-rtp's), IPv4 + UDP 28
WEBRTC_PACKET_OVERHEAD_BYTES = 65
# the most payload libwebrtc puts in a video packet, measured on Debian's Chromium 156 (VP8,
# three calls' event logs: 1108 bytes, RTP header 24): its maximum RTP packet of 1200 bytes
# less the room RTPSenderVideo keeps for ULPFEC/RED and RTX headers (M125); a frame is
# split about equally into the fewest such packets
WEBRTC_MAX_PAYLOAD_BYTES = 1108
# the packet size the reserve below was measured at (1200 payload + 65): libwebrtc counts
# the overhead's packets at its maximum RTP packet size, not at the packetizer's payload
WEBRTC_RATE_PACKET_BYTES = 1265
# what Chromium 156 takes off its estimate before its encoder gets it, per packet at packets
# of 1265 bytes (docs/sim.md "Against Chromium", item 10): getStats' targetBitrate against
# availableOutgoingBitrate in five event-log calls (tests/sim/vectors/chromium-target-share):
# median 131 bytes in steady state (p25 119, p75 169; M125's RtpVideoSender would take ~68:
# its header estimate and the transport's), 220 bytes in the 3 s after a fall of 10 % or
# more (p25 176, p75 255); what makes it more than 68 is not in M125's source
WEBRTC_TARGET_OVERHEAD_BYTES = 131
WEBRTC_TARGET_DECREASE_OVERHEAD_BYTES = 220


def webrtc_video(**overrides: Any) -> VideoConfig:
    """The video of a WebRTC sender as the OCC paper ran it (§6: WebRTC with libx264): the
    x264-like encoder inside a VBV buffer of 4 frames, libwebrtc's key frame interval of 3000
    frames (100 s at 30 fps), a key frame on the receiver's request (PLI) when a loss
    stops decoding, and ICE's connectivity checks on the media path. GCC, OCC and PBE
    comparisons use it on both sides."""
    cfg: dict[str, Any] = {
        "encoder": "x264", "vbv_frames": 4.0, "gop": WEBRTC_KEY_FRAME_INTERVAL,
        "keyframe_on_loss": True, "pacer_burst_ms": WEBRTC_PACER_BURST_MS,
        "pacing_multiplier": WEBRTC_VIDEO_PACING_FACTOR,
        "ice_checks": True,
        "mtu": WEBRTC_MAX_PAYLOAD_BYTES, "packetization": "equal",
        "packet_overhead_bytes": WEBRTC_PACKET_OVERHEAD_BYTES,
        "rate_packet_bytes": WEBRTC_RATE_PACKET_BYTES,
        "target_overhead_bytes": WEBRTC_TARGET_OVERHEAD_BYTES,
        "target_decrease_overhead_bytes": WEBRTC_TARGET_DECREASE_OVERHEAD_BYTES,
    }  # fmt: skip
    cfg.update(overrides)
    return VideoConfig(**cfg)


@dataclass
class MessageTable:
    """Flat per-message arrays of one flow (index = message number)."""

    frame: list[int] = field(default_factory=list)
    layer: list[int] = field(default_factory=list)
    size: list[int] = field(default_factory=list)
    npkts: list[int] = field(default_factory=list)
    deps: list[tuple[int, ...]] = field(default_factory=list)
    enc_us: list[int] = field(default_factory=list)


@dataclass
class FrameTable:
    enc_us: list[int] = field(default_factory=list)
    size: list[int] = field(default_factory=list)
    base_msg: list[int] = field(default_factory=list)
    nmsgs: list[int] = field(default_factory=list)
    target_bps: list[float] = field(default_factory=list)
    sent_us: list[int] = field(default_factory=list)  # last packet left the pacer (-1: not yet)
    # the rate the encoder gave this frame's content: its bits over its complexity, per
    # second (what sets its picture quality; sim/quality.py)
    quality_bps: list[float] = field(default_factory=list)


# Temporal SVC (3 temporal layers over a GoP): frame position -> (priority, threshold, weight).
# I: prio 0 thr 0 (drops everything older); TL0 P: prio 1 thr 2 (TL0 chain is never dropped
# by later TL0 frames); TL1: prio 2 thr 2; TL2: prio 3 thr 3. See docs/sim.md.
def temporal_role(j: int) -> tuple[int, int, int, float]:
    """(temporal layer or -1 for I, priority, threshold, size weight) of GoP position j."""
    if j == 0:
        return -1, 0, 0, 1.0
    k = j % 4
    if k == 0:
        return 0, 1, 2, 1.3
    if k == 2:
        return 1, 2, 2, 1.0
    return 2, 3, 3, 0.8


class VideoEncoder:
    """Frame sizes from a target rate: first-order lag, I/P ratio, complexity, noise."""

    def __init__(self, cfg: VideoConfig, rng: np.random.Generator, start_bps: float) -> None:
        self.cfg = cfg
        self.rng = rng
        self.rate = start_bps
        self.dt = 1.0 / cfg.fps
        self.alpha = 1.0 - math.exp(-self.dt * 1000.0 / max(cfg.lag_ms, 1e-3))
        self.quality_bps = start_bps
        self.cx = 0.0
        self.cx_a = math.exp(-self.dt / max(cfg.complexity_corr_s, 1e-3))
        g = cfg.gop if cfg.gop > 0 else 10**9
        self.gop = g
        # Mean weight per GoP, so the encoder's average output equals its rate.
        if cfg.svc == "temporal":
            ws = [cfg.i_ratio if j == 0 else temporal_role(j)[3] for j in range(min(g, 240))]
            self.norm = sum(ws) / len(ws)
        else:
            n = min(g, 10**6)
            self.norm = (cfg.i_ratio + (n - 1)) / n

    def frame_bytes(self, target_bps: float, weight: float) -> int:
        cfg = self.cfg
        self.rate += self.alpha * (target_bps - self.rate)
        self.cx = self.cx_a * self.cx + self.rng.normal(0.0, cfg.complexity_std) * math.sqrt(
            1 - self.cx_a * self.cx_a
        )
        noise = self.rng.normal(0.0, cfg.overshoot_std) if cfg.overshoot_std > 0 else 0.0
        mean = self.rate * self.dt / 8.0 * weight / self.norm
        size = max(64, int(mean * math.exp(self.cx + noise)))
        # bits per unit of content complexity, per second (the complexity is what makes the
        # frame larger without making it better)
        self.quality_bps = size * 8.0 / (self.dt * weight / self.norm * math.exp(self.cx))
        return size


PACER_MAX_QUEUE_US = 2_000_000  # libwebrtc PacingController::kMaxExpectedQueueLength
PROBE_MIN_DELTA_US = 2_000  # libwebrtc BitrateProber min_probe_delta (padding size: 2 deltas)
PADDING_MIN_BYTES = 50


@dataclass(frozen=True)
class ProbeCluster:
    """A bandwidth probe the pacer sends (libwebrtc ProbeClusterConfig): at ``bps``, until at
    least ``min_probes`` packets and ``min_bytes`` bytes have gone out."""

    id: int
    bps: float
    min_probes: int
    min_bytes: int


@dataclass
class SentBatch:
    """What the pacer sent (libwebrtc's SentPacket with its PacedPacketInfo), per packet:
    transport sequence number, send time, size, probe cluster id (-1: not a probe)."""

    seqs: list[int] = field(default_factory=list)
    send_us: list[int] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)
    cluster: list[int] = field(default_factory=list)


class _ActiveProbe:
    __slots__ = ("bytes", "cluster", "packets")

    def __init__(self, cluster: ProbeCluster) -> None:
        self.cluster = cluster
        self.packets = 0
        self.bytes = 0


class VideoSender:
    """Generates frames, packetizes and paces them. The engine calls ``on_frame``."""

    def __init__(
        self, flow: int, stream_id: int, cfg: VideoConfig, rng: np.random.Generator,
        start_bps: float,
    ) -> None:  # fmt: skip
        self.flow = flow
        self.stream_id = stream_id
        self.cfg = cfg
        self.enc: VideoEncoder | VbvEncoder = (
            VbvEncoder(cfg, rng, start_bps) if cfg.encoder == "x264"
            else VideoEncoder(cfg, rng, start_bps)
        )  # fmt: skip
        self.msgs = MessageTable()
        self.frames = FrameTable()
        self.seq = 0
        self.msg_id = 0
        self.pacer_us = 0.0  # the pacer is busy until then
        self.pace_bps = 1e3  # the rate it last paced at
        self.pending: deque[Packet] = deque()  # queued, not yet sent (send_us = enqueue time)
        self.pending_bytes = 0
        self.last_in_layer: dict[int, int] = {}  # temporal: layer -> last msg (within GoP)
        self.prev_frame_msgs: list[int] = []
        self.gop_bps = start_bps
        self.sent_bytes = 0  # encoded (media) bytes
        self.padding_bytes = 0  # probe padding bytes sent
        self.skipped_frames = 0  # frames the encoder skipped (``skip_frame``)
        self.skipped_us: list[int] = []  # their capture times (SQI-SSIM scores them)
        self.gop_start = 0  # frame index of the current GoP's I-frame
        self.key_requested = False  # a key frame request (PLI) waits for the next frame
        self.keyframes_requested = 0  # requests that started a new GoP
        self.probes: deque[_ActiveProbe] = deque()  # clusters to send, the first is active
        self.record_sent = False  # keep a SentBatch for the rate controller (``take_sent``)
        self.sent_log = SentBatch()
        self.last_network_bps = 0.0  # payload_bps' last network rate and when it fell
        self.decrease_us = -(1 << 62)

    def add_probe(self, cluster: ProbeCluster) -> None:
        """Queue a probe cluster (libwebrtc BitrateProber::CreateProbeCluster): the pacer
        sends it from its next release at the cluster's rate, queued media first, padding
        (transport-sequenced, no media payload) when the queue is empty."""
        self.probes.append(_ActiveProbe(cluster))

    def take_sent(self) -> SentBatch:
        b = self.sent_log
        self.sent_log = SentBatch()
        return b

    def on_frame(self, now_us: int, target_bps: float, until_us: int | None = None) -> list[Packet]:
        """Encode and queue one frame; returns what the pacer sends until ``until_us``
        (the next frame: the rest waits in the queue and is paced at the next call's
        rate; None sends the whole queue now)."""
        target = self.encode(now_us, target_bps)
        return self.release(now_us, target, until_us)

    def encode(self, now_us: int, target_bps: float) -> float:
        """Encode one frame at ``target_bps`` and queue its packets in ``pending`` (the media
        queue; ``send_us`` is the enqueue time until a pacer or transport sends them).
        Returns the target, clamped to the configured range."""
        cfg = self.cfg
        f = len(self.frames.enc_us)
        if self.key_requested:  # PLI: this frame starts a GoP
            self.key_requested = False
            self.gop_start = f
            self.keyframes_requested += 1
        j = (f - self.gop_start) % self.enc.gop
        target = min(max(target_bps, cfg.min_bps), cfg.max_bps)
        msgs: list[tuple[int, tuple[int, ...], OctopusHeader | None, int]] = []
        mt = self.msgs
        if cfg.svc == "spatial":
            if j == 0:
                self.gop_bps = target
            total = self.enc.frame_bytes(target, cfg.i_ratio if j == 0 else 1.0)
            cum = cfg.spatial_cumulative
            prev = 0.0
            for k, c in enumerate(cum):
                size = max(32, int(total * (c - prev)))
                prev = c
                deps_l: list[int] = []
                if k > 0:
                    deps_l.append(len(mt.size) + len(msgs) - 1)  # lower layer of this frame
                if j > 0 and k < len(self.prev_frame_msgs):
                    deps_l.append(self.prev_frame_msgs[k])  # same layer of the previous frame
                thr_kbps = 0 if k == 0 else int(self.gop_bps * c / 1000.0)
                hdr = self._hdr(prio=k, drop=(k == 0 and j == 0), thr=0, br=thr_kbps)
                msgs.append((size, tuple(deps_l), hdr, k))
        elif cfg.svc == "temporal":
            tl, prio, thr, w = temporal_role(j)
            size = self.enc.frame_bytes(target, cfg.i_ratio if j == 0 else w)
            if j == 0:
                self.last_in_layer = {}
                deps_t: tuple[int, ...] = ()
            else:
                cands = [m for layer, m in self.last_in_layer.items() if layer < max(tl, 1)]
                deps_t = (max(cands),) if cands else ()
            hdr = self._hdr(prio=prio, drop=True, thr=thr, br=0)
            msgs.append((size, deps_t, hdr, max(tl, 0)))
            self.last_in_layer[tl] = len(mt.size)
        else:
            size = self.enc.frame_bytes(target, cfg.i_ratio if j == 0 else 1.0)
            deps_n = (self.prev_frame_msgs[0],) if j > 0 and self.prev_frame_msgs else ()
            hdr = self._hdr(prio=0, drop=False, thr=0, br=0)
            msgs.append((size, deps_n, hdr, 0))
        pkts: list[Packet] = []
        frame_msgs = []
        total_size = 0  # payload (the frame's size)
        wire_overhead = 0  # the packets' header bytes on top of it
        flow = self.flow
        seq = self.seq
        equal = cfg.packetization == "equal"
        for size, deps, hdr, layer in msgs:
            m = len(mt.size)
            frame_msgs.append(m)
            n = max(1, math.ceil(size / cfg.mtu))
            mt.frame.append(f)
            mt.layer.append(layer)
            mt.size.append(size)
            mt.npkts.append(n)
            mt.deps.append(deps)
            mt.enc_us.append(now_us)
            total_size += size
            mtu = cfg.mtu
            ovh = cfg.packet_overhead_bytes
            wire_overhead += n * ovh
            for i in range(n):
                if equal:  # the first size % n packets one byte larger
                    psize = size // n + (i < size % n) + ovh
                else:
                    psize = (mtu if i < n - 1 else size - mtu * (n - 1)) + ovh
                h = None
                if hdr is not None:
                    h = OctopusHeader(
                        hdr.stream_id, hdr.msg_id, i == 0, i == n - 1, hdr.priority,
                        hdr.drop, hdr.priority_threshold, hdr.bitrate_threshold_kbps,
                    )  # fmt: skip
                pkts.append(Packet(flow, seq, psize, now_us, m, h))
                seq += 1
        self.seq = seq
        self.pending.extend(pkts)
        self.pending_bytes += total_size + wire_overhead
        self.prev_frame_msgs = frame_msgs
        fr = self.frames
        fr.enc_us.append(now_us)
        fr.size.append(total_size)
        fr.base_msg.append(frame_msgs[0])
        fr.nmsgs.append(len(frame_msgs))
        fr.target_bps.append(target)
        fr.sent_us.append(-1)
        fr.quality_bps.append(self.enc.quality_bps)
        self.sent_bytes += total_size
        return target

    def payload_bps(self, network_bps: float, now_us: int) -> float:
        """The encoder's share of a network rate at ``now_us``: the packets' overhead at that
        rate taken off (libwebrtc's RtpVideoSender: the rate over full packets, rounded up
        to whole packets a second, times a packet's overhead; ``target_overhead_bytes``,
        more in the ``target_decrease_s`` after the rate fell by 10 % or more)."""
        cfg = self.cfg
        ovh = cfg.packet_overhead_bytes if cfg.target_overhead_bytes is None \
            else cfg.target_overhead_bytes  # fmt: skip
        if network_bps < 0.9 * self.last_network_bps:
            self.decrease_us = now_us
        self.last_network_bps = network_bps
        if (cfg.target_decrease_overhead_bytes is not None
                and now_us - self.decrease_us < cfg.target_decrease_s * 1e6):  # fmt: skip
            ovh = cfg.target_decrease_overhead_bytes
        if ovh <= 0:
            return network_bps
        return max(network_bps - ovh * 8.0 * self.packet_rate(network_bps), 0.0)

    def packet_rate(self, network_bps: float) -> int:
        """Packets a second at a network rate as libwebrtc's RtpVideoSender counts them for
        its overhead: full packets (``rate_packet_bytes``), rounded up."""
        cfg = self.cfg
        size = cfg.rate_packet_bytes or cfg.mtu + cfg.packet_overhead_bytes
        return math.ceil(network_bps / 8.0 / size)

    def send_head(self, now_us: int, seq: int) -> Packet:
        """The media queue's head leaves now (a transport sends it): stamped with its send time
        and transport sequence number, its frame marked sent, as the pacer's ``release``."""
        p = self.pending.popleft()
        self.pending_bytes -= p.size
        p.seq, p.send_us = seq, now_us
        self.frames.sent_us[self.msgs.frame[p.msg]] = now_us
        return p

    def drop_head(self) -> Packet:
        """The media queue's head is dropped unsent (the Octopus transport buffer)."""
        p = self.pending.popleft()
        self.pending_bytes -= p.size
        return p

    def request_keyframe(self) -> None:
        """The receiver asked for a key frame (RTCP PLI): the next frame encoded is an I-frame
        and starts a GoP (requests before it is encoded are one)."""
        self.key_requested = True

    def skip_frame(self, now_us: int) -> None:
        """The encoder skips a frame (Dumbo's latency control: the media queue would take too
        long to drain): nothing is encoded, the next frame refers to the last one encoded."""
        self.skipped_frames += 1
        self.skipped_us.append(now_us)

    def release(self, now_us: int, target_bps: float, until_us: int | None = None) -> list[Packet]:
        """The queued packets the pacer sends in [now, until) (all of them if ``until`` is
        None), each stamped with its send time.

        The pacing rate is ``pacing_multiplier`` x the target *now*, applied to the whole
        queue, so packets queued at a low rate go out at the new rate once the target rises
        (libwebrtc's PacingController); and it is raised so that the queue drains within
        2 s of its oldest packet's enqueue time (kMaxExpectedQueueLength)."""
        cfg = self.cfg
        pending = self.pending
        target = min(max(target_bps, cfg.min_bps), cfg.max_bps)
        pace_bps = max(target * cfg.pacing_multiplier, 1e3)
        # the last packet sent may still be "on the wire" at the old rate: its remaining
        # bits go at the new one (a media budget, not a fixed departure time)
        debt_bits = max(self.pacer_us - now_us, 0.0) * self.pace_bps / 1e6
        if pending:
            left_us = max(pending[0].send_us + PACER_MAX_QUEUE_US - now_us, 1000.0)
            pace_bps = max(pace_bps, (self.pending_bytes * 8 + debt_bits) * 1e6 / left_us)
        t = now_us + debt_bits * 1e6 / pace_bps
        out: list[Packet] = []
        if self.probes:
            t = self._probe(max(float(now_us), self.pacer_us), until_us, out)
        us_per_byte = 8e6 / pace_bps
        log = self.sent_log if self.record_sent else None
        if cfg.pacer_burst_ms > 0.0:
            return self._release_bursts(now_us, t, pace_bps, debt_bits, until_us, out)
        while pending and (until_us is None or t < until_us):
            p = pending.popleft()
            self._sent(p, int(t), out, log)
            t += p.size * us_per_byte
        self.pacer_us = t
        self.pace_bps = pace_bps
        return out

    def _sent(self, p: Packet, send_us: int, out: list[Packet], log: SentBatch | None) -> None:
        """The pacer sends ``p`` at ``send_us``: stamped, its frame marked sent, reported to
        the rate controller (``log``, a ``SentBatch``) if it asked."""
        p.send_us = send_us
        self.frames.sent_us[self.msgs.frame[p.msg]] = send_us
        self.pending_bytes -= p.size
        out.append(p)
        if log is not None:
            log.seqs.append(p.seq)
            log.send_us.append(send_us)
            log.sizes.append(p.size)
            log.cluster.append(-1)

    def _release_bursts(self, now_us: int, t_probe: float, pace_bps: float, debt_bits: float,
                        until_us: int | None, out: list[Packet]) -> list[Packet]:  # fmt: skip
        """``release`` with libwebrtc's burst interval: a packet leaves at once while the
        media debt (bits sent and not yet drained at the pacing rate) is under
        ``pacer_burst_ms`` (at most 63 kB, ``kMaxBurstSize``) at that rate; above it the
        pacer waits until the debt has drained (``PacingController::NextSendTime``)."""
        pending = self.pending
        burst_bits = min(self.cfg.pacer_burst_ms / 1000.0 * pace_bps, 63_000 * 8)
        log = self.sent_log if self.record_sent else None
        t = float(now_us)
        if self.probes or out:  # probes went first: the media follows when they are done
            t, debt_bits = max(t, t_probe), 0.0
        debt = debt_bits
        while pending and (until_us is None or t < until_us):
            if debt > burst_bits:
                t += debt * 1e6 / pace_bps
                debt = 0.0
                if until_us is not None and t >= until_us:
                    break
            p = pending.popleft()
            self._sent(p, int(t), out, log)
            debt += p.size * 8
        self.pacer_us = t + debt * 1e6 / pace_bps  # when the debt has drained
        self.pace_bps = pace_bps
        return out

    def _probe(self, t: float, until_us: int | None, out: list[Packet]) -> float:
        """Send the queued probe clusters from ``t`` (libwebrtc BitrateProber): packet after
        packet at the cluster's rate (the next one when the bytes sent so far have taken
        their time at that rate), queued media first, else padding of 2 x min_probe_delta
        at the probe rate (at most one MTU); a cluster is done after ``min_probes`` packets
        and ``min_bytes`` bytes. Returns when the pacer is free again."""
        pending = self.pending
        sent = self.frames.sent_us
        frame_of = self.msgs.frame
        log = self.sent_log if self.record_sent else None
        while self.probes and (until_us is None or t < until_us):
            pr = self.probes[0]
            c = pr.cluster
            if pending:
                p = pending.popleft()
                self.pending_bytes -= p.size
                p.send_us = int(t)
                sent[frame_of[p.msg]] = p.send_us
            else:
                size = int(c.bps * 2 * PROBE_MIN_DELTA_US / 8e6)
                size = min(max(size, PADDING_MIN_BYTES), self.cfg.mtu)
                p = Packet(self.flow, self.seq, size, int(t), -1, None)
                self.seq += 1
                self.padding_bytes += size
            out.append(p)
            if log is not None:
                log.seqs.append(p.seq)
                log.send_us.append(p.send_us)
                log.sizes.append(p.size)
                log.cluster.append(c.id)
            pr.packets += 1
            pr.bytes += p.size
            t += p.size * 8e6 / c.bps
            if pr.packets >= c.min_probes and pr.bytes >= c.min_bytes:
                self.probes.popleft()
        return t

    def _hdr(self, prio: int, drop: bool, thr: int, br: int) -> OctopusHeader | None:
        if not self.cfg.octopus:
            return None
        self.msg_id = (self.msg_id + 1) & 0xFFFFFFFF
        return OctopusHeader(self.stream_id, self.msg_id, True, True, prio, drop, thr, br)


@dataclass
class WiredPathConfig:
    rtt_ms: float = 40.0  # server <-> gNB round trip (the air interface adds its own delay)
    bottleneck_bps: float | None = None
    bottleneck_queue_bytes: int = 1_000_000
    # netem-like (MORC's lab): random loss, and an RTT re-drawn every rtt_change_ms uniformly
    # in [rtt_ms, rtt_max_ms] (the extra on the server -> gNB direction, packets stay in order)
    loss: float = 0.0
    rtt_max_ms: float | None = None
    rtt_change_ms: float = 100.0

    @property
    def needs_rng(self) -> bool:
        return self.loss > 0 or self.rtt_max_ms is not None


class WiredPath:
    """Server -> gNB: an optional FIFO bottleneck, then a one-way delay (fixed, or varying as
    netem's on a timer), with optional random loss."""

    def __init__(self, cfg: WiredPathConfig, rng: np.random.Generator | None = None) -> None:
        self.cfg = cfg
        self.one_way_us = int(cfg.rtt_ms * 500)
        self.free_us = 0.0
        self.lost = 0
        self.rng = rng
        # a fixed delay, nothing lost: the engine may add one_way_us itself
        self.simple = cfg.bottleneck_bps is None and not cfg.needs_rng
        self._period = -1
        self._extra_us = 0
        self._last_arrival = 0

    def _extra(self, send_us: int) -> int:
        cfg = self.cfg
        if cfg.rtt_max_ms is None or self.rng is None:
            return 0
        k = int(send_us // max(cfg.rtt_change_ms * 1000, 1))
        if k != self._period:
            self._period = k
            self._extra_us = int(self.rng.uniform(0.0, (cfg.rtt_max_ms - cfg.rtt_ms) * 1000))
        return self._extra_us

    def arrival_us(self, send_us: int, size: int) -> int | None:
        if self.rng is not None and self.cfg.loss > 0 and self.rng.random() < self.cfg.loss:
            self.lost += 1
            return None
        bps = self.cfg.bottleneck_bps
        if bps is None:
            t = send_us + self.one_way_us + self._extra(send_us)
        else:
            start = max(float(send_us), self.free_us)
            backlog_bytes = (start - send_us) * bps / 8e6
            if backlog_bytes > self.cfg.bottleneck_queue_bytes:
                self.lost += 1
                return None
            self.free_us = start + size * 8e6 / bps
            t = int(self.free_us) + self.one_way_us + self._extra(send_us)
        if self.cfg.rtt_max_ms is not None:
            t = max(t, self._last_arrival)  # a shorter delay does not overtake (FIFO)
            self._last_arrival = t
        return t
