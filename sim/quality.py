"""Video quality of a run: a measured rate -> SSIM/PSNR model and the SQI-SSIM score.

**Rate -> quality.** The simulator encodes no pixels, so a frame's quality comes from the
rate its encoder gave it: ``FrameTable.quality_bps`` (the frame's bits over its content
complexity, per second: what an average frame would get at the encoder's current quantizer;
``video.VideoEncoder`` / ``vbv_encoder.VbvEncoder``), in bits per pixel at the configured
resolution and frame rate, through a curve measured with libx264 at real-time settings
(``octoric eval rate-quality``; the table in ``rate_quality.json`` beside this module; docs/sim.md
"Video quality"). Between measured points the curve is linear in dB against ln(bpp); outside
them it is held at the end points (no extrapolation).

**Layers.** SVC costs bits: VP8-SVC frames are 15-18 % larger than plain VP8 (Octopus SEC'23
§6.1), so an SVC stream's rate buys the quality of ``rate / (1 + svc_overhead)``. A spatial
layer k decoded gives the quality of its cumulative rate (§6.2: layer k's *cumulative* target
is ``spatial_cumulative[k] x B``).

**SQI-SSIM** (Octopus SEC'23 §6.2, after Duanmu et al. 2017 and Vantage): the mean over every
frame slot of the camera (frames encoded and frames the encoder skipped) of the SSIM of that
frame if it was decoded, else the SSIM of the last decoded frame x ``exp(-t / decay)`` with t
the time since that frame (a frozen picture loses quality the longer it stays). The paper names
the form, not the constant: ``sqi_decay_s`` (default 1 s) is ours. Nor does it say whether the
SSIM is on its 0-1 scale or in dB (-10 log10(1 - SSIM), the scale of Salsify's and Vantage's
plots; a 41-57 % difference, as §6.2 reports, fits dB better, as on the 0-1 scale every score
here is above 0.6): ``sqi_ssim`` is the 0-1 score, ``sqi_ssim_db`` the same with each frame's
SSIM in dB (a frozen frame's dB value decays).
"""

from __future__ import annotations

import bisect
import json
import math
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from octoric.sim.errors import SimError

MODELS_FILE = Path(__file__).with_name("rate_quality.json")
SVC_OVERHEAD = 0.165  # Octopus SEC'23 §6.1: VP8-SVC frames are 15-18 % larger


class QualityModelError(SimError):
    """An unknown or malformed quality model."""


@dataclass(frozen=True)
class RateQuality:
    """One measured clip: ln(bpp) -> SSIM (dB) and PSNR (dB), piecewise linear."""

    name: str
    ln_bpp: tuple[float, ...]
    ssim_db: tuple[float, ...]
    psnr_db: tuple[float, ...]

    def _interp(self, ys: tuple[float, ...], bpp: float) -> float:
        xs = self.ln_bpp
        x = math.log(bpp) if bpp > 0 else -math.inf
        if x <= xs[0]:
            return ys[0]
        if x >= xs[-1]:
            return ys[-1]
        i = bisect.bisect_right(xs, x)
        x0, x1 = xs[i - 1], xs[i]
        return ys[i - 1] + (ys[i] - ys[i - 1]) * (x - x0) / (x1 - x0)

    def ssim_db_at(self, bpp: float) -> float:
        return self._interp(self.ssim_db, bpp)

    def psnr_db_at(self, bpp: float) -> float:
        return self._interp(self.psnr_db, bpp)


def ssim_from_db(db: float) -> float:
    return 1.0 - float(10.0 ** (-db / 10.0))


@cache
def _models_doc() -> dict[str, Any]:
    return json.loads(MODELS_FILE.read_text())  # type: ignore[no-any-return]


def model_names() -> list[str]:
    return sorted(_models_doc()["models"])


