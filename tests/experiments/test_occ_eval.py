"""`octoric eval occ` on a short synthetic Mahimahi trace: the JSON schema of issue #7, the
table and the plots; and `octoric bench occ --json`."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from octoric.cli import main
from octoric.experiments import occ_eval as ev

pytestmark = pytest.mark.unit


def _write_trace(path: Path, period_ms: int = 2000, every_ms: int = 3) -> None:
    # one 1500-byte delivery opportunity every 3 ms: 4 Mbit/s
    path.write_text("".join(f"{t}\n" for t in range(every_ms, period_ms + 1, every_ms)))


def test_eval_occ_writes_results_table_and_plots(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    traces = tmp_path / "traces"
    traces.mkdir()
    _write_trace(traces / "synthetic.down")
    (traces / "synthetic.up").write_text("1\n")  # uplink traces are not replayed
    plots = tmp_path / "res"  # report.md, results.json and the plots
    out = plots / "results.json"
    args = ["eval", "occ", "--traces", str(traces), "--out", str(plots), "--duration", "3",
            "--timeseries", "synthetic", "--routes", "blockage", "--seeds", "2"]  # fmt: skip
    assert main(args) == 0
    cap = capsys.readouterr()
    # progress on stderr, a line per run as it finishes (on the pool: in any order)
    assert "[eval] 32/32 done " in cap.err and " route-blockage occ-ext seed 2\n" in cap.err
    assert "| synthetic | occ | 2 |" in cap.out  # the means over seeds ...
    assert "| synthetic | occ | 1 |" in cap.out  # ... and every run
    assert "| claim | paper | accepted (±30 % of the effect) |" in cap.out  # the paper's claims

    doc = json.loads(out.read_text())
    rows = doc["results"]
    # the trace with the gNB-like input (the headline) and with the capacity mapping (ablation)
    ablation = "synthetic (capacity mapping)"
    cases = ("synthetic", ev.CONTENTION, "route-blockage", ablation)
    assert doc["meta"]["mapping"] == "gnb" and doc["meta"]["groups"][ablation] == "traces-capacity"
    assert sorted((r["trace"], r["scheme"], r["seed"]) for r in rows) == sorted(
        (t, s, sd) for t in cases for s in ("occ", "gcc", "pbe", "occ-ext") for sd in (1, 2)
    )
    for r in rows:
        net = r["network_latency_ms"]  # issue #20: the paper's own metric, and utilization
        assert net["p50"] is not None and net["p50"] <= net["p95"] <= net["p99"]
        assert 0.0 < r["utilization"] <= 1.0
        assert set(r["frame_latency_ms"]) == {"p50", "p95", "p99"}
        lat = r["frame_latency_ms"]
        assert all(isinstance(lat[k], float) for k in lat)
        assert lat["p50"] <= lat["p95"] <= lat["p99"]
        assert 0.0 <= r["stall_rate"] <= 1.0
        assert r["valid_bitrate_kbps"] >= 0 and r["frame_bitrate_kbps"] > 0
        assert r["valid_bitrate_kbps"] <= r["frame_bitrate_kbps"] * 1.01
        # the claims' bitrate: what arrived at the client, complete, of what was encoded
        assert 0 < r["received_frame_bitrate_kbps"] <= r["frame_bitrate_kbps"] * 1.01
        assert r["valid_bitrate_kbps"] <= r["received_frame_bitrate_kbps"] * 1.01
    # occ rows ran the OCC xApp's engine, never the stand-in
    assert {r["abw_source"] for r in rows if r["scheme"] in ("occ", "occ-ext")} == {"occ-engine"}
    report = (plots / "report.md").read_text()
    assert report.startswith("The traces reach OCC as the **gNB-like input**")
    assert "\n| case | scheme | seeds |" in report
    # the claims table per group of cases, a ratio per (case, seed): the paper's joint claim
    # (lower latency and higher bitrate, judged per run), its ablation, and PBE-CC between
    claims = {c["claim"]: c for c in doc["meta"]["claims"]}
    joint = "lowers the p99 network latency and raises the frame bitrate against GCC"
    groups = ("traces", "contention", "routes", "traces, capacity mapping (ablation)")
    assert set(claims) == {f"{g}: {m}" for g in groups for m in (
        f"OCC {joint}", f"OCC with extensions (ablation) {joint}",
        "p99 network latency, OCC / PBE-CC")}  # fmt: skip
    assert all(c["seeds"] == 2 for c in claims.values())
    # every latency claim carries the schemes' utilization over its group's runs
    assert all(c["note"].startswith("utilization OCC ") and ", PBE-CC " in c["note"]
               for c in claims.values())  # fmt: skip
    # not counted: occ-ext in each of the four groups, and the other mapping's other two
    assert [c["counted"] for c in claims.values()].count(False) == 4 + 2
    assert not any(c["counted"] for k, c in claims.items() if k.startswith(groups[-1]))
    by = {(r["trace"], r["scheme"], r["seed"]): r for r in rows}
    want = np.mean([by["route-blockage", "occ", sd]["network_latency_ms"]["p99"]
                    / by["route-blockage", "gcc", sd]["network_latency_ms"]["p99"]
                    for sd in (1, 2)])  # fmt: skip
    latency = claims[f"routes: OCC {joint}"]["parts"][0]
    assert latency["claim"] == "p99 network latency, / GCC"
    assert latency["measured_mean"] == pytest.approx(want, abs=1e-3)

    pngs = sorted(p.name for p in plots.glob("*.png"))
    assert pngs == [
        "occ-eval-bars.png",
        f"occ-eval-cdf-{ev.CONTENTION}.png",
        "occ-eval-cdf-route-blockage.png",
        "occ-eval-cdf-synthetic.png",
        "occ-eval-timeseries-synthetic.png",
        "occ-eval-tradeoff.png",  # network p99 against frame bitrate, per case (Fig. 13)
    ]
    assert all((plots / n).read_bytes()[:4] == b"\x89PNG" for n in pngs)
    # `eval report DIR`: the same report from results.json alone (frame latencies, which
    # only the plots read, are not stored)
    (plots / "report.md").unlink()
    assert main(["eval", "report", str(plots)]) == 0
    assert (plots / "report.md").read_text() == report


def test_eval_occ_quick_runs_one_trace_and_the_contention_cell(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    traces = tmp_path / "traces"
    traces.mkdir()
    for name in ("b-trace", "a-trace"):
        _write_trace(traces / f"{name}.down")
    out = tmp_path / "quick"
    assert main(["eval", "occ", "--quick", "--traces", str(traces), "--out", str(out),
                 "--no-plots"]) == 0  # fmt: skip
    doc = json.loads((out / "results.json").read_text())
    assert not list(out.glob("*.png"))
    assert {r["trace"] for r in doc["results"]} == {
        "a-trace", ev.CONTENTION, "route-good", "a-trace (capacity mapping)"}  # fmt: skip
    # the ablation can be left out
    out2 = tmp_path / "quick2"
    assert main(["eval", "occ", "--quick", "--traces", str(traces), "--out", str(out2),
                 "--no-plots", "--no-mapping-ablation", "--mapping", "capacity"]) == 0  # fmt: skip
    doc2 = json.loads((out2 / "results.json").read_text())
    assert {r["trace"] for r in doc2["results"]} == {"a-trace", ev.CONTENTION, "route-good"}
    assert doc2["meta"]["mapping"] == "capacity"
    assert doc["meta"]["duration_s"] == 10.0
    assert doc["meta"]["video"] == "webrtc" and doc["meta"]["content"] == "hdr"


def test_eval_occ_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ev.EvalError, match="no Mahimahi traces"):
        ev.find_cases(tmp_path)
    with pytest.raises(ev.EvalError, match="not a folder"):
        ev.find_cases(tmp_path / "missing")
    # through the CLI: a clear message, no traceback
    assert main(["eval", "occ", "--traces", str(tmp_path), "--out", str(tmp_path / "o")]) != 0
    assert "no Mahimahi traces" in capsys.readouterr().err
    traces = tmp_path / "t"
    traces.mkdir()
    _write_trace(traces / "synthetic.down")
    base = ["eval", "occ", "--traces", str(traces), "--out", str(tmp_path / "o")]
    for extra, msg in (
        (["--occ-set", "beta=2"], "beta: must be in (0, 1)"),
        (["--occ-set", "nope=1"], "want KEY=VALUE with KEY one of"),
        (["--occ-set", "outage_fallback=maybe"], "is not a bool"),
        (["--csi-period-ms", "-1"], "--csi-period-ms must be >= 0"),
        (["--csi-period-ms", "0"], "give --mapping capacity"),
        (["--csi-period-ms", "0", "--mapping", "capacity"], "give --no-mapping-ablation"),
        (["--timeseries", "other"], "--timeseries: no trace other"),
        (["--timeseries", "synthetic", "--no-plots"], "--timeseries needs plots"),
        (["--routes", "nope"], "--routes: unknown route 'nope'"),
        (["--seeds", "0"], "--seeds must be >= 1"),
    ):
        assert main(base + extra) != 0
        assert msg in capsys.readouterr().err, extra
    with pytest.raises(SystemExit):
        main([*base, "--mapping", "raw"])
    assert "invalid choice: 'raw'" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_block_mean_keeps_bytes_per_block() -> None:
    a = np.array([0, 0, 12, 0, 0, 3, 3], dtype=np.float64)
    b = ev.block_mean(a, 3)
    assert b.tolist() == [4, 4, 4, 1, 1, 1, 3]
    assert b.sum() == a.sum()


def test_bench_occ_json_prints_engine_figure(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "occ", "--json", "--quick"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert set(doc) == {"ue_samples_per_s"} and doc["ue_samples_per_s"] > 0


def test_sender_pacer_queue_stays_within_two_seconds() -> None:
    # found by the evaluation: a target that drops to the floor must not strand the frames
    # the (lagging) encoder still sizes for the old rate for many seconds in the pacer
    from octoric.sim.video import PACER_MAX_QUEUE_US, VideoConfig, VideoSender

    snd = VideoSender(0, 1, VideoConfig(), np.random.default_rng(1), 5e6)
    snd.on_frame(0, 5e6)
    for k in range(1, 40):
        now = k * 33_333
        pkts = snd.on_frame(now, 5e4)  # the 50 kbit/s floor: 125 kbit/s pacing
        assert pkts and max(p.send_us for p in pkts) <= now + PACER_MAX_QUEUE_US + 1
        assert min(p.send_us for p in pkts) >= now


def test_sender_pacer_re_times_its_queue_when_the_target_rises() -> None:
    # frames queued while the target sat at the floor leave at the new rate once it rises
    # (libwebrtc's PacingController paces its whole queue at the current rate)
    from octoric.sim.video import VideoConfig, VideoSender

    frame_us = 33_333
    snd = VideoSender(0, 1, VideoConfig(lag_ms=1.0), np.random.default_rng(1), 2e6)
    sent = snd.on_frame(0, 2e6, frame_us)
    for k in range(1, 4):  # the target falls to the floor: a queue builds
        sent += snd.on_frame(k * frame_us, 5e4, (k + 1) * frame_us)
    assert snd.pending_bytes > 5_000
    now = 4 * frame_us
    out = snd.on_frame(now, 10e6, now + frame_us)  # the target is back at 10 Mbit/s
    assert snd.pending_bytes == 0 and out
    # the whole backlog went out within one frame interval, at 2.5 x 10 Mbit/s
    assert max(p.send_us for p in out) < now + frame_us
    nbytes = sum(p.size for p in out)
    span = max(p.send_us for p in out) - min(p.send_us for p in out)
    assert span <= nbytes * 8e6 / 25e6 + 1
    # every frame's last send time is recorded, never before it was encoded
    fr = snd.frames
    assert all(s >= e for s, e in zip(fr.sent_us, fr.enc_us, strict=True))


def test_the_cell_carries_the_traces_busiest_period(tmp_path: Path) -> None:
    """A trace whose CSI periods peak above 106 PRBs at the top MCS gets the layers, then the
    PRBs, its gNB-like input needs (both mappings run on that cell)."""
    from octoric.sim.scenario import load

    def peak(mbps: float, name: str) -> Path:
        per_ms = round(mbps * 1000 / 12_000)  # 1500-byte packets per ms
        p = tmp_path / name
        p.write_text("".join(f"{t}\n" * (per_ms if t <= 20 else 1) for t in range(1, 201)))
        return p

    # 700: 58 packets in each of ms 1-19 of the first 20 ms period, 661 Mbit/s over it: 143.1
    # PRBs at 4 layers of MCS 27 (1155 bits per PRB and layer)
    for mbps, layers, prbs in ((50, 1, 106), (200, 2, 106), (700, 4, 144)):
        trace = peak(mbps, f"p{mbps}.down")
        sc = load(f"trace:{trace}")
        ev.fit_cell(sc, trace, 20)
        assert (sc.ran.layers, sc.ran.n_prb) == (layers, prbs), mbps
        for mapping in ("gnb", "capacity"):
            case = ev.EvalCase("p", trace, mapping=mapping)
            r = ev.run_case(case, "gcc", 1.0)
            assert r.capacity_kbps > 0
