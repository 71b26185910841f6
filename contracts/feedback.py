"""Sender side of OCC feedback: the two datagram formats the OCC xApp sends, and a UDP listener.

Standard library only, so a video sender can vendor this one file.

- ``json``: a UTF-8 JSON object ``{"ue": 17, "target_bps": 12000000, "fallback": false,
  "ts": 1763812345.123, "t_ms": 1763812345120}`` (``ts``: unix time the xApp sent it, seconds;
  ``t_ms``: the time of the newest KPM sample behind the estimate, ms, as the gNB stamped it;
  absent from older xApps).
- ``remb``: an RTCP compound packet: a PSFB REMB (PT 206, FMT 15, draft-alvestrand-rmcat-remb:
  "REMB", SSRC count, 6-bit exponent, 18-bit mantissa, the SSRC list), then an RTCP APP packet
  (PT 204, subtype 0, name ``OCCF``) whose first data byte carries the fallback flag in bit 0.
  Receivers that only know REMB can skip the APP packet (RFC 3550 compound rules).

``parse_feedback(datagram)`` reads either; ``FeedbackListener`` binds a UDP port and yields
``Feedback`` objects (``listener.get(timeout)``, or iterate).
"""

from __future__ import annotations

import json
import math
import queue
import socket
import struct
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

RTCP_PSFB = 206
RTCP_APP = 204
REMB_FMT = 15
APP_NAME = b"OCCF"
MANTISSA_BITS = 18
MAX_SSRCS = 255


class FeedbackFormatError(ValueError):
    """A datagram is neither OCC JSON feedback nor a valid REMB (+ OCCF) packet."""


@dataclass(frozen=True)
class Feedback:
    format: str  # "json" or "remb"
    target_bps: float
    fallback: bool
    ue: int | None = None  # json only
    ts: float | None = None  # json only: when the xApp sent it (unix s)
    t_ms: int | None = None  # json only: the newest KPM sample behind the estimate (ms)
    ssrcs: tuple[int, ...] = ()  # remb only: the media SSRCs it applies to
    sender_ssrc: int | None = None  # remb only
    received_at: float = 0.0  # set by FeedbackListener (unix s)


# --- encoding (used by the xApp) --------------------------------------------------------------
def remb_fields(bitrate_bps: float) -> tuple[int, int]:
    """(exponent, mantissa) with mantissa < 2^18 and mantissa * 2^exp <= bitrate."""
    br = max(0, int(bitrate_bps)) if math.isfinite(bitrate_bps) else 0
    exp = max(0, br.bit_length() - MANTISSA_BITS)
    if exp > 63:
        return 63, (1 << MANTISSA_BITS) - 1
    return exp, br >> exp


def encode_remb(sender_ssrc: int, bitrate_bps: float, ssrcs: tuple[int, ...] | list[int]) -> bytes:
    if len(ssrcs) > MAX_SSRCS:
        raise ValueError(f"REMB carries at most {MAX_SSRCS} SSRCs")
    exp, mant = remb_fields(bitrate_bps)
    words = 4 + len(ssrcs)  # length field: 32-bit words - 1 (header word excluded)
    head = struct.pack("!BBHII4s", 0x80 | REMB_FMT, RTCP_PSFB, words, sender_ssrc, 0, b"REMB")
    br = struct.pack("!I", (len(ssrcs) << 24) | (exp << 18) | mant)
    return head + br + b"".join(struct.pack("!I", s) for s in ssrcs)


def encode_occf(sender_ssrc: int, fallback: bool) -> bytes:
    """The RTCP APP packet carrying OCC's fallback flag."""
    return struct.pack(
        "!BBHI4sI", 0x80, RTCP_APP, 3, sender_ssrc, APP_NAME, (1 << 24) if fallback else 0
    )


def encode_remb_feedback(
    sender_ssrc: int, bitrate_bps: float, fallback: bool, ssrcs: tuple[int, ...] | list[int]
) -> bytes:
    return encode_remb(sender_ssrc, bitrate_bps, ssrcs) + encode_occf(sender_ssrc, fallback)


def encode_json_feedback(
    ue: int, target_bps: float, fallback: bool, ts: float | None = None, t_ms: int | None = None
) -> bytes:
    """The JSON datagram: what ``json.dumps(..., separators=(",", ":"))`` writes for the
    object, formatted directly (the xApp sends one per flow and estimate change)."""
    stamp = round(time.time() if ts is None else ts, 6)
    tail = "" if t_ms is None else f',"t_ms":{int(t_ms)}'
    fb = "true" if fallback else "false"
    return (
        f'{{"ue":{int(ue)},"target_bps":{round(target_bps)},"fallback":{fb},'
        f'"ts":{float.__repr__(stamp) if isinstance(stamp, float) else int(stamp)}{tail}}}'
    ).encode()


