"""An x264-like encoder: one-pass ABR rate control inside a VBV buffer of ``vbv_frames`` frames.

Why this model (issue #14): the OCC paper ran libx264 under VBV and made its encoder lag with
the VBV size (2/4/12/25 frames, Fig. 15); the ``lag`` model (``video.VideoEncoder``) follows
its target with a first-order lag but never pays back what the content made it overshoot, so
a complex scene keeps frames above target for seconds. This one behaves as x264 does, in
three parts (x264's ``encoder/ratecontrol.c``, read for its behaviour, not copied):

- **Rate factor.** x264's one-pass ABR gives a frame ``complexity x rate_factor`` bits, with
  ``rate_factor = wanted_bits_window / complexity_sum``: both sums decay per frame by
  ``cbr_decay``, which under VBV with the max rate equal to the target is
  ``1 - (buffer_rate / buffer_size) x 0.5 x (1.5 - 1) = 1 - 0.25 / vbv_frames``. A target
  change therefore reaches the frame sizes over ~4 x ``vbv_frames`` frames (the encoder lag),
  and a complex stretch of content lowers the rate factor instead of overshooting for good.
- **VBV.** The buffer (``vbv_frames`` frames at the current target) fills by one frame's
  budget per frame and a frame may not take more than it holds: over any n frames the encoder
  sends at most ``buffer + n x budget``. A larger buffer allows larger bursts and slower
  convergence, the trade-off of Fig. 15. A smaller target (x264_encoder_reconfig) shrinks the
  buffer at once; what it held beyond the new size is gone.
- **Prediction error.** x264 sizes a frame from a prediction of its complexity; the real frame
  differs (``overshoot_std``, log-normal), within what the VBV allows.

Not modelled: x264's long-term ABR compensation (bits spent beyond those wanted scale the
next frames): with the VBV's max rate equal to the target the buffer already bounds any
long-term excess, and under the clamp the compensation only ever asks for more, which would
hold every frame at the clamp.

I-frames cost ``i_ratio`` P-frames of complexity (GoP start, or ``request_keyframe``); the
content complexity is the same AR(1) log-normal process as the ``lag`` model's.

Approximated: no per-macroblock-row VBV, no lookahead or MB-tree, no QP limits (so no
quality-driven floor other than ``min_frame_bytes``), one reference, no B-frames (real-time).
"""

from __future__ import annotations

import math
from typing import Protocol

import numpy as np

MIN_FRAME_BYTES = 64


class EncoderSettings(Protocol):
    """What the model reads of ``video.VideoConfig`` (a protocol: video.py imports this
    module, not the other way round)."""

    fps: float
    gop: int
    complexity_std: float
    complexity_corr_s: float
    overshoot_std: float
    vbv_frames: float


class VbvEncoder:
    """Frame sizes under x264-like ABR + VBV. Same interface as ``video.VideoEncoder``."""

    def __init__(self, cfg: EncoderSettings, rng: np.random.Generator, start_bps: float) -> None:
        self.cfg = cfg
        self.rng = rng
        self.rate = start_bps  # the current target (what the VBV's max rate is set to)
        self.dt = 1.0 / cfg.fps
        self.k = max(cfg.vbv_frames, 1.0)
        self.decay = 1.0 - 0.25 / self.k
        self.cx = 0.0
        self.cx_a = math.exp(-self.dt / max(cfg.complexity_corr_s, 1e-3))
        g = cfg.gop if cfg.gop > 0 else 10**9
        self.gop = g
        budget = start_bps * self.dt
        # both sums start as if the encoder had run at the start rate on average content
        self.wanted = budget / (1.0 - self.decay)
        self.cplx_sum = 1.0 / (1.0 - self.decay)
        self.fill = 0.9 * self.k * budget  # x264 starts the buffer 90 % full
        self.quality_bps = start_bps

    @property
    def buffer_bits(self) -> float:
        return self.k * self.rate * self.dt

    def frame_bytes(self, target_bps: float, weight: float) -> int:
        """The next frame's size in bytes at ``target_bps``; ``weight`` is its complexity
        relative to an average P-frame (``i_ratio`` for an I-frame, SVC layer weights)."""
        cfg = self.cfg
        self.rate = target_bps
        budget = target_bps * self.dt
        size_cap = self.buffer_bits
        self.fill = min(self.fill + budget, size_cap)
        # content: the same AR(1) log-normal complexity as the lag model
        self.cx = self.cx_a * self.cx + self.rng.normal(0.0, cfg.complexity_std) * math.sqrt(
            1 - self.cx_a * self.cx_a
        )
        cplx = weight * math.exp(self.cx)
        # one-pass ABR: the rate factor that would have hit the wanted bits so far
        self.wanted = self.wanted * self.decay + budget
        self.cplx_sum = self.cplx_sum * self.decay + cplx
        planned = cplx * self.wanted / self.cplx_sum
        noise = self.rng.normal(0.0, cfg.overshoot_std) if cfg.overshoot_std > 0 else 0.0
        bits = planned * math.exp(noise)
        bits = min(bits, self.fill)  # VBV: never more than the buffer holds
        bits = max(bits, MIN_FRAME_BYTES * 8.0)
        self.fill = max(self.fill - bits, 0.0)
        # bits per unit of content complexity, per second: the frame's quantizer, which sets
        # its picture quality (sim/quality.py)
        self.quality_bps = bits / cplx / self.dt
        return int(bits / 8.0)
