"""Flow kinds, one file each, found by traffic type in one registry (``registry.py``); the engine
builds every flow with ``build_flow`` and runs their events (``sim/events.py``) without knowing
any kind or scheme. A new traffic type is a new file here that calls ``register_traffic`` and adds
its event kinds with ``event_kind``, plus one import line below; a new scheme within a type is a
file in ``sim/cc/`` (rate controllers, window schemes, video on the transport)."""

from __future__ import annotations

# Each import registers its traffic types and event kinds (explicit: the graph stays readable).
from octoric.sim.flows import bulk, dash, passive, video
from octoric.sim.flows.host import FlowHost
from octoric.sim.flows.registry import TRAFFIC, FlowBuilder, build_flow, register_traffic
from octoric.sim.flows.state import FlowState

__all__ = [
    "TRAFFIC",
    "FlowBuilder",
    "FlowHost",
    "FlowState",
    "build_flow",
    "bulk",
    "dash",
    "passive",
    "register_traffic",
    "video",
]