# --- parsing (used by senders) ----------------------------------------------------------------
def _parse_json(data: bytes) -> Feedback:
    try:
        obj = json.loads(data)
    except ValueError as e:
        raise FeedbackFormatError(f"not JSON: {e}") from None
    if not isinstance(obj, dict):
        raise FeedbackFormatError("JSON feedback must be an object")
    ue, fb, ts = obj.get("ue"), obj.get("fallback", False), obj.get("ts")
    if not isinstance(ue, int) or isinstance(ue, bool) or ue < 0:
        raise FeedbackFormatError("JSON feedback: 'ue' must be a UE key (integer >= 0)")
    if not isinstance(fb, bool):
        raise FeedbackFormatError("JSON feedback: 'fallback' must be true or false")
    # while the xApp says fallback the target carries no meaning and may be left out
    br = obj.get("target_bps", 0 if fb else None)
    if not isinstance(br, (int, float)) or isinstance(br, bool) or not math.isfinite(br) or br < 0:
        raise FeedbackFormatError("JSON feedback: 'target_bps' must be a number >= 0")
    if ts is not None and (not isinstance(ts, (int, float)) or isinstance(ts, bool)):
        raise FeedbackFormatError("JSON feedback: 'ts' must be a number")
    t_ms = obj.get("t_ms")
    if t_ms is not None and (not isinstance(t_ms, int) or isinstance(t_ms, bool)):
        raise FeedbackFormatError("JSON feedback: 't_ms' must be an integer")
    return Feedback("json", float(br), fb, ue=ue, ts=None if ts is None else float(ts), t_ms=t_ms)


def _parse_rtcp(data: bytes) -> Feedback:
    off = 0
    remb: tuple[float, tuple[int, ...], int] | None = None
    fallback = False
    while off < len(data):
        if len(data) - off < 4:
            raise FeedbackFormatError("truncated RTCP header")
        b0, pt, length = struct.unpack_from("!BBH", data, off)
        if b0 >> 6 != 2:
            raise FeedbackFormatError(f"RTCP version {b0 >> 6}, expected 2")
        size = (length + 1) * 4
        if off + size > len(data):
            raise FeedbackFormatError("RTCP length exceeds the datagram")
        pkt = data[off : off + size]
        if pt == RTCP_PSFB and (b0 & 0x1F) == REMB_FMT:
            if size < 20 or pkt[12:16] != b"REMB":
                raise FeedbackFormatError("PSFB FMT 15 without the REMB identifier")
            sender = struct.unpack_from("!I", pkt, 4)[0]
            word = struct.unpack_from("!I", pkt, 16)[0]
            n, exp, mant = word >> 24, (word >> 18) & 0x3F, word & 0x3FFFF
            if size < 20 + 4 * n:
                raise FeedbackFormatError(f"REMB announces {n} SSRCs but carries fewer")
            ssrcs = struct.unpack_from(f"!{n}I", pkt, 20)
            remb = (float(mant << exp), tuple(ssrcs), sender)
        elif pt == RTCP_APP and size >= 16 and pkt[8:12] == APP_NAME:
            fallback = bool(pkt[12] & 1)
        off += size
    if remb is None:
        raise FeedbackFormatError("RTCP packet without a REMB")
    return Feedback("remb", remb[0], fallback, ssrcs=remb[1], sender_ssrc=remb[2])


def parse_feedback(data: bytes) -> Feedback:
    """A ``Feedback`` from one datagram of either format; ``FeedbackFormatError`` otherwise."""
    if not data:
        raise FeedbackFormatError("empty datagram")
    if data[:1] == b"{":
        return _parse_json(data)
    if data[0] >> 6 == 2:
        return _parse_rtcp(data)
    raise FeedbackFormatError("neither JSON nor RTCP")


class FeedbackListener:
    """A UDP socket that collects OCC feedback in a background thread.

    ``port=0`` picks a free port (``listener.address`` says which). Bad datagrams are counted
    in ``errors`` and skipped.
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind((host, port))
        self.sock.settimeout(0.2)
        self.address: tuple[str, int] = self.sock.getsockname()
        self.errors = 0
        self.received = 0
        self._q: queue.Queue[Feedback] = queue.Queue()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="occ-feedback", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                data = self.sock.recv(65535)
            except TimeoutError:
                continue
            except OSError:
                return
            try:
                fb = parse_feedback(data)
            except FeedbackFormatError:
                self.errors += 1
                continue
            self.received += 1
            self._q.put(Feedback(**{**fb.__dict__, "received_at": time.time()}))

    def get(self, timeout: float | None = None) -> Feedback | None:
        """The next feedback, or None after ``timeout`` seconds."""
        try:
            return self._q.get(timeout=timeout)
        except queue.Empty:
            return None

    def drain(self) -> list[Feedback]:
        out = []
        while True:
            try:
                out.append(self._q.get_nowait())
            except queue.Empty:
                return out

    def __iter__(self) -> Iterator[Feedback]:
        while not self._stop.is_set():
            fb = self.get(0.2)
            if fb is not None:
                yield fb

    def close(self) -> None:
        self._stop.set()
        self._thread.join(1)
        self.sock.close()
