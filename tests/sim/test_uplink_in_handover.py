"""The UE's feedback cannot leave while it is detached (handover interruption): it is held
and sent when the UE is attached again, as the delayed ACKs of ToN'22 §II-B."""

from __future__ import annotations

from typing import Any

import pytest

from octoric.sim.engine import Engine
from octoric.sim.scenario import (
    ChannelSpec,
    FlowSpec,
    MobilitySpec,
    RanSpec,
    Scenario,
    UeSpec,
)  # fmt: skip

pytestmark = pytest.mark.unit


def _run(held: bool) -> tuple[Engine, list[tuple[float, int]], list[int]]:
    mob = MobilitySpec("hsr", ho_interval_s=2.0, ho_duration_ms=300.0, ho_duration_cv=0.0,
                       failure_prob=0.0, pingpong_fraction=0.0)  # fmt: skip
    flow = FlowSpec(scheme="gcc", start_mbps=2.0, uplink_held_in_handover=held)
    ue = UeSpec(channel=ChannelSpec("constant", rate_mbps=20.0), flows=[flow], mobility=mob)
    eng = Engine(Scenario(name="ho", duration_s=12.0, ran=RanSpec(cells=2), ues=[ue]), seed=2)
    f = eng.flows[0]
    assert f.ctrl is not None
    seen: list[tuple[float, int]] = []  # (arrival s, packets reported)
    inner = f.ctrl.on_feedback

    def spy(now_us: int, batch: Any) -> None:
        seen.append((now_us / 1e6, len(batch.seqs)))
        inner(now_us, batch)

    f.ctrl.on_feedback = spy  # type: ignore[method-assign]
    received: list[int] = []  # packets the UE got
    r = f.receiver
    assert r is not None
    on_packet = r.on_packet

    def count(p: Any, now_us: int) -> None:
        received.append(p.seq)
        on_packet(p, now_us)

    r.on_packet = count  # type: ignore[method-assign]
    eng.run()
    return eng, seen, received


def test_feedback_waits_out_the_interruption_and_loses_nothing() -> None:
    eng, seen, received = _run(held=True)
    hos = [h for h in eng.handovers if not h.failed]
    assert len(hos) >= 3
    f = eng.flows[0]
    ul_s = f.ul_delay_us / 1e6
    for h in hos:
        # nothing arrives from just after the UE left until the uplink delay after it is back
        lo, hi = h.start_s + ul_s + 1e-6, h.start_s + h.outage_ms / 1000.0 + ul_s
        assert not [t for t, _ in seen if lo < t < hi], (h, [t for t, _ in seen if lo < t < hi])
    assert f.feedback_held > 0
    # every packet the UE got is reported, late or not (or waits for the next interval)
    r = f.receiver
    assert r is not None
    assert sum(n for _, n in seen) + len(r.fb.seqs) == len(received) > 1000


def test_without_the_hold_feedback_keeps_arriving_during_the_interruption() -> None:
    eng, seen, _ = _run(held=False)
    f = eng.flows[0]
    ul_s = f.ul_delay_us / 1e6
    during = [
        t for h in eng.handovers if not h.failed for t, _ in seen
        if h.start_s + ul_s + 1e-6 < t < h.start_s + h.outage_ms / 1000.0
    ]  # fmt: skip
    assert during and f.feedback_held == 0
