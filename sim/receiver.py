"""Video receiver: reassembles messages, decodes them when their references are decoded,
and measures per-frame latency (encode -> decodable), per-packet one-way network latency
(the pacer's send -> arrival), stalls, bitrates and age of info."""

from __future__ import annotations

from array import array
from collections.abc import Callable
from dataclasses import dataclass, field

from octoric.sim.ice import STUN_REQUEST
from octoric.sim.packets import Packet
from octoric.sim.video import FrameTable, MessageTable

STALL_MS = 150.0


@dataclass
class FeedbackBatch:
    """What a receiver reports to its sender (transport-wide feedback style)."""

    seqs: list[int] = field(default_factory=list)
    send_us: list[int] = field(default_factory=list)
    recv_us: list[int] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)
    pli: bool = False  # a key frame request (RTCP PLI, RFC 4585 §6.3.1)


# libwebrtc's VideoReceiveStream2 asks for a key frame when no frame has been decodable for
# 200 ms while one is needed (kMaxWaitForKeyFrame), and repeats the request at that interval
PLI_WAIT_US = 200_000


class VideoReceiver:
    def __init__(self, msgs: MessageTable, frames: FrameTable) -> None:
        self.msgs = msgs
        self.frames = frames
        self.got: list[int] = []  # packets received per message
        self.decoded_us: list[int] = []  # -1 until decoded
        self.waiters: dict[int, list[int]] = {}
        self.frame_latency_ms: list[float] = []
        # per media packet: left the sender's pacer -> arrived (the OCC paper's headline
        # "network latency": the sender's own queue is not in it); float32, one per packet
        self.net_latency_ms: array[float] = array("f")
        self.frame_decoded_at: list[tuple[int, int]] = []  # (frame, decode_us)
        self.aoi_ms: list[float] = []
        self.latest_frame = -1
        self.valid_bits = 0
        self.decoded_bits = 0
        self.received_bytes = 0
        self.fb = FeedbackBatch()
        self.want_feedback = True  # off when the sender's scheme reads no feedback
        # the flow's ICE agent at the UE (video.ice_checks): checks and responses go there
        self.on_stun: Callable[[Packet, int], None] | None = None
        # key frame requests (``VideoConfig.keyframe_on_loss``): complete messages waiting
        # for a reference, since when; the last request
        self.request_keyframes = False
        self.waiting_since: dict[int, int] = {}
        self.last_pli_us = -PLI_WAIT_US
        self.plis = 0
        # the decoder state Salsify's ACKs carry (``track_state``; sim/cc/salsify.py): the newest
        # frame decoded whole (every message of it), the newest frame a packet arrived of; the
        # messages decoded of frames not yet whole
        self.track_state = False
        self.whole_frame = -1
        self.newest_frame = -1
        self._msgs_decoded: dict[int, int] = {}

    def _grow(self, m: int) -> None:
        n = m + 1 - len(self.got)
        if n > 0:
            self.got.extend([0] * n)
            self.decoded_us.extend([-1] * n)

    def on_packet(self, p: Packet, now_us: int) -> None:
        if p.msg <= STUN_REQUEST:  # an ICE check or its response (no transport sequence)
            if self.on_stun is not None:
                self.on_stun(p, now_us)
            return
        if self.want_feedback:
            fb = self.fb
            fb.seqs.append(p.seq)
            fb.send_us.append(p.send_us)
            fb.recv_us.append(now_us)
            fb.sizes.append(p.size)
        self.received_bytes += p.size
        m = p.msg
        if m < 0:
            return  # probe padding: no media, not in the media packets' latency
        self.net_latency_ms.append((now_us - p.send_us) / 1000.0)
        if self.track_state and self.msgs.frame[m] > self.newest_frame:
            self.newest_frame = self.msgs.frame[m]
        if m >= len(self.got):
            self._grow(m)
        self.got[m] += 1
        if self.got[m] == self.msgs.npkts[m]:
            self._try_decode(m, now_us)

    def _try_decode(self, m: int, now_us: int) -> None:
        stack = [m]
        dec = self.decoded_us
        mt = self.msgs
        while stack:
            x = stack.pop()
            if dec[x] >= 0 or self.got[x] < mt.npkts[x]:
                continue
            missing = [d for d in mt.deps[x] if d >= len(dec) or dec[d] < 0]
            if missing:
                self.waiters.setdefault(missing[0], []).append(x)
                if self.request_keyframes:
                    self.waiting_since.setdefault(x, now_us)
                continue
            dec[x] = now_us
            if self.request_keyframes:
                self.waiting_since.pop(x, None)
                if not mt.deps[x]:  # an I-frame: what waits from before it never decodes
                    self._forget_before(x)
            self._on_decoded(x, now_us)
            w = self.waiters.pop(x, None)
            if w:
                stack.extend(w)

    def _on_decoded(self, m: int, now_us: int) -> None:
        mt = self.msgs
        lat_ms = (now_us - mt.enc_us[m]) / 1000.0
        bits = mt.size[m] * 8
        self.decoded_bits += bits
        if lat_ms <= STALL_MS:
            self.valid_bits += bits
        f = mt.frame[m]
        if self.track_state:
            self._count_whole(f)
        if self.frames.base_msg[f] == m:
            self.frame_latency_ms.append(lat_ms)
            self.frame_decoded_at.append((f, now_us))
            if f > self.latest_frame:
                if self.latest_frame >= 0:
                    self.aoi_ms.append((now_us - self.frames.enc_us[self.latest_frame]) / 1000.0)
                self.latest_frame = f

    def _count_whole(self, f: int) -> None:
        """A message of frame ``f`` was decoded: the frame is whole once all of them are."""
        n = self._msgs_decoded.pop(f, 0) + 1
        if n < self.frames.nmsgs[f]:
            self._msgs_decoded[f] = n
        elif f > self.whole_frame:
            self.whole_frame = f

    def _forget_before(self, m: int) -> None:
        """Drop the waits of messages older than the I-frame ``m`` (as libwebrtc's frame
        buffer drops frames older than a decoded key frame)."""
        self.waiting_since = {x: t for x, t in self.waiting_since.items() if x > m}
        kept: dict[int, list[int]] = {}
        for ref, xs in self.waiters.items():
            newer = [x for x in xs if x > m]
            if newer:
                kept[ref] = newer
        self.waiters = kept

    def take_feedback(self, now_us: int = 0) -> FeedbackBatch:
        """The feedback since the last call; with key frame requests on, it carries a PLI
        when a complete message has waited >= 200 ms for a reference (at most one per
        200 ms)."""
        fb = self.fb
        self.fb = FeedbackBatch()
        if (
            self.waiting_since
            and now_us - self.last_pli_us >= PLI_WAIT_US
            and now_us - min(self.waiting_since.values()) >= PLI_WAIT_US
        ):
            fb.pli = True
            self.last_pli_us = now_us
            self.plis += 1
        return fb

    def complete_bits(self) -> int:
        """Payload bits of the messages whose every packet reached the client (the OCC
        paper's "frame bitrate arriving at the client", decodable or not)."""
        mt = self.msgs
        return 8 * sum(mt.size[m] for m in range(len(self.got)) if self.got[m] >= mt.npkts[m])

    def undecodable_complete(self) -> int:
        """Messages fully received but never decodable (a reference is missing)."""
        mt = self.msgs
        return sum(
            1 for m in range(len(self.got)) if self.got[m] >= mt.npkts[m] and self.decoded_us[m] < 0
        )
