"""``UeSpec.queue_limit_ms``: a bottleneck buffer given in time (MORC's "buffers dimensioned to
queue packets for 300 ms"), sized from the UE's capacity and re-sized every second as a tc
buffer re-set with each new link rate is (issue #46)."""

from __future__ import annotations

import pytest

from octoric.sim.engine import Engine
from octoric.sim.errors import ScenarioError
from octoric.sim.scenario import ChannelSpec, FlowSpec, Scenario, UeSpec, validate
from octoric.sim.summary import build_summary
from octoric.sim.video import WiredPathConfig

pytestmark = pytest.mark.unit


def _cubic(channel: ChannelSpec, seconds: float, **queue: float) -> Engine:
    flow = FlowSpec(traffic="bulk", scheme="cubic", path=WiredPathConfig(rtt_ms=20))
    ue = UeSpec(channel=channel, flows=[flow], **queue)  # type: ignore[arg-type]
    eng = Engine(Scenario(name="q", duration_s=seconds, ues=[ue]), 1)
    eng.run()
    return eng


@pytest.mark.parametrize("ms", [50.0, 200.0])
def test_cubic_fills_a_time_sized_buffer_to_its_depth_and_no_further(ms: float) -> None:
    eng = _cubic(ChannelSpec("constant", rate_mbps=10), 12.0, queue_limit_ms=ms)
    f = build_summary(eng, 0.0)["flows"][0]
    q = f["queue_delay_ms"]
    # CUBIC fills the buffer until it overflows: its queue reaches the depth, never beyond
    # (one 1500-byte packet at 10 Mbit/s is 1.2 ms; a slot is 1 ms)
    assert 0.8 * ms < q["p99"] <= ms + 2.5, q
    assert f["tail_dropped_packets"] > 0
    assert eng.ues[0].queue.limit_bytes == pytest.approx(10e6 / 8 * ms / 1000, rel=0.02)


def test_the_limit_follows_each_second_of_a_steps_channel() -> None:
    eng = _cubic(ChannelSpec("steps", high_mbps=20, low_mbps=3, switch_s=1.0), 6.0,
                 queue_limit_ms=300.0)  # fmt: skip
    ch = eng.channels[0]
    levels = ch.levels  # type: ignore[attr-defined]
    # the last second's rate, from the channel's own draw: 300 ms of it
    rate_bps = levels[5] / ch.k  # type: ignore[attr-defined]
    assert eng.ues[0].queue.limit_bytes == pytest.approx(rate_bps / 8 * 0.3, rel=0.02)
    assert len({round(x) for x in levels[:6]}) == 6  # six different seconds


def test_a_fixed_byte_buffer_is_untouched_without_queue_limit_ms() -> None:
    eng = _cubic(ChannelSpec("steps", high_mbps=20, low_mbps=3, switch_s=1.0), 3.0,
                 queue_limit_bytes=123_456)  # fmt: skip
    assert eng.ues[0].queue.limit_bytes == 123_456


def test_a_non_positive_time_limit_is_refused_with_its_field() -> None:
    sc = Scenario(name="q", ues=[UeSpec(queue_limit_ms=0.0)])
    with pytest.raises(ScenarioError, match="queue_limit_ms"):
        validate(sc)
