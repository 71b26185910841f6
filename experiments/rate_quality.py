"""``octoric eval rate-quality``: measure a rate -> quality (SSIM, PSNR) curve with a real
encoder, for the simulator's quality model (``sim/quality.py``, issue #14's SQI-SSIM).

Why measured here: the Octopus paper scores video with SQI-SSIM (§6.2) and the Dumbo thesis
with SSIM in dB, but neither gives the rate -> SSIM mapping of its encoder, and the simulator
encodes no pixels. So we encode real clips with libx264 at the settings a real-time sender
uses (``-tune zerolatency``, no B-frames, one key frame, VBV of ``--vbv-frames`` frames at the
target rate: OCC's x264 setup) at a ladder of bits per pixel, score every decoded frame
against the source with ffmpeg's ``ssim`` and ``psnr`` filters (luma), and fit

    SSIM_dB(bpp) = a + b ln(bpp)      SSIM_dB = -10 log10(1 - SSIM)
    PSNR(bpp)    = c + d ln(bpp)

(rate-distortion of a transform codec is close to a power law in the rate, i.e. linear in dB
against log rate). The fit, its points and residuals, the encoder's version and the clip's
hash go into a JSON file the simulator loads (``sim/rate_quality.json``).

Needs ``ffmpeg`` with libx264 on PATH (Debian: ``apt-get install ffmpeg``) and clips the user
supplies: nothing is downloaded. The committed table was measured on two clips that Debian's
``opencv-doc`` package ships (docs/sim.md "Video quality").
"""

from __future__ import annotations

import hashlib
import json
import math
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from octoric.errors import OctoricError

DEFAULT_BPP = (0.005, 0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64)
DEFAULT_VBV_FRAMES = 4.0


@dataclass(frozen=True)
class ClipInfo:
    path: str
    sha256: str
    width: int
    height: int
    fps: float
    frames: int


@dataclass(frozen=True)
class RatePoint:
    target_bpp: float
    bpp: float  # measured: the encoded stream's bits / (pixels x frames)
    kbps: float
    ssim: float  # mean per-frame luma SSIM
    ssim_db: float  # mean per-frame -10 log10(1 - SSIM)
    psnr_db: float  # mean per-frame luma PSNR (capped at 100 dB for identical frames)


@dataclass(frozen=True)
class LogFit:
    """y = intercept + slope x ln(bpp), least squares; r2 and the largest residual."""

    intercept: float
    slope: float
    r2: float
    max_residual: float


def _run(cmd: list[str]) -> str:
    try:
        out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    except FileNotFoundError as e:
        raise OctoricError(f"{cmd[0]} not found: install ffmpeg (apt-get install ffmpeg)") from e
    except subprocess.CalledProcessError as e:
        tail = (e.stderr or "").strip().splitlines()[-3:]
        raise OctoricError(f"{cmd[0]} failed ({e.returncode}): {' / '.join(tail)}") from e
    return out.stdout


def probe(path: Path) -> ClipInfo:
    if not path.is_file():
        raise OctoricError(f"no such clip: {path}")
    out = _run([
        "ffprobe", "-v", "error", "-select_streams", "v:0", "-count_frames",
        "-show_entries", "stream=width,height,r_frame_rate,nb_read_frames",
        "-of", "json", str(path),
    ])  # fmt: skip
    streams = json.loads(out).get("streams") or []
    if not streams:
        raise OctoricError(f"{path}: no video stream")
    s = streams[0]
    num, _, den = str(s["r_frame_rate"]).partition("/")
    fps = float(num) / float(den or 1)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    return ClipInfo(str(path), digest, int(s["width"]), int(s["height"]), fps,
                    int(s["nb_read_frames"]))  # fmt: skip


def _frame_scores(log: Path, key: str) -> list[float]:
    """Per-frame values of ``key`` (``Y`` of the ssim filter's log, ``psnr_y`` of psnr's)."""
    vals = []
    for line in log.read_text().splitlines():
        for tok in line.split():
            k, _, v = tok.partition(":")
            if k == key:
                vals.append(100.0 if v == "inf" else float(v))
    return vals


