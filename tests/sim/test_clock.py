"""Both clocks drive the same engine through ``run_until``."""

from __future__ import annotations

import time

import pytest

from octoric.sim.clock import OfflineClock, WallClock
from octoric.sim.engine import Engine
from octoric.sim.scenario import load

pytestmark = pytest.mark.unit


def test_wall_clock_never_runs_ahead_of_the_wall() -> None:
    sc = load("static")
    sc.duration_s = 0.3
    eng = Engine(sc, seed=1)
    t0 = time.monotonic()
    seen: list[tuple[float, int]] = []

    def tick(e: Engine, target: int) -> None:
        seen.append((time.monotonic() - t0, e.slot))

    st = WallClock(tick_ms=5.0).run(eng, 0.3, on_tick=tick)
    wall = time.monotonic() - t0
    assert eng.slot == eng.end_slot
    assert wall >= 0.29  # paced, not as fast as possible
    for w, slot in seen:
        assert slot * 1e-3 <= w + 0.002  # simulated time never ahead of the wall clock
    assert st.ticks >= 20


def test_offline_and_fake_wall_clock_give_the_same_run() -> None:
    sc1, sc2 = load("multi-ue"), load("multi-ue")
    sc1.duration_s = sc2.duration_s = 2.0
    a, b = Engine(sc1, seed=3), Engine(sc2, seed=3)
    OfflineClock().run(a)
    fake = [0.0]

    def now() -> float:
        return fake[0]

    def sleep(s: float) -> None:
        fake[0] += s

    WallClock(tick_ms=1.0, now=now, sleep=sleep).run(b, 2.0)
    assert [u.delivered_bytes for u in a.ues] == [u.delivered_bytes for u in b.ues]
    assert [f.receiver.frame_latency_ms for f in a.flows if f.receiver] == [
        f.receiver.frame_latency_ms for f in b.flows if f.receiver
    ]
