"""Video flows (``traffic: video``): on the packet-level transport when a scheme of
``sim/video_on_transport.py``'s registry carries it (Dumbo, OctoBBR, AWStream, Salsify*, a window
scheme's name), else paced at a ``sim/cc`` rate controller's target."""

from __future__ import annotations

from octoric.sim.flows import rtp_video, transport_video
from octoric.sim.flows.host import FlowHost
from octoric.sim.flows.registry import register_traffic
from octoric.sim.flows.state import FlowState
from octoric.sim.scenario import FlowSpec
from octoric.sim.video_on_transport import video_transport


@register_traffic("video")
def build(host: FlowHost, idx: int, ue: int, spec: FlowSpec) -> FlowState:
    factory = video_transport(spec.scheme)
    if factory is not None:
        return transport_video.build(host, idx, ue, spec, factory)
    return rtp_video.build(host, idx, ue, spec)
