"""The netem-like wired path (issue #14's models): random loss and an RTT re-drawn every
100 ms, as MORC's lab emulated them (CHANTS'18 §4.1, Table 1); and what they do to the schemes
there: loss and RTT jitter cost CUBIC, jitter costs BBR, MORC keeps the link in use."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from octoric.sim.engine import Engine
from octoric.sim.errors import ScenarioError
from octoric.sim.scenario import ChannelSpec, FlowSpec, Scenario, UeSpec, validate
from octoric.sim.video import WiredPath, WiredPathConfig

pytestmark = pytest.mark.unit


def test_loss_and_a_varying_rtt_keep_packets_in_order() -> None:
    cfg = WiredPathConfig(rtt_ms=12.0, loss=0.01, rtt_max_ms=60.0)
    path = WiredPath(cfg, np.random.default_rng(1))
    assert not path.simple and WiredPath(WiredPathConfig()).simple
    out = [path.arrival_us(t, 1500) for t in range(0, 10_000_000, 200)]  # 50 000 packets
    got = [a for a in out if a is not None]
    assert 0.008 < 1 - len(got) / len(out) < 0.012  # ~1 % lost
    assert got == sorted(got)  # FIFO
    delay_ms = [(a - t) / 1000 for t, a in zip(range(0, 10_000_000, 200), out, strict=True)
                if a is not None]  # fmt: skip
    # the RTT varies in [12, 60] ms, the extra on this direction: one way 6 .. 6 + 48 ms
    assert min(delay_ms) >= 6.0 and max(delay_ms) <= 54.0 + 1.0
    assert np.percentile(delay_ms, 90) - np.percentile(delay_ms, 10) > 10.0


def test_bad_path_settings_are_refused() -> None:
    for path, key in ((WiredPathConfig(loss=1.0), "loss"),
                      (WiredPathConfig(rtt_ms=40, rtt_max_ms=20), "rtt_max_ms")):  # fmt: skip
        sc = Scenario(name="x", ues=[UeSpec(flows=[FlowSpec(path=path)])])
        with pytest.raises(ScenarioError, match=key):
            validate(sc)


def _util(scheme: str, **path: Any) -> float:
    flow = FlowSpec(traffic="bulk", scheme=scheme, path=WiredPathConfig(rtt_ms=12.0, **path))
    buffer = int(50e6 * 0.3 / 8)  # 300 ms, as MORC's lab
    ue = UeSpec(channel=ChannelSpec("constant", rate_mbps=50.0), flows=[flow],
                queue_limit_bytes=buffer)  # fmt: skip
    eng = Engine(Scenario(name="netem", duration_s=10.0, ues=[ue]), 3)
    eng.run()
    u = eng.ues[0]
    return float(u.delivered_bytes / u.cap_bytes)


def test_loss_and_jitter_cost_cubic_jitter_costs_bbr_morc_keeps_the_link() -> None:
    lossy, jitter = {"loss": 0.0005}, {"rtt_max_ms": 60.0}
    cubic = _util("cubic")
    assert _util("cubic", **lossy) < 0.85 * cubic
    assert _util("cubic", **lossy, **jitter) < 0.6 * cubic
    bbr = _util("bbr")
    assert _util("bbr", **lossy) >= 0.9 * bbr  # BBR v1 does not read loss as congestion
    assert _util("bbr", **jitter) < 0.95 * bbr
    assert _util("morc", **lossy, **jitter) >= 0.9