def measure_point(
    clip: ClipInfo, raw: Path, work: Path, bpp: float, vbv_frames: float
) -> RatePoint:
    pixels = clip.width * clip.height
    bps = bpp * pixels * clip.fps
    kbit = max(1, round(bps / 1000))
    buf = max(1, round(kbit * vbv_frames / clip.fps))
    size = f"{clip.width}x{clip.height}"
    enc = work / f"enc-{bpp:g}.h264"
    raw_in = ["-f", "rawvideo", "-pix_fmt", "yuv420p", "-s", size, "-r", f"{clip.fps}",
              "-i", str(raw)]  # fmt: skip
    _run([
        "ffmpeg", "-v", "error", "-y", *raw_in, "-c:v", "libx264", "-preset", "veryfast",
        "-tune", "zerolatency", "-bf", "0", "-g", "100000", "-b:v", f"{kbit}k",
        "-maxrate", f"{kbit}k", "-bufsize", f"{buf}k", "-f", "h264", str(enc),
    ])  # fmt: skip
    bits = enc.stat().st_size * 8
    # decode to raw first: two raw inputs read alike pair frame for frame (the H.264 stream
    # has no timestamps of its own, and the filters pair frames by timestamp)
    dec = work / "dec.yuv"
    _run(["ffmpeg", "-v", "error", "-y", "-i", str(enc), "-f", "rawvideo", "-pix_fmt",
          "yuv420p", str(dec)])  # fmt: skip
    if dec.stat().st_size != raw.stat().st_size:
        raise OctoricError(f"{clip.path}: the decoded stream has a different frame count")
    dec_in = [*raw_in[:-1], str(dec)]
    ssim_log, psnr_log = work / "ssim.log", work / "psnr.log"
    _run([
        "ffmpeg", "-v", "error", "-y", *dec_in, *raw_in, "-lavfi",
        f"[0:v]split[a][b];[1:v]split[c][d];[a][c]ssim=stats_file={ssim_log};"
        f"[b][d]psnr=stats_file={psnr_log}",
        "-f", "null", "-",
    ])  # fmt: skip
    ssim = _frame_scores(ssim_log, "Y")
    psnr = _frame_scores(psnr_log, "psnr_y")
    if not ssim or len(ssim) != len(psnr):
        raise OctoricError(f"{clip.path}: no per-frame scores at {bpp:g} bpp")
    ssim_db = [-10.0 * math.log10(max(1.0 - s, 1e-10)) for s in ssim]
    n = len(ssim)
    return RatePoint(
        target_bpp=bpp, bpp=bits / (pixels * n), kbps=bits / (n / clip.fps) / 1000.0,
        ssim=sum(ssim) / n, ssim_db=sum(ssim_db) / n, psnr_db=sum(psnr) / n,
    )  # fmt: skip


def log_fit(xs: list[float], ys: list[float]) -> LogFit:
    lx = [math.log(x) for x in xs]
    n = len(lx)
    mx, my = sum(lx) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in lx)
    if n < 2 or sxx == 0:
        raise OctoricError("a fit needs at least two different rates")
    slope = sum((x - mx) * (y - my) for x, y in zip(lx, ys, strict=True)) / sxx
    icpt = my - slope * mx
    res = [y - (icpt + slope * x) for x, y in zip(lx, ys, strict=True)]
    ss_tot = sum((y - my) ** 2 for y in ys)
    r2 = 1.0 - sum(r * r for r in res) / ss_tot if ss_tot > 0 else 1.0
    return LogFit(icpt, slope, r2, max(abs(r) for r in res))


def measure_clip(
    path: Path, name: str, bpps: tuple[float, ...], vbv_frames: float
) -> dict[str, Any]:
    clip = probe(path)
    points: list[RatePoint] = []
    with tempfile.TemporaryDirectory(prefix="octoric-rq-") as tmp:
        work = Path(tmp)
        raw = work / "ref.yuv"
        _run(["ffmpeg", "-v", "error", "-y", "-i", str(path), "-an", "-pix_fmt", "yuv420p",
              "-f", "rawvideo", str(raw)])  # fmt: skip
        for i, bpp in enumerate(bpps, 1):
            t0 = time.monotonic()
            points.append(measure_point(clip, raw, work, bpp, vbv_frames))
            p = points[-1]
            print(f"[rate-quality] {name} {i}/{len(bpps)}: {p.kbps:.0f} kbit/s {p.bpp:.4f} bpp "
                  f"SSIM {p.ssim:.4f} ({p.ssim_db:.2f} dB) PSNR {p.psnr_db:.2f} dB "
                  f"({time.monotonic() - t0:.0f} s)", file=sys.stderr, flush=True)  # fmt: skip
    xs = [p.bpp for p in points]
    return {
        "clip": {**asdict(clip), "path": path.name},
        "points": [asdict(p) for p in points],
        "ssim_db": asdict(log_fit(xs, [p.ssim_db for p in points])),
        "psnr_db": asdict(log_fit(xs, [p.psnr_db for p in points])),
        "bpp_range": [min(xs), max(xs)],
    }


def encoder_version() -> str:
    first = _run(["ffmpeg", "-version"]).splitlines()[0]
    return first.strip()


def measure(clips: list[tuple[str, Path]], out: Path, bpps: tuple[float, ...] = DEFAULT_BPP,
            vbv_frames: float = DEFAULT_VBV_FRAMES) -> dict[str, Any]:  # fmt: skip
    if shutil.which("ffmpeg") is None or shutil.which("ffprobe") is None:
        raise OctoricError("ffmpeg/ffprobe not on PATH: apt-get install ffmpeg")
    models = {name: measure_clip(path, name, bpps, vbv_frames) for name, path in clips}
    doc = {
        "what": "rate -> quality of libx264 (real-time settings) measured by "
                "`octoric eval rate-quality`; the simulator's SSIM/PSNR model (sim/quality.py)",
        "encoder": encoder_version(),
        "settings": {"preset": "veryfast", "tune": "zerolatency", "bframes": 0,
                     "vbv_frames": vbv_frames, "metric": "luma SSIM and PSNR per frame (ffmpeg)"},
        "measured": time.strftime("%Y-%m-%d"),
        "models": models,
    }  # fmt: skip
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=1) + "\n")
    return doc
