"""Flow kinds, found by traffic type (``FlowSpec.traffic``) in one registry: each builds a flow's
parts and schedules its first events. Within a traffic type the scheme picks the parts (video:
``sim/video_on_transport.py``'s registry, then ``sim/cc``'s rate controllers)."""

from __future__ import annotations

from collections.abc import Callable

from octoric.sim.errors import ScenarioError
from octoric.sim.flows.host import FlowHost
from octoric.sim.flows.state import FlowState
from octoric.sim.scenario import FlowSpec

# (engine, flow index, UE index, spec) -> the flow, its first events pushed
FlowBuilder = Callable[[FlowHost, int, int, FlowSpec], FlowState]
TRAFFIC: dict[str, FlowBuilder] = {}


def register_traffic(*names: str) -> Callable[[FlowBuilder], FlowBuilder]:
    def deco(builder: FlowBuilder) -> FlowBuilder:
        for name in names:
            TRAFFIC[name] = builder
        return builder

    return deco


def build_flow(host: FlowHost, idx: int, ue: int, spec: FlowSpec) -> FlowState:
    try:
        builder = TRAFFIC[spec.traffic]
    except KeyError:
        raise ScenarioError(
            f"unknown traffic {spec.traffic!r} (known: {', '.join(sorted(TRAFFIC))})"
        ) from None
    return builder(host, idx, ue, spec)


def one_way_us(spec: FlowSpec) -> int:
    """The wired path's one-way delay (half its RTT)."""
    return int(spec.path.rtt_ms * 500)
