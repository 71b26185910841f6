"""The two clocks that drive an ``Engine``: both only call ``engine.run_until(slot)``.

``OfflineClock`` runs simulated time as fast as possible. ``WallClock`` paces the engine
by the wall clock (slot by slot, in ticks); the live driver of issue #5/#6 wraps it, adding
the E2 node agent (a ``KpmSink``) and a UDP ingress that calls ``engine.inject_packet``
from ``on_tick``. Algorithm objects are the same under both clocks.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from octoric.sim.engine import Engine


class OfflineClock:
    def run(self, engine: Engine, end_slot: int | None = None) -> float:
        """Advance to ``end_slot`` (default: the scenario's end); returns wall seconds."""
        t0 = time.monotonic()
        engine.run_until(engine.end_slot if end_slot is None else end_slot)
        return time.monotonic() - t0


@dataclass
class WallClockStats:
    ticks: int = 0
    late_ticks: int = 0  # ticks that started after their deadline
    max_lag_ms: float = 0.0  # how far simulated time trailed the wall clock at worst


class WallClock:
    """Keeps simulated time at the wall clock: every ``tick_ms`` it advances the engine to
    the slot the wall clock has reached, then sleeps until the next tick."""

    def __init__(
        self,
        tick_ms: float = 1.0,
        now: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.tick_s = tick_ms / 1000.0
        self.now = now
        self.sleep = sleep
        self.stats = WallClockStats()

    def run(
        self,
        engine: Engine,
        duration_s: float,
        on_tick: Callable[[Engine, int], None] | None = None,
    ) -> WallClockStats:
        st = self.stats
        start = self.now()
        slot_s = engine.slot_us / 1e6
        end_slot = min(engine.end_slot, round(duration_s / slot_s))
        next_tick = start
        while engine.slot < end_slot:
            wall = self.now()
            if wall - next_tick > self.tick_s:
                st.late_ticks += 1
            target = min(end_slot, int((wall - start) / slot_s) + 1)
            if on_tick is not None:
                on_tick(engine, target)
            if target > engine.slot:
                engine.run_until(target)
            st.ticks += 1
            lag = (self.now() - start) - engine.slot * slot_s
            st.max_lag_ms = max(st.max_lag_ms, lag * 1000.0)
            next_tick += self.tick_s
            delay = next_tick - self.now()
            if delay > 0:
                self.sleep(delay)
        return st
