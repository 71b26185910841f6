"""What every flow on the packet-level transport (``sim/transport.py``) shares: its sender's
packets out on the wired path, per-packet ACKs back over the uplink, the sender's timer, and the
gNB's handover report reaching the server (BBR-H)."""

from __future__ import annotations

from collections.abc import Callable

from octoric.sim.events import event_kind
from octoric.sim.flows.host import FlowHost
from octoric.sim.flows.state import FlowState
from octoric.sim.packets import Packet


def transmit(host: FlowHost, f: FlowState, t: int) -> None:
    """Put what the transport may send now on the wire, and time its next wake-up."""
    tx = f.tx
    assert tx is not None
    host.to_gnb(f, tx.send(t))
    if f.media_app is not None and f.sender is not None:
        f.media_app.on_queue(t, f.sender.pending_bytes)
    wake = tx.wake_us(t)
    if wake is not None and (f.tx_wake_us is None or wake < f.tx_wake_us):
        f.tx_wake_us = wake
        host.push(wake, TIMER, f)


def ack_sender(host: FlowHost, f: FlowState) -> Callable[[Packet, int], None]:
    """The receiver's ACK for each packet, sent back to the flow's sender over the uplink."""

    def ack(p: Packet, t_us: int) -> None:
        host.push(t_us + f.ul_delay_us, ACK, (f, p.seq))

    return ack


def report_handovers(f: FlowState) -> None:
    """The flow's window scheme hears the gNB's handover reports (BBR-H's)."""

    def report(t_us: int) -> None:
        assert f.tx is not None
        f.tx.scheme.on_handover(t_us, f.tx)

    f.on_handover_report = report


def _ack(host: FlowHost, t: int, arg: tuple[FlowState, int]) -> None:
    f, seq = arg
    assert f.tx is not None
    f.tx.on_ack(t, seq)
    transmit(host, f, t)


def _timer(host: FlowHost, t: int, f: FlowState) -> None:
    if f.tx_wake_us == t:  # else a timer since moved earlier: that event did it
        f.tx_wake_us = None
        assert f.tx is not None
        f.tx.on_timer(t)
        transmit(host, f, t)


ACK = event_kind(_ack)
TIMER = event_kind(_timer)
