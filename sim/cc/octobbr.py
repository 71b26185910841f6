"""OctoBBR: the Octopus transport without the base station's help (SEC'23, Liu et al., "Octopus:
In-Network Content Adaptation to Control Congestion on 5G Links", §4.2 and §7.1), for video
flows on the packet-level transport (``--scheme octobbr``).

- BBR v1 (``sim/cc/bbr.py``) paces the packets; it "errs on the side of overestimating" the
  capacity, and its BtlBw is the bandwidth the rest uses.
- The transport buffer (the media queue) runs Algorithm 1 exactly as the gNB does
  (``contracts/octopus_dropper.py``): whole messages made obsolete by a newer dropper message
  are dropped at the head before any of their bytes is sent, and drop-by-bitrate compares a
  stream's max-min share of BtlBw with the message's bitrate threshold.
- The application encodes at B = BtlBw (the flow's start rate until BBR has a sample); with
  spatial SVC (``svc: spatial``) its cumulative layers are 0.2 B, 0.5 B and B per GoP, as the
  paper's §6.2 application (which also shortens the GoP to 10 frames: ``video.gop``).
- The packets carry the Octopus header (``video.octopus`` is turned on).

Octopus itself is OctoBBR with the gNB's dropper on the UE's queue (``dropper: true``).

Timeouts (``OctopusBbr``): the transport is unreliable (§4.2: "no packets are retransmitted")
and built on UDT, whose congestion-control hook for a timeout leaves the rate to the scheme;
BBR's model (Cardwell et al. 2016) has no one-segment window after a timeout: that is TCP's
loss recovery (RFC 5681's RTO rule, which Linux applies around tcp_bbr). So an RTO here
declares the packets in flight lost (none is sent again) and BBR goes on at its model's rate.
With TCP's rule the transport deadlocks whenever the gNB drops the one packet the collapsed
window lets out (a message it drops by bitrate after an outage): no ACK comes, the RTO backs
off, BtlBw ages to nothing (docs/sim.md).
"""

from __future__ import annotations

from dataclasses import replace

from octoric.sim.cc.bbr import Bbr
from octoric.sim.dropper import DropperConfig, OctopusDropper
from octoric.sim.transport import TransportSender
from octoric.sim.video import VideoSender
from octoric.sim.video_on_transport import (
    MediaApp,
    TransportVideo,
    TransportVideoContext,
    register_video_transport,
)

NAME = "octobbr"
BASE = "bbr"


class OctopusBbr(Bbr):
    """BBR v1 as the Octopus transport runs it: an RTO frees the window, no window collapse."""

    def on_rto(self, now_us: int, sender: TransportSender) -> None:
        self.conservation_until = None


def transport_buffer(bbr: Bbr, cfg: DropperConfig | None = None) -> OctopusDropper:
    """Algorithm 1 for the media queue, drop-by-bitrate against BBR's BtlBw."""
    return OctopusDropper(1000, cfg, rate_source=lambda: bbr.btlbw if bbr.btlbw > 0 else None)


class OctopusApp:
    """The Octopus application: encodes every frame at the transport's estimate (the GoP's rate
    before BBR has one); the send buffer's dropper sees each message it queues."""

    def on_frame(self, now_us: int, sender: VideoSender, tx: TransportSender) -> float:
        n0 = len(sender.pending)
        target = sender.encode(now_us, tx.scheme.sending_bps(tx) or sender.gop_bps)
        if tx.buffer_dropper is not None:
            for i in range(n0, len(sender.pending)):
                tx.buffer_dropper.on_enqueue(sender.pending[i], now_us)
        return target

    def on_queue(self, now_us: int, queue_bytes: int) -> None:
        """Nothing: the buffer's dropper, not the application, acts on the queue."""


@register_video_transport(NAME)
def octobbr_video(ctx: TransportVideoContext) -> TransportVideo:
    """OctoBBR: BBR, Algorithm 1 in its send buffer, the Octopus header on every packet."""
    bbr = OctopusBbr(ctx.window)

    def app(tx: TransportSender) -> MediaApp:
        return OctopusApp()

    return TransportVideo(bbr, app, video=replace(ctx.video, octopus=True),
                          buffer_dropper=transport_buffer(bbr))  # fmt: skip
