"""DASH VoD clients (``traffic: dash``, ``sim/dash.py``): segments fetched over the packet-level
transport (the window scheme is the TCP below it, CUBIC in ToN'22); the client's requests go up
the UE's uplink, held while the UE is detached."""

from __future__ import annotations

from octoric.sim.dash import DashReceiver, DashSession, Request, SegmentSender
from octoric.sim.events import event_kind
from octoric.sim.flows.bulk import window_flow
from octoric.sim.flows.host import FlowHost
from octoric.sim.flows.packet_transport import ack_sender, transmit
from octoric.sim.flows.registry import register_traffic
from octoric.sim.flows.state import FlowState
from octoric.sim.scenario import FlowSpec

UPLINK_RETRY_US = 5_000  # a request made while the UE is detached waits for its uplink


@register_traffic("dash")
def build(host: FlowHost, idx: int, ue: int, spec: FlowSpec) -> FlowState:
    scheme, f = window_flow(host, idx, ue, spec)
    t0 = int(spec.start_s * 1e6)
    session = DashSession(spec.dash, idx, scheme.ctx.mss, t0)
    f.dash = session
    f.tx = SegmentSender(idx, scheme, session.queue)

    def segment_done(t_us: int) -> None:  # the client decides on the next one at once
        host.push(t_us, CLIENT_TIMER, f)

    def handover_report(t_us: int) -> None:  # the server application reads it too (DASH-H)
        assert f.tx is not None
        f.tx.scheme.on_handover(t_us, f.tx)
        session.dash_h.on_handover_report()

    f.tx_sink = DashReceiver(ack_sender(host, f), session, segment_done)
    f.on_handover_report = handover_report
    host.push(t0, CLIENT_TIMER, f)
    return f


def _client_timer(host: FlowHost, t: int, f: FlowState) -> None:
    assert f.dash is not None
    client = f.dash.client
    if client.wake_us != t:  # stale: the client has since been woken otherwise
        return
    req = client.on_timer(t)
    if req is not None:
        _request_up(host, t, (f, req))
    elif client.wake_us is not None:
        host.push(client.wake_us, CLIENT_TIMER, f)


def _request_up(host: FlowHost, t: int, arg: tuple[FlowState, Request]) -> None:
    """The HTTP request goes up the UE's uplink (held while the UE is detached, as the
    feedback of ``uplink_held_in_handover``) and the wired path to the server."""
    f = arg[0]
    if f.spec.uplink_held_in_handover and host.detached(f.ue):
        host.push(t + UPLINK_RETRY_US, REQUEST_UP, arg)
    else:
        host.push(t + f.ul_delay_us, REQUEST_AT_SERVER, arg)


def _request_at_server(host: FlowHost, t: int, arg: tuple[FlowState, Request]) -> None:
    f, req = arg
    assert f.dash is not None
    f.dash.serve(req)
    transmit(host, f, t)


CLIENT_TIMER = event_kind(_client_timer)
REQUEST_UP = event_kind(_request_up)
REQUEST_AT_SERVER = event_kind(_request_at_server)
