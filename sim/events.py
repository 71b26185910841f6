"""Event kinds and their handlers: the engine pops ``(t_us, seq, kind, arg)`` from its heap and
calls ``HANDLERS[kind](engine, t_us, arg)``; it knows no kind but its own (packets at the gNB,
handovers, KPM). Flow kinds (``sim/flows/``) add theirs with ``event_kind`` when imported, so a new
traffic type or scheme with its own timers needs no engine edit.

A kind is an index into ``HANDLERS``, given in import order; it never decides the order of events
(that is ``(t_us, seq)``), so which number a kind gets changes no result."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

# (engine, now_us, arg): the engine is typed ``Any`` here so that flow modules, which see it as a
# ``FlowHost`` (sim/flows/host.py), and the engine's own handlers share one table
EventHandler = Callable[[Any, int, Any], None]
HANDLERS: list[EventHandler] = []
NAMES: list[str] = []  # for messages and debugging: the handler's name per kind


def event_kind(handler: EventHandler) -> int:
    """A new event kind whose events ``handler`` runs; returns the kind to push them with."""
    HANDLERS.append(handler)
    NAMES.append(getattr(handler, "__qualname__", repr(handler)))
    return len(HANDLERS) - 1
