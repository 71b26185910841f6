"""Bulk transfers (``traffic: bulk``): TCP-like, on the packet-level transport with a window
scheme (``spec.scheme``: cubic, bbr, ...); with ``size_mb`` a file download, then quiet."""

from __future__ import annotations

from octoric.sim.flows.host import FlowHost
from octoric.sim.flows.packet_transport import TIMER, ack_sender, report_handovers
from octoric.sim.flows.registry import one_way_us, register_traffic
from octoric.sim.flows.state import FlowState
from octoric.sim.scenario import FlowSpec
from octoric.sim.transport import (
    TransportReceiver,
    TransportSender,
    WindowContext,
    WindowScheme,
    build_window_scheme,
)


def window_flow(host: FlowHost, idx: int, ue: int,
                spec: FlowSpec) -> tuple[WindowScheme, FlowState]:  # fmt: skip
    """The window scheme and the state of a flow whose data the transport carries."""
    one_way = one_way_us(spec)
    scheme = build_window_scheme(
        spec.scheme, WindowContext(params=dict(spec.params), seed=host.seed * 1000 + idx)
    )
    f = FlowState(
        idx, ue, spec, None, None, None, host.wired_path(spec),
        ul_delay_us=one_way + int(spec.uplink_ms * 1000), dl_delay_us=one_way,
    )  # fmt: skip
    return scheme, f


@register_traffic("bulk")
def build(host: FlowHost, idx: int, ue: int, spec: FlowSpec) -> FlowState:
    scheme, f = window_flow(host, idx, ue, spec)
    size = None if spec.size_mb is None else round(spec.size_mb * 1e6)
    f.tx = TransportSender(idx, scheme, limit_bytes=size)
    f.tx_sink = TransportReceiver(ack_sender(host, f))
    report_handovers(f)
    f.tx_wake_us = int(spec.start_s * 1e6)
    host.push(f.tx_wake_us, TIMER, f)
    return f
