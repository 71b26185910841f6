"""A real WebRTC video call (aiortc, VP8 from libvpx through PyAV) for the emulated cell.

Run one side in the server's namespace and the other in a real UE's (docs/emulated-cell.md);
the two exchange their SDP through this program's stdin and stdout (one JSON line each), so
no signalling server is needed:

    send:  prints {"offer": SDP}, reads {"answer": SDP}, sends a synthetic 30 fps video
    recv:  reads {"offer": SDP}, prints {"answer": SDP}, receives and decodes it

Both end after ``--seconds`` and print one JSON result line. Every frame carries its index
in its pixels (16 bits as black and white 40x40 blocks that survive VP8 at any bitrate), so
the receiver can tell which captured frame it decoded: frame latency is decode time minus
capture time, both ``time.monotonic_ns`` (namespaces share the clock).

Rate control (sender): ``--rate gcc`` leaves aiortc's own congestion control in charge (the
receiver's delay-based estimator and REMB, a GCC variant); ``--rate feedback --feedback-port
P`` sets the encoder's target from datagrams on UDP port P (JSON ``{"target_bps": ...}``, or
``{"fallback": true}`` to give control back to aiortc's REMB), which is how the OCC xApp's
feedback reaches an application that is not a REMB peer (docs/emulated-cell.md).
"""

from __future__ import annotations

import argparse
import asyncio
import fractions
import json
import socket
import sys
import time
from typing import Any

import aiortc.rtcrtpsender
import numpy as np
from aiortc import (
    MediaStreamTrack,
    RTCConfiguration,
    RTCPeerConnection,
    RTCSessionDescription,
)
from aiortc.codecs import vpx
from av import VideoFrame

W, H, FPS = 640, 480, 30
BITS, BLOCK = 16, 40  # the frame index: 16 blocks of 40x40 pixels along the top
vpx.MAX_BITRATE = 20_000_000  # aiortc caps VP8 at 1.5 Mbit/s; the cell may give more
vpx.MIN_BITRATE = 100_000


def draw(index: int, t: float) -> np.ndarray:
    """A moving picture (so the encoder has work) with ``index`` in its top row of blocks."""
    y, x = np.mgrid[0:H, 0:W]
    img = np.empty((H, W, 3), dtype=np.uint8)
    img[..., 0] = (x + int(t * 120)) % 256
    img[..., 1] = (y * 2 + int(t * 60)) % 256
    img[..., 2] = ((x ^ y) + index) % 256
    for b in range(BITS):
        v = 255 if index >> b & 1 else 0
        img[0:BLOCK, b * BLOCK : (b + 1) * BLOCK] = v
    return img


def read_index(img: np.ndarray) -> int:
    idx = 0
    for b in range(BITS):
        block = img[8 : BLOCK - 8, b * BLOCK + 8 : (b + 1) * BLOCK - 8]
        if block.mean() > 127:
            idx |= 1 << b
    return idx


class GatedVp8(vpx.Vp8Encoder):
    """aiortc's VP8 encoder whose target the REMB path may set only while no external target
    is in charge (``external``): with OCC feedback active, the sender follows OCC alone."""

    external = False
    remb_ignored = 0

    @property
    def target_bitrate(self) -> int:
        return int(vpx.Vp8Encoder.target_bitrate.fget(self))  # type: ignore[attr-defined]

    @target_bitrate.setter
    def target_bitrate(self, bitrate: int) -> None:
        if self.external:
            self.remb_ignored += 1
            return
        vpx.Vp8Encoder.target_bitrate.fset(self, bitrate)  # type: ignore[attr-defined]

    def set_external(self, bitrate: int | None) -> None:
        self.external = bitrate is not None
        if bitrate is not None:
            vpx.Vp8Encoder.target_bitrate.fset(self, bitrate)  # type: ignore[attr-defined]


_get_encoder = getattr(aiortc.rtcrtpsender, "get_encoder")  # noqa: B009 (not re-exported)


def _gated_encoder(codec: Any) -> Any:
    enc = _get_encoder(codec)
    if type(enc) is vpx.Vp8Encoder:
        enc.__class__ = GatedVp8
    return enc


setattr(aiortc.rtcrtpsender, "get_encoder", _gated_encoder)  # noqa: B010 (every sender's)


