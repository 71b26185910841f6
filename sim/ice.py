"""ICE connectivity checks of a WebRTC call (RFC 8445 §7.2, as libwebrtc M125 runs them on a
selected candidate pair; ``p2p/base/connection.cc``, ``basic_ice_controller.cc``,
``p2p_constants.cc``; read, not copied). Pure state, no engine: the flow sends the pings and
delivers the responses.

Why the simulator needs them (issue #47): both agents of a call ping each other over the media
path. A sender's request travels down the cell's queue behind the media and the receiver's
response to it comes back up; a receiver's request goes up and the sender's response comes down
the same queue. In an outage the downlink holds both, no response comes back, and after five
unanswered pings and 5 s the pair is *unreliable*: libwebrtc's transport is then not writable
and a Chromium sender discards its media before the socket (getStats: the candidate pair's
``bytesSent`` stops while ``outbound-rtp``'s grows), a receiver its RTCP, so the transport
feedback stops. Measured on Chromium 156 across ATT-LTE-driving's outage (five calls,
tests/sim/vectors/chromium-ice-outage): both sides stopped 5.0-6.3 s after the last delivery
and pinged every 62.5 ms until the queue drained.
The feedback silence (> 2 s) then gives the sender a fresh delay detector when the backlog
arrives, which is why Chromium's estimate survives an outage that the simulator's GCC, fed a
straggler a second all through it, read as over-use.
"""

from __future__ import annotations

# p2p_constants.cc and connection.cc (M125)
STABLE_PING_US = 2_500_000  # STRONG_AND_STABLE_WRITABLE_CONNECTION_PING_INTERVAL
STABILIZING_PING_US = 900_000  # WEAK_OR_STABILIZING_WRITABLE_CONNECTION_PING_INTERVAL
# a weak (not writable) channel pings this often: M125's WEAK_PING_INTERVAL is 48 ms, Chromium
# 156 was measured at 62.5 ms between checks (five ATT-LTE-driving calls, both agents)
WEAK_PING_US = 62_500
UNWRITABLE_MIN_CHECKS = 5  # CONNECTION_WRITE_CONNECT_FAILURES
UNWRITABLE_TIMEOUT_US = 5_000_000  # CONNECTION_WRITE_CONNECT_TIMEOUT
RTT_RATIO = 3  # the RTT's moving average: (3 x old + new) / 4
MIN_RTT_US, MAX_RTT_US = 100_000, 60_000_000  # ConservativeRTTEstimate's clamp of 2 x rtt

# bytes on the wire (IPv4 + UDP + STUN), as the sniffers saw Chromium 156's checks
REQUEST_BYTES = 128
RESPONSE_BYTES = 92
# Packet.msg of a check and of a response on the media path: below padding's -1, so a
# receiver tells them from media (>= 0) and padding with one comparison
STUN_REQUEST, STUN_RESPONSE = -2, -3


class IceConnection:
    """One agent's view of the selected candidate pair: its pings, their responses and whether
    it may send (writable or, before the unreliable state, still presumed so).

    ``writable`` False is libwebrtc's STATE_WRITE_UNRELIABLE (and later TIMEOUT): the channel is
    not writable, so ``BaseChannel`` sends neither media nor RTCP. Any response makes it
    writable again."""

    __slots__ = (
        "down_since_us",
        "down_us",
        "last_ping_us",
        "rtt_us",
        "samples",
        "unanswered",
        "writable",
    )

    def __init__(self, rtt_us: int) -> None:
        self.writable = True
        self.rtt_us = max(rtt_us, 1)
        self.samples = RTT_RATIO + 2  # the call's set-up checks made it stable
        self.unanswered: list[int] = []  # send times of pings since the last response
        self.last_ping_us: int | None = None
        self.down_us = 0  # time not writable, over the spells that ended
        self.down_since_us = -1  # when the current spell began

    def stable(self, now_us: int) -> bool:
        """``Connection::stable``: enough RTT samples and no response overdue by 2 x rtt."""
        if self.samples <= RTT_RATIO + 1:
            return False
        return not (self.unanswered and now_us - self.unanswered[0] > 2 * self.rtt_us)

    def _interval_us(self, now_us: int) -> int:
        if not self.writable:
            return WEAK_PING_US
        return STABLE_PING_US if self.stable(now_us) else STABILIZING_PING_US

    def _unreliable_at(self) -> int | None:
        """When ``UpdateState`` will find too many failures for too long (None: not yet)."""
        u = self.unanswered
        if not self.writable or len(u) < UNWRITABLE_MIN_CHECKS:
            return None
        rtt = min(max(2 * self.rtt_us, MIN_RTT_US), MAX_RTT_US)
        return max(u[UNWRITABLE_MIN_CHECKS - 1] + rtt, u[0] + UNWRITABLE_TIMEOUT_US) + 1

    def update(self, now_us: int) -> None:
        t = self._unreliable_at()
        if t is not None and now_us >= t:
            self.writable = False
            self.down_since_us = now_us

    def ping_due(self, now_us: int) -> bool:
        last = self.last_ping_us
        return last is None or now_us >= last + self._interval_us(now_us)

    def on_ping_sent(self, now_us: int) -> None:
        self.last_ping_us = now_us
        self.unanswered.append(now_us)

    def on_response(self, now_us: int, ping_sent_us: int) -> None:
        """``ReceivedPingResponse``: every outstanding ping is answered, the pair writable."""
        rtt = max(now_us - ping_sent_us, 1)
        self.rtt_us = (
            rtt if self.samples == 0 else (RTT_RATIO * self.rtt_us + rtt) // (RTT_RATIO + 1)
        )
        self.samples += 1
        self.unanswered.clear()
        if not self.writable:
            self.down_us += now_us - self.down_since_us
        self.writable = True

    def unwritable_us(self, now_us: int) -> int:
        """The time the pair was not writable up to ``now_us``."""
        return self.down_us + (0 if self.writable else now_us - self.down_since_us)

    def next_check_us(self, now_us: int) -> int:
        """When the agent next has something to do: a ping due, or the unreliable state."""
        last = self.last_ping_us if self.last_ping_us is not None else now_us
        if not self.writable:
            nxt = last + WEAK_PING_US
        elif self.unanswered:
            # stable now, stabilizing once the response is 2 x rtt late: look again then
            nxt = min(
                last + STABLE_PING_US,
                max(last + STABILIZING_PING_US, self.unanswered[0] + 2 * self.rtt_us),
            )
        else:
            nxt = last + STABLE_PING_US
        t = self._unreliable_at()
        if t is not None:
            nxt = min(nxt, t)
        return max(nxt, now_us + 1)

    def tick(self, now_us: int) -> bool:
        """Update the state; True if a ping is to be sent now (it is recorded as sent)."""
        self.update(now_us)
        if self.ping_due(now_us):
            self.on_ping_sent(now_us)
            return True
        return False
