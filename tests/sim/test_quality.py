"""Picture quality (``sim/quality.py``): the measured rate -> SSIM/PSNR curves, SQI-SSIM as
Octopus SEC'23 §6.2 defines it, and the measuring tool (``experiments/rate_quality.py``)."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from octoric.errors import OctoricError
from octoric.experiments import rate_quality as rq
from octoric.sim import quality
from octoric.sim.engine import Engine
from octoric.sim.errors import ScenarioError
from octoric.sim.scenario import ChannelSpec, FlowSpec, Scenario, UeSpec, validate
from octoric.sim.summary import build_summary
from octoric.sim.video import VideoConfig, WiredPathConfig

pytestmark = pytest.mark.unit

PX = 1280 * 720 * 30.0  # pixels per second at the default resolution


def test_every_committed_curve_is_measured_and_rises_with_the_rate() -> None:
    doc = json.loads(quality.MODELS_FILE.read_text())
    assert "libx264" in json.dumps(doc["settings"]) or "ffmpeg" in doc["encoder"]
    assert {"camera", "animation"} <= set(quality.model_names())
    for name in quality.model_names():
        m = quality.load_model(name)
        assert len(m.ln_bpp) >= 5
        assert all(b > a for a, b in zip(m.ssim_db, m.ssim_db[1:], strict=False))
        assert all(b > a for a, b in zip(m.psnr_db, m.psnr_db[1:], strict=False))
        pts = doc["models"][name]["points"]
        # the curve passes through its measurements and holds its ends outside them
        for p in pts:
            assert m.ssim_db_at(p["bpp"]) == pytest.approx(p["ssim_db"], abs=1e-9)
        lo, hi = min(p["bpp"] for p in pts), max(p["bpp"] for p in pts)
        assert m.ssim_db_at(lo / 10) == m.ssim_db_at(lo)
        assert m.ssim_db_at(hi * 10) == m.ssim_db_at(hi)


def test_unknown_model_names_the_known_ones() -> None:
    with pytest.raises(quality.QualityModelError, match="known: animation, camera"):
        quality.load_model("nope")
    sc = Scenario(name="q", duration_s=1.0, ues=[UeSpec(
        channel=ChannelSpec("constant", rate_mbps=5.0),
        flows=[FlowSpec(video=VideoConfig(quality_model="nope"))])])  # fmt: skip
    with pytest.raises(ScenarioError, match="quality_model"):
        validate(sc)


def _inputs(n: int, decoded: list[bool], bps: float = 2e6, **kw: object) -> quality.QualityInputs:
    base = quality.QualityInputs(
        model="camera", pixels_per_s=PX, svc="none", svc_overhead=0.165,
        spatial_cumulative=(1.0,), decay_s=1.0,
        frame_enc_us=[i * 33_333 for i in range(n)], frame_quality_bps=[bps] * n,
        frame_base_msg=list(range(n)), frame_nmsgs=[1] * n,
        msg_decoded_us=[i * 33_333 + 50_000 if d else -1 for i, d in enumerate(decoded)],
        skipped_us=[], until_us=10**12,
    )  # fmt: skip
    return replace(base, **kw)  # type: ignore[arg-type]


def test_sqi_equals_the_mean_ssim_when_every_frame_decodes() -> None:
    q = quality.flow_quality(_inputs(90, [True] * 90))
    m = quality.load_model("camera")
    db = m.ssim_db_at(2e6 / PX)
    assert q["ssim_db"] == pytest.approx(db)
    assert q["sqi_ssim"] == pytest.approx(quality.ssim_from_db(db))
    assert q["sqi_ssim_db"] == pytest.approx(db)
    assert q["frames_scored"] == 90


def test_a_frozen_picture_decays_exponentially_and_skipped_frames_count() -> None:
    # 30 frames decoded, then 30 lost: each lost slot scores the last SSIM x exp(-t / 1 s)
    dec = [True] * 30 + [False] * 30
    q = quality.flow_quality(_inputs(60, dec))
    s = quality.ssim_from_db(quality.load_model("camera").ssim_db_at(2e6 / PX))
    frozen = [s * math.exp(-(k * 33_333) / 1e6) for k in range(1, 31)]
    assert q["sqi_ssim"] == pytest.approx((30 * s + sum(frozen)) / 60)
    assert q["ssim"] == pytest.approx(s)  # decoded frames only
    # a skipped frame (the encoder's choice) is a slot the viewer sees frozen as well
    q2 = quality.flow_quality(_inputs(30, [True] * 30, skipped_us=[2_000_000]))
    assert q2["frames_scored"] == 31
    assert q2["sqi_ssim"] < q["ssim"]
    # slots after ``until_us`` (in flight when the run ends) are not scored
    q3 = quality.flow_quality(_inputs(60, dec, until_us=29 * 33_333))
    assert q3["frames_scored"] == 30 and q3["sqi_ssim"] == pytest.approx(s)


def test_more_rate_more_quality_and_svc_pays_its_overhead() -> None:
    lo = quality.flow_quality(_inputs(30, [True] * 30, bps=1e6))
    hi = quality.flow_quality(_inputs(30, [True] * 30, bps=4e6))
    assert hi["ssim_db"] > lo["ssim_db"] and hi["psnr_db"] > lo["psnr_db"]
    svc = quality.flow_quality(_inputs(30, [True] * 30, bps=4e6, svc="temporal"))
    plain_same_quality = quality.flow_quality(_inputs(30, [True] * 30, bps=4e6 / 1.165))
    assert svc["ssim_db"] == pytest.approx(plain_same_quality["ssim_db"])


def test_a_spatial_frame_scores_its_highest_decodable_layer() -> None:
    # 3 frames x 3 layers; frame 0 all layers, frame 1 layers 0-1, frame 2 layer 0 and 2 but
    # not 1 (layer 2 needs layer 1: it counts as layer 0)
    dec = [1, 1, 1, 1, 1, -1, 1, -1, 1]
    q = quality.flow_quality(quality.QualityInputs(
        model="camera", pixels_per_s=PX, svc="spatial", svc_overhead=0.0,
        spatial_cumulative=(0.2, 0.5, 1.0), decay_s=1.0, frame_enc_us=[0, 33_333, 66_666],
        frame_quality_bps=[4e6] * 3, frame_base_msg=[0, 3, 6], frame_nmsgs=[3, 3, 3],
        msg_decoded_us=dec, skipped_us=[], until_us=10**9,
    ))  # fmt: skip
    layers = q["by_top_layer"]
    assert [x["frames"] for x in layers] == [1, 1, 1]
    m = quality.load_model("camera")
    want = [m.ssim_db_at(4e6 * c / PX) for c in (1.0, 0.5, 0.2)]
    assert q["ssim_db"] == pytest.approx(sum(want) / 3)
    assert [x["ssim_db"] for x in layers] == pytest.approx(want[::-1])
    assert layers[0]["psnr_db"] < layers[1]["psnr_db"] < layers[2]["psnr_db"]


def _constant_link(mbps: float, seconds: float = 8.0) -> dict[str, Any]:
    flow = FlowSpec(traffic="video", scheme="fixed", start_mbps=mbps,
                    video=VideoConfig(min_bps=mbps * 1e6, max_bps=mbps * 1e6),
                    path=WiredPathConfig(rtt_ms=40.0))  # fmt: skip
    sc = Scenario(name="q", duration_s=seconds, ues=[UeSpec(
        channel=ChannelSpec("constant", rate_mbps=30.0), flows=[flow])])  # fmt: skip
    eng = Engine(sc, 1)
    return build_summary(eng, eng.run())["flows"][0]["quality"]  # type: ignore[no-any-return]


def test_a_run_summary_scores_its_video_and_a_higher_rate_looks_better() -> None:
    lo, hi = _constant_link(1.0), _constant_link(6.0)
    for q in (lo, hi):
        assert q["model"] == "camera" and q["frames_scored"] > 200
        assert 0 < q["sqi_ssim"] <= q["ssim"] + 1e-9 < 1
    m = quality.load_model("camera")
    # the encoder's rate sets the quality: about the curve's value at 1 and 6 Mbit/s
    assert lo["ssim_db"] == pytest.approx(m.ssim_db_at(1e6 / PX), abs=0.5)
    assert hi["ssim_db"] == pytest.approx(m.ssim_db_at(6e6 / PX), abs=0.5)
    assert hi["ssim_db"] > lo["ssim_db"] + 3


def test_log_fit_recovers_a_known_line_and_refuses_one_rate() -> None:
    xs = [0.01, 0.02, 0.04, 0.08]
    f = rq.log_fit(xs, [10 + 4 * math.log(x) for x in xs])
    assert (f.intercept, f.slope, f.r2) == pytest.approx((10, 4, 1))
    with pytest.raises(OctoricError, match="two different rates"):
        rq.log_fit([0.1, 0.1], [1.0, 2.0])


def test_frame_scores_parse_ffmpeg_stats_lines(tmp_path: Path) -> None:
    log = tmp_path / "s.log"
    log.write_text("n:1 Y:0.950000 U:0.97 V:0.97 All:0.96 (13.2)\n"
                   "n:2 Y:1.000000 U:1 V:1 All:1 (inf)\n")  # fmt: skip
    assert rq._frame_scores(log, "Y") == [0.95, 1.0]
    log.write_text("n:1 mse_avg:1.0 mse_y:1.0 psnr_avg:48.1 psnr_y:inf\n")
    assert rq._frame_scores(log, "psnr_y") == [100.0]


@pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="ffmpeg is not installed (the "
                    "measuring tool needs it; make test does not install it)")  # fmt: skip
def test_the_tool_measures_a_clip_end_to_end(tmp_path: Path) -> None:
    clip = tmp_path / "src.mkv"
    subprocess.run(["ffmpeg", "-v", "error", "-f", "lavfi", "-i",
                    "testsrc2=size=320x240:rate=10:duration=3", "-c:v", "ffv1", str(clip)],
                   check=True)  # fmt: skip
    out = tmp_path / "rq.json"
    doc = rq.measure([("synthetic", clip)], out, bpps=(0.02, 0.08, 0.32))
    m = doc["models"]["synthetic"]
    assert m["clip"]["frames"] == 30 and m["clip"]["width"] == 320
    ssim = [p["ssim_db"] for p in m["points"]]
    assert ssim == sorted(ssim) and ssim[0] > 0
    assert json.loads(out.read_text())["models"]["synthetic"]["points"]
    with pytest.raises(OctoricError, match="no such clip"):
        rq.measure([("x", tmp_path / "missing.mkv")], out)
