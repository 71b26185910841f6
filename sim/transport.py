"""The packet-level transport of window/ACK schemes (CUBIC, BBR, ...): a sender woken by ACK
arrivals and by its timers (pacing, RACK reordering window, RTO), per-packet ACKs from the
receiver, loss detection and retransmission.

What each part follows:
- **ACKs** name the packet they acknowledge, so the sender knows exactly which packets arrived
  (what TCP's SACK blocks give it); one ACK per delivered packet (no delayed ACKs), sent over
  the flow's uplink (wired RTT/2 + the UE's uplink delay).
- **Delivery-rate samples** as draft-cheng-iccrg-delivery-rate-estimation-02 (what BBR reads):
  each packet remembers the connection's ``delivered`` count and time when it was sent; its ACK
  gives delivered bytes over max(send interval, ACK interval).
- **Loss detection** as RACK-TLP (RFC 8985), time-based: a packet is lost when one sent after it
  has been acknowledged and the reordering window (min RTT / 4) has passed since that; HARQ
  retransmissions reorder packets by a few ms, which a packet threshold would count as loss.
  A loss found spurious (the packet's ACK came after all) widens the window by another
  min RTT / 4, up to SRTT (RFC 8985 §6.2, what DSACK tells a TCP sender).
  An RTO (RFC 6298: srtt + 4 rttvar, at least 200 ms, doubled per expiry) marks everything in
  flight lost. Losses reach the scheme once per loss event: ``on_loss`` with the bytes lost,
  and a new event starts only with packets sent after the previous one was detected.
- **Retransmission**: lost bytes are sent again before new data (a bulk flow's goodput is what
  its receiver got); no tail-loss probe.
- **Pacing**: a scheme that gives ``pacing_bps`` has its packets spaced at that rate; one
  that gives None sends as the window allows, in ACK-clocked bursts (CUBIC without fq).

The application is a bulk transfer (always data to send), as ToN'22's and MORC's TCP flows,
or a real-time video sender (``media``: a ``VideoSender``'s queue of encoded packets, sent as
they are, never retransmitted) with Dumbo's padding as an option (Rahmanian, MIT 2023, §4):
when the window and the pacer allow a packet and the media queue is empty, a dummy packet
(at most an MSS, at least ``MIN_PADDING`` bytes, within the window) goes instead, so the
scheme sees a backlogged flow. Without padding an empty media queue makes the flow
app-limited (its rate samples are marked so, as the delivery-rate draft says).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from mypy_extensions import mypyc_attr

from octoric.sim.dropper import OctopusDropper
from octoric.sim.errors import ScenarioError
from octoric.sim.packets import Packet

MSS = 1448  # payload bytes of a full-sized TCP segment on a 1500-byte MTU (with timestamps)
HEADER = 52  # IPv4 20 + TCP 20 + timestamps 12: the packet on the wire is MSS + HEADER
MIN_RTO_US = 200_000
INITIAL_RTO_US = 1_000_000
INITIAL_CWND = 10 * MSS  # RFC 6928
MIN_PADDING = 200  # Dumbo: a dummy packet is at least 200 bytes (thesis §5.1)


class MediaQueue(Protocol):
    """What the transport uses of a video sender (``VideoSender``): its queue of encoded
    packets, and the two ways a head packet leaves it."""

    pending: deque[Packet]

    def send_head(self, now_us: int, seq: int) -> Packet: ...

    def drop_head(self) -> Packet: ...


class RateSample:
    """What one ACK tells the scheme (bytes, µs). A plain class with its own ``__init__``, not a
    dataclass: a dataclass's ``__init__`` is generated at import and stays interpreted under
    mypyc, and one of these is built per ACK."""

    __slots__ = ("acked", "delivered", "inflight", "interval_us", "is_app_limited",
                 "prior_delivered", "rtt_us", "seq")  # fmt: skip

    def __init__(self, seq: int, acked: int, delivered: int, interval_us: int, rtt_us: int,
                 prior_delivered: int, inflight: int, is_app_limited: bool) -> None:  # fmt: skip
        self.seq = seq  # the packet this ACK acknowledges
        self.acked = acked  # bytes newly acknowledged by this ACK
        self.delivered = delivered  # bytes delivered over ``interval_us`` (the rate sample)
        self.interval_us = interval_us
        self.rtt_us = rtt_us
        self.prior_delivered = prior_delivered  # the connection's delivered count at send
        self.inflight = inflight  # bytes in flight after this ACK
        self.is_app_limited = is_app_limited

    @property
    def delivery_bps(self) -> float:
        return self.delivered * 8e6 / self.interval_us if self.interval_us > 0 else 0.0


# subclassed outside the modules mypyc compiles for speed (sim/compiled.py)
@mypyc_attr(allow_interpreted_subclasses=True)
class WindowScheme:
    """A congestion controller of the packet-level transport. The transport asks ``cwnd`` and
    ``pacing_bps`` before it sends, and tells the scheme about ACKs, loss events and RTOs."""

    name = "window"

    def __init__(self, ctx: WindowContext) -> None:
        self.ctx = ctx

    def cwnd(self) -> int:
        """Bytes that may be in flight."""
        raise NotImplementedError

    def pacing_bps(self) -> float | None:
        """Pacing rate (bit/s of payload, the unit of delivery-rate samples), or None: send as
        the window allows."""
        return None

    def on_ack(self, now_us: int, rs: RateSample, sender: TransportSender) -> None:
        raise NotImplementedError

    def on_loss(self, now_us: int, lost: int, sender: TransportSender) -> None:
        """A loss event: ``lost`` bytes were declared lost (RACK)."""

    def on_rto(self, now_us: int, sender: TransportSender) -> None:
        """The retransmission timer expired: everything in flight was declared lost."""

    def on_handover(self, now_us: int, sender: TransportSender) -> None:
        """A handover report about the flow's UE reached the sender (Octopus ToN'22: the
        handover xApp tells application servers within milliseconds). Most schemes ignore it."""

    def target_bps(self, now_us: int, sender: TransportSender) -> float:
        """The rate the scheme aims at, for the time series: its pacing rate, else cwnd/srtt."""
        p = self.pacing_bps()
        if p is not None:
            return p
        return self.cwnd() * 8e6 / max(sender.srtt_us, 1)

    def sending_bps(self, sender: TransportSender) -> float | None:
        """The sending rate a video encoder is told: cwnd / smoothed RTT (the Dumbo thesis §4);
        None before the first RTT sample."""
        if sender.srtt_us <= 0:
            return None
        return self.cwnd() * 8e6 / sender.srtt_us


@dataclass
class WindowContext:
    """What a window scheme may know when it is built."""

    mss: int = MSS
    params: dict[str, Any] = field(default_factory=dict)
    seed: int = 0


WindowFactory = Callable[[WindowContext], WindowScheme]
WINDOW_SCHEMES: dict[str, WindowFactory] = {}


def register_window_scheme(name: str) -> Callable[[WindowFactory], WindowFactory]:
    def deco(factory: WindowFactory) -> WindowFactory:
        WINDOW_SCHEMES[name] = factory
        return factory

    return deco


def build_window_scheme(name: str, ctx: WindowContext) -> WindowScheme:
    try:
        factory = WINDOW_SCHEMES[name]
    except KeyError:
        raise ScenarioError(
            f"unknown window scheme {name!r} for a bulk flow (known: "
            f"{', '.join(sorted(WINDOW_SCHEMES))})"
        ) from None
    return factory(ctx)


class _Sent:
    __slots__ = ("delivered", "delivered_us", "first_sent_us", "is_app_limited", "send_us",
                 "size")  # fmt: skip

    def __init__(self, size: int, send_us: int, snd: TransportSender) -> None:
        self.size = size
        self.send_us = send_us
        self.delivered = snd.delivered
        self.delivered_us = snd.delivered_us
        self.first_sent_us = snd.first_sent_us
        self.is_app_limited = snd.app_limited_until > 0


# subclassed outside the modules mypyc compiles for speed (sim/compiled.py)
@mypyc_attr(allow_interpreted_subclasses=True)
class TransportSender:
    """One flow's sender: a bulk transfer, or a video sender's media queue (``media``; with
    ``padding``, Dumbo's dummy packets when it is empty). ``send(now)`` returns the packets to
    put on the wire now; ``wake_us`` is when it wants to be called again (pacing, RACK or RTO
    timer), or None."""

    def __init__(
        self, flow: int, scheme: WindowScheme, mss: int = MSS, media: MediaQueue | None = None,
        padding: bool = False, buffer_dropper: OctopusDropper | None = None,
        limit_bytes: int | None = None,
    ) -> None:  # fmt: skip
        self.flow, self.scheme, self.mss = flow, scheme, mss
        # a bulk transfer of this many payload bytes (a file download), None: unlimited; done
        # when they are acknowledged (less the bytes acknowledged twice after spurious losses)
        self.limit_bytes = limit_bytes
        self.new_bytes = 0  # payload sent for the first time
        self.spurious_bytes = 0
        self.done_us: int | None = None
        self.media = media
        # the Octopus transport buffer (SEC'23 §4.2): Algorithm 1 on the media queue's head
        self.buffer_dropper = buffer_dropper
        self.buffer_dropped_bytes = 0
        self.padding = padding and media is not None
        self.padding_bytes = 0  # dummy bytes sent (Dumbo)
        self.media_bytes = 0  # media bytes sent
        self.next_seq = 0
        self.unacked: dict[int, _Sent] = {}  # seq -> packet in flight, in send order
        self.lost: dict[int, _Sent] = {}  # declared lost (a late ACK makes it spurious)
        self.inflight = 0  # bytes sent, neither acknowledged nor declared lost
        self.retx_bytes_pending = 0  # lost bytes still to send again
        # delivery-rate estimation (draft-cheng-iccrg-delivery-rate-estimation)
        self.delivered = 0
        self.delivered_us = 0
        self.first_sent_us = 0
        self.app_limited_until = 0  # bulk: never app-limited
        # RTT (RFC 6298) and RACK
        self.srtt_us = 0
        self.rttvar_us = 0
        self.min_rtt_us = 0
        self.latest_rtt_us = 0
        self.rto_us = INITIAL_RTO_US
        # the most recently sent packet acknowledged; seqs grow with send time (a resend gets
        # a new one), so "sent before it" is a smaller seq, also within a same-time burst
        self.rack_seq = -1
        self.rto_at: int | None = None
        self.rack_at: int | None = None
        self.next_send_us = 0  # pacing
        self.recovery_end_seq = -1  # losses of packets sent before this are one event
        self.reo_wnd_mult = 1  # RACK's reordering window, in min RTT / 4 steps
        # counters
        self.sent_bytes = 0
        self.retransmitted_bytes = 0
        self.lost_bytes = 0
        self.loss_events = 0
        self.rtos = 0
        self.spurious_losses = 0
        self.acked_bytes = 0
        self.rtt_samples_ms: list[float] = []

    # --- sending -----------------------------------------------------------------------
    def send(self, now_us: int) -> list[Packet]:
        """The packets the window and the pacer allow now."""
        out: list[Packet] = []
        cwnd = self.scheme.cwnd()
        pacing = self.scheme.pacing_bps()
        media = self.media
        while True:
            if pacing is not None and now_us < self.next_send_us:
                break
            if media is None:
                size = self.mss
                if self.inflight + size > max(cwnd, size):  # one packet at least
                    break
                if self.retx_bytes_pending > 0:
                    self.retx_bytes_pending = max(0, self.retx_bytes_pending - size)
                    self.retransmitted_bytes += size
                elif self.limit_bytes is not None:
                    if self.new_bytes >= self.limit_bytes:
                        break  # the whole file is out: only resends remain
                    size = min(size, self.limit_bytes - self.new_bytes)
                    self.new_bytes += size
                else:
                    self.new_bytes += size
                pkt = Packet(self.flow, self.next_seq, size + HEADER, now_us)
            elif media.pending and self._head_dropped(media, now_us):
                continue
            elif media.pending:
                size = media.pending[0].size
                if self.inflight + size > max(cwnd, size):
                    break
                pkt = media.send_head(now_us, self.next_seq)
                self.media_bytes += size
            elif self.padding:
                size = min(self.mss, max(cwnd, self.mss) - self.inflight)
                if size < MIN_PADDING:
                    break
                pkt = Packet(self.flow, self.next_seq, size, now_us)  # no message: a dummy
                self.padding_bytes += size
            else:
                # nothing to send while the window has room: app-limited (delivery-rate draft)
                self.app_limited_until = max(self.delivered + self.inflight, 1)
                break
            if self.inflight == 0:  # the first packet of a flight starts a new rate interval
                self.first_sent_us = self.delivered_us = now_us
            seq = self.next_seq
            self.next_seq += 1
            self.unacked[seq] = _Sent(size, now_us, self)
            self.inflight += size
            self.sent_bytes += size
            out.append(pkt)
            if pacing is not None and pacing > 0:
                gap = size * 8e6 / pacing
                self.next_send_us = max(self.next_send_us, now_us) + int(gap)
        if out and self.rto_at is None:
            self.rto_at = now_us + self.rto_us
        return out

    def _head_dropped(self, media: MediaQueue, now_us: int) -> bool:
        """The transport buffer's dropper removed the packet at the head (whole messages)."""
        d = self.buffer_dropper
        if d is None or not d.should_drop(media.pending[0], now_us):
            return False
        self.buffer_dropped_bytes += media.drop_head().size
        return True

    def wake_us(self, now_us: int) -> int | None:
        """The next time the sender has something to do: a paced send, a RACK or RTO timer."""
        # straight-line (no temporary list): this runs after every send, per packet
        wake = self.rack_at
        rto = self.rto_at
        if rto is not None and (wake is None or rto < wake):
            wake = rto
        media = self.media
        if media is None:
            limit = self.limit_bytes
            has_data = limit is None or self.new_bytes < limit or self.retx_bytes_pending != 0
        else:
            has_data = self.padding or bool(media.pending)
        if (has_data and self.scheme.pacing_bps() is not None
                and self.inflight + self.mss <= self.scheme.cwnd()):  # fmt: skip
            paced = self.next_send_us if self.next_send_us > now_us + 1 else now_us + 1
            if wake is None or paced < wake:
                wake = paced
        return wake

    # --- ACKs, timers --------------------------------------------------------------------
    def on_ack(self, now_us: int, seq: int) -> None:
        p = self.unacked.pop(seq, None)
        if p is None:
            p = self.lost.pop(seq, None)
            if p is None:
                return  # a duplicate ACK: nothing new
            # declared lost, but it arrived: the loss was spurious (its resend is not undone);
            # the reordering was longer than RACK's window: widen it
            self.spurious_losses += 1
            self.spurious_bytes += p.size
            self.reo_wnd_mult += 1
        else:
            self.inflight -= p.size
        self.acked_bytes += p.size
        if (
            self.limit_bytes is not None and self.done_us is None
            and self.acked_bytes - self.spurious_bytes >= self.limit_bytes
        ):  # fmt: skip
            self.done_us = now_us
        if self.app_limited_until and self.delivered + p.size > self.app_limited_until:
            self.app_limited_until = 0  # the app-limited bubble has been delivered
        rtt = now_us - p.send_us
        self._rtt(rtt)
        self.delivered += p.size
        self.delivered_us = now_us
        send_elapsed = p.send_us - p.first_sent_us
        ack_elapsed = now_us - p.delivered_us
        self.first_sent_us = p.send_us
        rs = RateSample(
            seq=seq, acked=p.size, delivered=self.delivered - p.delivered,
            interval_us=max(send_elapsed, ack_elapsed), rtt_us=rtt,
            prior_delivered=p.delivered, inflight=self.inflight, is_app_limited=p.is_app_limited,
        )  # fmt: skip
        self.rack_seq = max(self.rack_seq, seq)
        self.rto_at = now_us + self.rto_us if self.unacked else None
        self.scheme.on_ack(now_us, rs, self)
        self._detect_losses(now_us)

    def on_timer(self, now_us: int) -> None:
        if self.rto_at is not None and now_us >= self.rto_at:
            self._rto(now_us)
        elif self.rack_at is not None and now_us >= self.rack_at:
            self.rack_at = None
            self._detect_losses(now_us)

    def _rtt(self, rtt: int) -> None:
        self.latest_rtt_us = rtt
        self.rtt_samples_ms.append(rtt / 1000.0)
        self.min_rtt_us = rtt if self.min_rtt_us == 0 else min(self.min_rtt_us, rtt)
        if self.srtt_us == 0:
            self.srtt_us, self.rttvar_us = rtt, rtt // 2
        else:
            self.rttvar_us = (3 * self.rttvar_us + abs(self.srtt_us - rtt)) // 4
            self.srtt_us = (7 * self.srtt_us + rtt) // 8
        self.rto_us = max(MIN_RTO_US, self.srtt_us + 4 * self.rttvar_us)

    def _detect_losses(self, now_us: int) -> None:
        """RACK: packets sent before the newest acknowledged one are lost once the reordering
        window has passed; otherwise the RACK timer waits for it."""
        reo_wnd = min(self.reo_wnd_mult * self.min_rtt_us // 4, self.srtt_us)
        lost = 0
        first_lost_seq = -1
        self.rack_at = None
        gone = []
        for seq, p in self.unacked.items():
            if seq >= self.rack_seq:
                break  # sent after every acknowledged packet: not yet suspect
            deadline = p.send_us + self.latest_rtt_us + reo_wnd
            if now_us >= deadline:
                gone.append(seq)
                lost += p.size
                if first_lost_seq < 0:
                    first_lost_seq = seq
            elif self.rack_at is None or deadline < self.rack_at:
                self.rack_at = deadline
        if lost:
            for seq in gone:
                self._declare_lost(seq)
            self.lost_bytes += lost
            if first_lost_seq > self.recovery_end_seq:  # a new loss event
                self.loss_events += 1
                self.recovery_end_seq = self.next_seq - 1
                self.scheme.on_loss(now_us, lost, self)

    def _rto(self, now_us: int) -> None:
        self.rtos += 1
        for seq in list(self.unacked):
            self.lost_bytes += self.unacked[seq].size
            self._declare_lost(seq)
        self.rto_us = min(2 * self.rto_us, 60_000_000)
        self.rto_at = None
        self.rack_at = None
        self.recovery_end_seq = self.next_seq - 1
        self.scheme.on_rto(now_us, self)

    def _declare_lost(self, seq: int) -> None:
        p = self.unacked.pop(seq)
        self.inflight -= p.size
        if self.media is None:  # real-time media is never sent again
            self.retx_bytes_pending += p.size
        self.lost[seq] = p
        if len(self.lost) > 50_000:  # a late ACK after this many losses is not worth a table
            for old in list(self.lost)[:25_000]:
                del self.lost[old]

    def target_bps(self, now_us: int) -> float:
        return self.scheme.target_bps(now_us, self)

    def stats(self) -> dict[str, Any]:
        rtts = self.rtt_samples_ms
        return {
            "sent_bytes": self.sent_bytes,
            "acked_bytes": self.acked_bytes,
            "retransmitted_bytes": self.retransmitted_bytes,
            "lost_bytes": self.lost_bytes,
            "loss_events": self.loss_events,
            "rtos": self.rtos,
            "spurious_losses": self.spurious_losses,
            **(
                {
                    "media_bytes": self.media_bytes,
                    "padding_bytes": self.padding_bytes,
                    "buffer_dropped_bytes": self.buffer_dropped_bytes,
                }
                if self.media is not None
                else {}
            ),
            "min_rtt_ms": round(self.min_rtt_us / 1000.0, 3),
            "srtt_ms": round(self.srtt_us / 1000.0, 3),
            "rtt_samples": len(rtts),
            "mean_rtt_ms": round(math.fsum(rtts) / len(rtts), 3) if rtts else None,
        }


# subclassed outside the modules mypyc compiles for speed (sim/compiled.py)
@mypyc_attr(allow_interpreted_subclasses=True)
class TransportReceiver:
    """The bulk flow's receiver: every delivered packet is acknowledged through ``ack`` (the
    engine puts the ACK on the uplink) and counted."""

    def __init__(self, ack: Callable[[Packet, int], None], header: int = HEADER) -> None:
        self.ack = ack
        self.header = header  # bytes of a packet that are not payload
        self.received_bytes = 0
        self.received = 0
        self.net_latency_ms: list[float] = []  # per packet: sent -> delivered to the UE
        self.queue_delay_ms: list[float] = []  # per packet: reached the gNB -> delivered

    def on_packet(self, p: Packet, t_us: int) -> None:
        self.received += 1
        self.received_bytes += p.size - self.header
        self.net_latency_ms.append((t_us - p.send_us) / 1000.0)
        self.queue_delay_ms.append((t_us - p.arrive_us) / 1000.0)
        self.ack(p, t_us)


__all__ = [
    "MIN_PADDING",
    "MSS",
    "WINDOW_SCHEMES",
    "MediaQueue",
    "RateSample",
    "TransportReceiver",
    "TransportSender",
    "WindowContext",
    "WindowScheme",
    "build_window_scheme",
    "register_window_scheme",
]
