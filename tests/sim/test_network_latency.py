"""Per-packet one-way network latency (the OCC paper's headline metric): from the moment a
media packet leaves the sender's pacer to its arrival, so the sender's own queue is not in
it; frame latency (encode -> decodable) does count that queue."""

from __future__ import annotations

import numpy as np
import pytest

from octoric.sim.engine import Engine
from octoric.sim.scenario import ChannelSpec, FlowSpec, Scenario, UeSpec
from octoric.sim.summary import build_summary

pytestmark = pytest.mark.unit


def _engine(rtt_ms: float, fixed_mbps: float, link_mbps: float) -> Engine:
    flow = FlowSpec(scheme="fixed", rate_mbps=fixed_mbps, start_mbps=fixed_mbps)
    flow.path.rtt_ms = rtt_ms
    ue = UeSpec(channel=ChannelSpec("constant", rate_mbps=link_mbps), flows=[flow])
    eng = Engine(Scenario(name="owd", duration_s=6.0, ues=[ue]), seed=1)
    eng.run()
    return eng


def test_an_idle_link_shows_its_one_way_path_delay() -> None:
    """A light flow on a fast link: every packet's latency is the wired half-RTT plus the
    cell's slot-level delay, never less than the half-RTT."""
    eng = _engine(rtt_ms=40.0, fixed_mbps=1.0, link_mbps=50.0)
    r = eng.flows[0].receiver
    assert r is not None and len(r.net_latency_ms) > 500
    lat = np.asarray(r.net_latency_ms)
    assert lat.min() >= 20.0 - 1e-3
    assert np.percentile(lat, 99) < 20.0 + 10.0
    s = build_summary(eng, 1.0)["flows"][0]["network_latency_ms"]
    assert s["p50"] == pytest.approx(float(np.percentile(lat, 50)), abs=1e-3)
    assert set(s) == {"p50", "p95", "p99", "mean"}
    # a frame's packets wait for the pacer (2.5x the 1 Mbit/s target: ~4 ms per packet), so
    # frame latency carries the sender's queue and the network latency does not
    assert np.median(r.frame_latency_ms) > np.median(lat) + 5.0


def test_a_congested_cell_shows_in_the_tail() -> None:
    """Sending above the cell's rate builds the gNB queue: the network latency's tail grows
    far beyond the path delay (the queue is in the network, not in the sender)."""
    idle = _engine(rtt_ms=20.0, fixed_mbps=2.0, link_mbps=20.0)
    busy = _engine(rtt_ms=20.0, fixed_mbps=12.0, link_mbps=10.0)
    p99 = [float(np.percentile(np.asarray(e.flows[0].receiver.net_latency_ms), 99))
           for e in (idle, busy)]  # type: ignore[union-attr]  # fmt: skip
    assert p99[1] > 5 * p99[0], p99