class SyntheticTrack(MediaStreamTrack):
    kind = "video"

    def __init__(self) -> None:
        super().__init__()
        self.index = 0
        self.start = time.monotonic()
        self.captured: list[tuple[int, int]] = []  # (index, monotonic ns)

    async def recv(self) -> VideoFrame:
        due = self.start + self.index / FPS
        await asyncio.sleep(max(0.0, due - time.monotonic()))
        frame = VideoFrame.from_ndarray(draw(self.index % (1 << BITS), due - self.start),
                                        format="rgb24")  # fmt: skip
        frame.pts = self.index * (90000 // FPS)
        frame.time_base = fractions.Fraction(1, 90000)
        self.captured.append((self.index % (1 << BITS), time.monotonic_ns()))
        self.index += 1
        return frame


def _encoder(pc: RTCPeerConnection) -> Any:
    """The VP8 encoder of the connection's video sender (aiortc keeps it private)."""
    for s in pc.getSenders():
        enc = getattr(s, "_RTCRtpSender__encoder", None)
        if enc is not None:
            return enc
    return None


class Feedback(asyncio.DatagramProtocol):
    def __init__(self, pc: RTCPeerConnection, log: list[tuple[int, float | None]]) -> None:
        self.pc, self.log = pc, log
        self.fallback = True  # until the first target: aiortc's own REMB control

    def datagram_received(self, data: bytes, addr: Any) -> None:
        try:
            msg = json.loads(data)
            target = None if msg.get("fallback") else float(msg["target_bps"])
        except (ValueError, KeyError, TypeError):
            return
        self.fallback = target is None
        self.log.append((time.monotonic_ns(), target))
        enc = _encoder(self.pc)
        if isinstance(enc, GatedVp8):
            enc.set_external(None if target is None else int(target))


async def _line() -> dict[str, Any]:
    line = await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
    return dict(json.loads(line))


def _say(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


async def send(args: argparse.Namespace) -> dict[str, Any]:
    pc = RTCPeerConnection(RTCConfiguration(iceServers=[]))
    track = SyntheticTrack()
    pc.addTrack(track)
    fb_log: list[tuple[int, float | None]] = []
    fb: Feedback | None = None
    if args.rate == "feedback":
        fb = Feedback(pc, fb_log)
        await asyncio.get_running_loop().create_datagram_endpoint(
            lambda: fb, local_addr=("0.0.0.0", args.feedback_port), family=socket.AF_INET
        )
    await pc.setLocalDescription(await pc.createOffer())
    _say({"offer": pc.localDescription.sdp})
    answer = await _line()
    await pc.setRemoteDescription(RTCSessionDescription(answer["answer"], "answer"))
    targets: list[tuple[int, int]] = []
    end = time.monotonic() + args.seconds
    while time.monotonic() < end:
        await asyncio.sleep(0.1)
        enc = _encoder(pc)
        if enc is not None:
            targets.append((time.monotonic_ns(), int(enc.target_bitrate)))
    enc = _encoder(pc)
    await pc.close()
    return {"role": "send", "captured": track.captured, "targets": targets, "feedback": fb_log,
            "remb_ignored": getattr(enc, "remb_ignored", 0),
            "bitrate_range": [vpx.MIN_BITRATE, vpx.MAX_BITRATE]}  # fmt: skip


async def recv(args: argparse.Namespace) -> dict[str, Any]:
    pc = RTCPeerConnection(RTCConfiguration(iceServers=[]))
    decoded: list[tuple[int, int, int]] = []  # (index, monotonic ns, width)
    pulls: list[asyncio.Task[None]] = []

    @pc.on("track")
    def on_track(track: MediaStreamTrack) -> None:
        async def pull() -> None:
            while True:
                try:
                    frame = await track.recv()
                except Exception:  # the track ended (MediaStreamError): the call is over
                    return
                assert isinstance(frame, VideoFrame)
                img = frame.to_ndarray(format="rgb24")
                decoded.append((read_index(img), time.monotonic_ns(), img.shape[1]))

        pulls.append(asyncio.ensure_future(pull()))

    offer = await _line()
    await pc.setRemoteDescription(RTCSessionDescription(offer["offer"], "offer"))
    await pc.setLocalDescription(await pc.createAnswer())
    _say({"answer": pc.localDescription.sdp})
    stats: list[tuple[int, int, int]] = []  # (monotonic ns, RTP packets received, lost)
    end = time.monotonic() + args.seconds
    while time.monotonic() < end:
        await asyncio.sleep(0.25)
        for s in (await pc.getStats()).values():
            if getattr(s, "type", "") == "inbound-rtp":
                stats.append((time.monotonic_ns(), int(s.packetsReceived), int(s.packetsLost)))
    await pc.close()
    return {"role": "recv", "decoded": decoded, "rtp": stats}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("role", choices=("send", "recv"))
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--rate", choices=("gcc", "feedback"), default="gcc")
    ap.add_argument("--feedback-port", type=int, default=9100)
    args = ap.parse_args(argv)
    res = asyncio.run(send(args) if args.role == "send" else recv(args))
    _say({"result": res})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
