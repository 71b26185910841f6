"""Flows without a sender here: ``backlogged`` (the gNB queue always holds data from
``start_s``), ``none`` and ``real`` (packets from outside: the live real-UE path,
``Engine.inject_packet``)."""

from __future__ import annotations

from octoric.sim.events import event_kind
from octoric.sim.flows.host import FlowHost
from octoric.sim.flows.registry import register_traffic
from octoric.sim.flows.state import FlowState
from octoric.sim.scenario import FlowSpec


@register_traffic("backlogged")
def build_backlogged(host: FlowHost, idx: int, ue: int, spec: FlowSpec) -> FlowState:
    f = FlowState(idx, ue, spec, None, None, None, None)
    host.push(int(spec.start_s * 1e6), BACKLOG_STARTS, f)
    return f


@register_traffic("none", "real")
def build_quiet(host: FlowHost, idx: int, ue: int, spec: FlowSpec) -> FlowState:
    return FlowState(idx, ue, spec, None, None, None, None)


def _backlog_starts(host: FlowHost, t: int, f: FlowState) -> None:
    host.ues[f.ue].queue.backlogged = True


BACKLOG_STARTS = event_kind(_backlog_starts)