@cache
def load_model(name: str) -> RateQuality:
    models = _models_doc()["models"]
    if name not in models:
        raise QualityModelError(
            f"unknown video quality model {name!r} (known: {', '.join(sorted(models))})"
        )
    pts = sorted(models[name]["points"], key=lambda p: p["bpp"])
    if len(pts) < 2:
        raise QualityModelError(f"quality model {name!r} has fewer than two points")
    return RateQuality(
        name,
        tuple(math.log(p["bpp"]) for p in pts),
        tuple(float(p["ssim_db"]) for p in pts),
        tuple(float(p["psnr_db"]) for p in pts),
    )


@dataclass(frozen=True)
class QualityInputs:
    """What the score reads of one video flow (plain lists: see ``flow_quality``)."""

    model: str
    pixels_per_s: float  # width x height x fps
    svc: str  # "none", "temporal", "spatial"
    svc_overhead: float
    spatial_cumulative: tuple[float, ...]
    decay_s: float
    frame_enc_us: list[int]
    frame_quality_bps: list[float]
    frame_base_msg: list[int]
    frame_nmsgs: list[int]
    msg_decoded_us: list[int]  # -1: never decoded (may be shorter than the message count)
    skipped_us: list[int]  # capture times of frames the encoder skipped
    until_us: int  # frame slots after this are not scored (still in flight at the end)


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def flow_quality(q: QualityInputs) -> dict[str, Any]:
    """SSIM/PSNR of the decoded frames (mean of per-frame values; SSIM also in dB, as the
    Dumbo thesis reports it), per spatial layer, and SQI-SSIM over every camera frame slot."""
    model = load_model(q.model)
    scale = 1.0 if q.svc == "none" else 1.0 / (1.0 + q.svc_overhead)
    dec = q.msg_decoded_us
    nd = len(dec)
    cum = q.spatial_cumulative if q.svc == "spatial" else (1.0,)
    events: list[tuple[int, float | None]] = []  # (capture time, SSIM dB if decoded)
    ssim_db: list[float] = []
    psnr_db: list[float] = []
    layer_db: list[list[tuple[float, float]]] = [[] for _ in cum]  # (SSIM dB, PSNR) by top layer
    for f, t in enumerate(q.frame_enc_us):
        if t > q.until_us:
            break
        base = q.frame_base_msg[f]
        top = -1  # the highest layer decoded (a layer needs every one below it)
        for k in range(q.frame_nmsgs[f] if q.svc == "spatial" else 1):
            m = base + k
            if m < nd and dec[m] >= 0:
                top = k
            else:
                break
        if top < 0:
            events.append((t, None))
            continue
        top = min(top, len(cum) - 1)
        bpp = q.frame_quality_bps[f] * cum[top] * scale / q.pixels_per_s
        db, psnr = model.ssim_db_at(bpp), model.psnr_db_at(bpp)
        ssim_db.append(db)
        psnr_db.append(psnr)
        layer_db[top].append((db, psnr))
        events.append((t, db))
    events.extend((t, None) for t in q.skipped_us if t <= q.until_us)
    events.sort(key=lambda e: e[0])
    sqi: list[float] = []
    sqi_db: list[float] = []
    last_t, last_db = 0, 0.0
    for t, d in events:
        if d is not None:
            last_t, last_db = t, d
            sqi.append(ssim_from_db(d))
            sqi_db.append(d)
        else:
            decay = math.exp(-(t - last_t) / 1e6 / q.decay_s)
            sqi.append(ssim_from_db(last_db) * decay)
            sqi_db.append(last_db * decay)
    ssim = [ssim_from_db(x) for x in ssim_db]
    out: dict[str, Any] = {
        "model": q.model,
        "frames_scored": len(events),
        "ssim": _mean(ssim),
        "ssim_db": _mean(ssim_db),
        "psnr_db": _mean(psnr_db),
        "sqi_ssim": _mean(sqi),
        "sqi_ssim_db": _mean(sqi_db),
    }
    if q.svc == "spatial":  # per spatial layer: the frames whose highest decoded layer it is
        out["by_top_layer"] = [
            {"layer": k, "frames": len(v), "ssim_db": _mean([d for d, _ in v]),
             "psnr_db": _mean([p for _, p in v])}
            for k, v in enumerate(layer_db)
        ]  # fmt: skip
    return out
