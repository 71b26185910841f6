"""`octoric sim run` outputs: plots, traffic override, numerology, profiles."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from octoric.cli import main
from octoric.sim.runner import run_offline
from octoric.sim.scenario import MobilitySpec, load

pytestmark = pytest.mark.unit


def test_plots_and_backlogged_override(tmp_path: Path) -> None:
    out = tmp_path / "o.json"
    args = ["sim", "run", "--scenario", "pulse", "--duration", "4", "--scheme", "occ",
            "--json", str(out), "--plot", "--quiet"]  # fmt: skip
    assert main(args) == 0
    for suffix in ("throughput", "latency_cdf", "abw"):
        p = tmp_path / f"o.{suffix}.png"
        assert p.is_file() and p.read_bytes()[:4] == b"\x89PNG"
    out2 = tmp_path / "b.json"
    args = ["sim", "run", "--scenario", "static", "--traffic", "backlogged", "--duration", "2",
            "--json", str(out2), "--quiet"]  # fmt: skip
    assert main(args) == 0
    s = json.loads(out2.read_text())
    u = s["ues"][0]
    assert u["delivered_bytes"] == pytest.approx(u["capacity_bytes"], rel=0.01)


def test_half_millisecond_slots_run_video() -> None:
    sc = load("static")
    sc.duration_s = 5.0
    sc.ran.slot_ms = 0.5
    s = run_offline(sc, seed=1).summary
    f = s["flows"][0]
    assert f["frames_decoded"] > 140 and f["frame_latency_ms"]["p50"] < 100


@pytest.mark.parametrize(
    ("profile", "spacing_m", "kmh", "pp"), [("walking", 300, 5, 0.05), ("driving", 500, 60, 0.1)]
)
def test_walking_and_driving_profiles(
    profile: str, spacing_m: float, kmh: float, pp: float
) -> None:
    m = MobilitySpec(profile).resolve()
    # border crossings every spacing / speed; ping-pongs add 2 handovers at a share of borders
    q = pp / (2 * (1 - pp))
    assert m.mean_interval_s() == pytest.approx(spacing_m / (kmh / 3.6) / (1 + 2 * q))
    sc = load("static")
    sc.duration_s = 20 * m.mean_interval_s()  # type: ignore[operator]
    sc.ran.cells = 2
    sc.ues[0].mobility = MobilitySpec(profile)
    sc.ues[0].flows[0].traffic = "none"
    sc.ues[0].channel.kind = "constant"
    sc.ues[0].channel.mcs = 5
    s = run_offline(sc, seed=4).summary
    assert 8 <= s["handover_stats"]["count"] <= 40


def test_schemes_lists_every_scheme_with_what_it_follows(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`octoric sim schemes`: every registered scheme with its module and its own
    description (a new scheme without one fails here: the list is what users compare by)."""
    from octoric.sim.cc import SCHEMES, WINDOW_SCHEMES

    assert main(["sim", "schemes", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    from octoric.sim.cli import TRANSPORT_VIDEO_SCHEMES

    names = [*sorted({*SCHEMES, *WINDOW_SCHEMES}), *TRANSPORT_VIDEO_SCHEMES]
    assert [r["name"] for r in rows] == names
    assert {r["name"] for r in rows if r["traffic"] == "bulk"} == set(WINDOW_SCHEMES)
    for r in rows:
        assert r["module"] and Path(r["module"]).name.endswith(".py"), r
        assert r["follows"] and len(r["follows"]) > 30, f"{r['name']} says nothing of itself"
    by = {r["name"]: r for r in rows}
    assert by["occ"]["reads_abw"] and not by["gcc"]["reads_abw"]
    assert by["gcc"]["reads_feedback"] and not by["fixed"]["reads_feedback"]
    assert "libwebrtc" in by["gcc"]["follows"]
    assert "RFC 9438" in by["cubic"]["follows"] and "Cardwell" in by["bbr"]["follows"]
    assert "Rahmanian" in by["rocc+dumbo"]["follows"] and "CCmatic" in by["rocc"]["follows"]
    assert "SEC'23" in by["octobbr"]["follows"]
    assert main(["sim", "schemes"]) == 0
    assert "sim/cc/gcc.py" in capsys.readouterr().out
