"""The x264-like encoder model (``sim/vbv_encoder.py``): ABR inside a VBV buffer of k frames."""

from __future__ import annotations

import numpy as np
import pytest

from octoric.sim.vbv_encoder import VbvEncoder
from octoric.sim.video import VideoConfig, VideoSender

pytestmark = pytest.mark.unit

FPS = 30.0


def _sizes(k: float, targets: list[float], seed: int = 1, **kw: float) -> np.ndarray:
    cfg = VideoConfig(encoder="x264", vbv_frames=k, **kw)  # type: ignore[arg-type]
    enc = VbvEncoder(cfg, np.random.default_rng(seed), targets[0])
    w = [cfg.i_ratio if f % cfg.gop == 0 else 1.0 for f in range(len(targets))]
    return np.array([enc.frame_bytes(t, w[f]) * 8.0 for f, t in enumerate(targets)])


@pytest.mark.parametrize("k", [2, 4, 12])
def test_long_run_rate_is_the_target(k: float) -> None:
    bits = _sizes(k, [10e6] * 1800)  # 60 s, I-frames every 10 s included
    assert bits[150:].sum() * FPS / (len(bits) - 150) == pytest.approx(10e6, rel=0.04)


@pytest.mark.parametrize("k", [2, 4, 25])
def test_no_window_exceeds_the_vbv_buffer(k: float) -> None:
    """Over any n frames the encoder sends at most its buffer plus n budgets: the VBV bound,
    whatever the content and the prediction error."""
    budget = 10e6 / FPS
    bits = _sizes(k, [10e6] * 900, complexity_std=0.4, overshoot_std=0.3)
    c = np.concatenate([[0.0], np.cumsum(bits)])
    for n in (1, 5, 30, 300):
        worst = float(np.max(c[n:] - c[:-n]))
        assert worst <= k * budget + n * budget + 1.0, (n, worst / budget)


def test_overshoot_after_a_drop_grows_with_the_buffer() -> None:
    """OCC Fig. 15: a larger VBV buffer lags a 4x drop of the target longer (more bits above
    the new target right after it)."""
    targets = [20e6] * 300 + [5e6] * 60
    budget = 5e6 / FPS

    def excess(k: float) -> float:
        runs = [_sizes(k, targets, seed=s)[300:] for s in range(8)]
        return float(np.mean([np.clip(r - budget, 0, None).sum() for r in runs]))

    e = [excess(k) for k in (2, 4, 12, 25)]
    assert e == sorted(e) and e[-1] > 5 * e[0], e
    assert e[0] < 2 * 2 * budget  # a 2-frame buffer holds at most ~2 frames of excess


def test_a_smaller_target_shrinks_the_buffer_at_once() -> None:
    enc = VbvEncoder(VideoConfig(encoder="x264", vbv_frames=10), np.random.default_rng(0), 20e6)
    enc.frame_bytes(20e6, 1.0)
    enc.frame_bytes(2e6, 1.0)
    assert enc.fill <= enc.buffer_bits == pytest.approx(10 * 2e6 / FPS)


def test_the_sender_uses_the_configured_model() -> None:
    rng = np.random.default_rng(0)
    s = VideoSender(0, 1, VideoConfig(encoder="x264", vbv_frames=3), rng, 1e6)
    assert isinstance(s.enc, VbvEncoder) and s.enc.k == 3
    assert not isinstance(VideoSender(0, 1, VideoConfig(), rng, 1e6).enc, VbvEncoder)


def test_rate_factor_follows_a_raise_over_about_four_buffers() -> None:
    """x264's ABR sums decay by 1 - 0.25 / k per frame: after a 4x raise the frames reach the
    new target over ~4k frames, so a 25-frame buffer takes several times a 2-frame one."""
    targets = [5e6] * 300 + [20e6] * 600
    budget = 20e6 / FPS

    def frames_to_90(k: float) -> float:
        out = []
        for s in range(8):
            b = _sizes(k, targets, seed=s, complexity_std=0.0, overshoot_std=0.0)[300:]
            avg = np.convolve(b, np.ones(5) / 5, "valid")
            out.append(int(np.argmax(avg >= 0.9 * budget)))
        return float(np.mean(out))

    fast, slow = frames_to_90(2), frames_to_90(25)
    assert fast <= 20 and slow >= 3 * fast, (fast, slow)
