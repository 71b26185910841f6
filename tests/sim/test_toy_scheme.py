"""Adding a scheme or a traffic type touches no engine file (issue #40, done-when 2): from outside
``sim/``, a toy video-on-the-transport scheme and a toy traffic type with its own event kind are
registered and run through the normal entry point (``run_offline``) and summary."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from octoric.sim import events
from octoric.sim.flows import TRAFFIC, FlowHost, FlowState, register_traffic
from octoric.sim.packets import Packet
from octoric.sim.runner import run_offline
from octoric.sim.scenario import ChannelSpec, FlowSpec, Scenario, UeSpec
from octoric.sim.transport import TransportSender, build_window_scheme
from octoric.sim.video import VideoSender
from octoric.sim.video_on_transport import (
    VIDEO_TRANSPORTS,
    MediaApp,
    TransportVideo,
    TransportVideoContext,
    register_video_transport,
)

pytestmark = pytest.mark.unit
TOY = "toy-half"
CBR = "toy-cbr"


class HalfRate:
    """Encodes every frame at half the transport's estimate (the start rate before one)."""

    def __init__(self, start_bps: float) -> None:
        self.start_bps = start_bps
        self.frames = 0

    def on_frame(self, now_us: int, sender: VideoSender, tx: TransportSender) -> float:
        est = tx.scheme.sending_bps(tx)
        self.frames += 1
        return sender.encode(now_us, self.start_bps if est is None else est / 2)

    def on_queue(self, now_us: int, queue_bytes: int) -> None:
        """Nothing: a half-rate stream needs no queue control."""


def toy_video(ctx: TransportVideoContext) -> TransportVideo:
    def app(tx: TransportSender) -> MediaApp:
        return HalfRate(ctx.start_bps)

    return TransportVideo(build_window_scheme("bbr", ctx.window), app)


class Counter:
    """The toy traffic's receiver: bytes delivered to the UE."""

    def __init__(self) -> None:
        self.bytes = 0

    def on_packet(self, p: Packet, t_us: int) -> None:
        self.bytes += p.size


def build_cbr(host: FlowHost, idx: int, ue: int, spec: FlowSpec) -> FlowState:
    """1200-byte packets every 10 ms over the wired path (1 Mbit/s), no feedback."""
    f = FlowState(idx, ue, spec, None, None, None, host.wired_path(spec))
    f.ext_sink = Counter()
    host.push(int(spec.start_s * 1e6), CBR_TICK, f)
    return f


def _cbr_tick(host: FlowHost, t: int, f: FlowState) -> None:
    host.to_gnb(f, [Packet(f.idx, t // 10_000, 1200, t)])
    host.push(t + 10_000, CBR_TICK, f)


CBR_TICK = events.event_kind(_cbr_tick)


@pytest.fixture
def toys(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    # the registries are restored afterwards (monkeypatch remembers each key's state)
    monkeypatch.setitem(VIDEO_TRANSPORTS, TOY, toy_video)
    register_video_transport(TOY)(toy_video)
    monkeypatch.setitem(TRAFFIC, CBR, build_cbr)
    register_traffic(CBR)(build_cbr)
    yield


def _scenario(flows: list[FlowSpec]) -> Scenario:
    ch = ChannelSpec("constant", rate_mbps=20.0)
    return Scenario(name="toy", duration_s=3.0, ues=[UeSpec(channel=ch, flows=flows)])


def test_a_toy_video_scheme_runs_through_the_engine(toys: None) -> None:
    res = run_offline(_scenario([FlowSpec(traffic="video", scheme=TOY)]), seed=3)
    f = res.summary["flows"][0]
    assert f["scheme"] == TOY and f["window_scheme"] == "bbr" and f["transport"] == "packet"
    assert f["frames_sent"] == 90 and f["frames_decoded"] >= 80
    app = res.engine.flows[0].media_app
    assert isinstance(app, HalfRate) and app.frames == 90
    # half of BBR's estimate: the stream settles well under the 20 Mbit/s link
    assert 300 < f["frame_bitrate_kbps"] < 15_000


def test_a_toy_traffic_type_with_its_own_event_runs_through_the_engine(toys: None) -> None:
    spec = FlowSpec(scheme="none")
    spec.traffic = CBR  # type: ignore[assignment]
    res = run_offline(_scenario([spec]), seed=3)
    sink = res.engine.flows[0].ext_sink
    assert isinstance(sink, Counter)
    assert sink.bytes == pytest.approx(300 * 1200, rel=0.02)  # 3 s of 100 packets/s
    assert res.summary["ues"][0]["delivered_bytes"] == pytest.approx(sink.bytes, rel=0.01)
