"""Every UE's summary has ``convergence_s`` (issue #14's metrics): the time from its flows' start
until it receives 90 % of its capacity, held over 2 s; None when it never does."""

from __future__ import annotations

import pytest

from octoric.sim.engine import Engine
from octoric.sim.scenario import ChannelSpec, FlowSpec, Scenario, UeSpec
from octoric.sim.summary import build_summary
from octoric.sim.video import WiredPathConfig

pytestmark = pytest.mark.unit


def _ue_summary(flow: FlowSpec, seconds: float = 15.0) -> dict[str, object]:
    ue = UeSpec(channel=ChannelSpec("constant", rate_mbps=10.0), flows=[flow])
    eng = Engine(Scenario(name="conv", duration_s=seconds, ues=[ue]), 1)
    return dict(build_summary(eng, eng.run())["ues"][0])


def test_a_bulk_bbr_transfer_converges_within_seconds_and_later_when_it_starts_later() -> None:
    path = WiredPathConfig(rtt_ms=40.0)
    early = _ue_summary(FlowSpec(traffic="bulk", scheme="bbr", path=path))
    late = _ue_summary(FlowSpec(traffic="bulk", scheme="bbr", path=path, start_s=5.0))
    assert isinstance(early["convergence_s"], float) and 0.0 < early["convergence_s"] < 3.0
    # measured from the flow's own start: the same transfer 5 s later converges as fast
    assert isinstance(late["convergence_s"], float)
    assert abs(late["convergence_s"] - early["convergence_s"]) < 1.0


def test_an_application_limited_flow_never_converges() -> None:
    s = _ue_summary(FlowSpec(traffic="video", scheme="fixed", rate_mbps=2.0))
    assert s["convergence_s"] is None and s["utilization"] is not None
