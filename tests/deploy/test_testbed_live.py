"""Issue #39: a real srsRAN gNB (srsran_agent/build.sh, no radio) against octoric's RIC and
xApps, through ``octoric testbed live`` itself.

Runs when ``OCTORIC_SRSRAN_BUILD`` names a build directory of ``srsran_agent/build.sh``; skips
with that reason otherwise (CI has no srsRAN build: it takes 40-60 minutes on two cores). What
the gNB sent in such runs is kept as test vectors (``tests/e2sm/vectors/srsran-live``,
``tests/e2sm/test_srsran_live_vectors.py``), so CI keeps the proof without the gNB.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from octoric.redis_server import free_port
from octoric.ric.stack import RIC_PORTS, distinct_pairs

pytestmark = [
    pytest.mark.integration,
    pytest.mark.e2e,
    pytest.mark.skipif(
        not os.environ.get("OCTORIC_SRSRAN_BUILD"),
        reason="OCTORIC_SRSRAN_BUILD is not set: no srsRAN gNB built by srsran_agent/build.sh",
    ),
]


def _e2_port() -> int:
    # srsRAN's e2.port must lie in 20000..40000 (its CLI11 check)
    for _ in range(50):
        p = free_port()
        if 20000 <= p <= 40000:
            return p
    return 36421


def _run(
    out_dir: Any, duration: int, *extra: str, env: dict[str, str] | None = None
) -> dict[str, Any]:
    sets = [f"redis.port={free_port()}", "dashboard.enabled=false", f"ric.e2_port={_e2_port()}"]
    sets += [
        f"ric.{name}={port}" for name, port in distinct_pairs(RIC_PORTS).items()
        if name != "e2_port"
    ]  # fmt: skip
    argv = [sys.executable, "-m", "octoric.cli", "testbed", "live", "--srsran-build",
            os.environ["OCTORIC_SRSRAN_BUILD"], "--duration", str(duration), "--no-live",
            "--report-dir", str(out_dir), *extra]  # fmt: skip
    for s in sets:
        argv += ["--set", s]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=duration + 260,
                       env={**os.environ, **(env or {})})  # fmt: skip
    runs = sorted(p for p in out_dir.iterdir() if (p / "testbed.json").exists())
    assert runs, f"no run folder with testbed.json\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    tb: dict[str, Any] = json.loads((runs[-1] / "testbed.json").read_text())
    tb["_dir"] = runs[-1]
    tb["_stdout"] = r.stdout
    return tb


@pytest.fixture(scope="module")
def live_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The default layout (2 cells x 2 test UEs) with the video injected: every step, the
    Octopus phases (the video UE shares its cell, so 1.5x OCC's target overshoots it)."""
    # the Octopus timeline ends 118 s after the last step, which can take 40-70 s on a loaded
    # machine: 160 s cut the last phases off in one run (07:54)
    return _run(tmp_path_factory.mktemp("testbed"), 220)


@pytest.fixture(scope="module")
def live_alone(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A cell per test UE (4 cells x 1), the video UE idle: each backlogged UE has a cell of its
    own, which #39's ABW check asks for (a 4-cell gNB plus the injector's 45+ Mbit/s overshoot
    is more than this 2-core machine keeps in real time, so the Octopus phases run above)."""
    # 4 cells take most of 2 cores: OCC's receive ring dropped 591-835 indications a run at
    # normal scheduling, none with e2term and the xApps at SCHED_FIFO 10 (docs/testbed.md)
    # 150 s: the median is over the run, and its first 30-40 s (the gNB's 4 cells and the warm
    # spares starting on 2 cores) cost the gNB slots: a 75 s run with its checks at SCHED_FIFO
    # sampled from 12 s and read a median gNB DL 1.5 % low (ABW/gNB 1.152-1.157, 10:17)
    return _run(tmp_path_factory.mktemp("testbed-alone"), 150, "--cells", "4", "--ues", "4",
                "--no-inject", env={"OCTORIC_RT_PRIORITY": "10"})  # fmt: skip


def test_every_step_happens_and_no_indication_is_lost(live_run: dict[str, Any]) -> None:
    for s in live_run["steps"]:
        assert s["ok"], f"step {s['name']}: {s['detail']}\n{live_run['_stdout'][-2000:]}"
    summary = live_run["summary"]
    # one E2 Setup per gNB start (the Octopus phases restart it once)
    assert summary["gnb_du_pdus"].get("E2SetupRequest") == summary["gnb_starts"] == 2
    # (the CU-CP's E2 Setup is checked by the first step, from the RIC's node list: srsRAN wrote
    # its CU-CP E2AP pcap empty in some runs)
    # every indication the gNB's DU sent to the OCC xApp's subscription (its own pcap) arrived
    assert summary["du_indications_sent"] > 1000
    assert summary["lost"] == 0, summary
    # and OCC refused none of them as out of order (srsRAN's 1 ms stamp overlaps are continued)
    assert summary["occ_rejected"].get("time", 0) == 0, summary["occ_rejected"]
    assert len(summary["abw_vs_gnb"]) == 4  # 30500 for every test UE, beside the gNB's bitrate
    assert (live_run["_dir"] / "testbed.png").exists()


def test_occ_abw_is_within_15_percent_of_the_gnbs_bitrate(live_alone: dict[str, Any]) -> None:
    # #39 done-when 1: every backlogged test UE alone in its cell (all but the video UE of patch
    # 0016, idle here)
    for s in live_alone["steps"]:
        assert s["ok"], f"step {s['name']}: {s['detail']}\n{live_alone['_stdout'][-2000:]}"
    assert live_alone["summary"]["lost"] == 0, live_alone["summary"]
    abw = live_alone["summary"]["abw_vs_gnb"]
    alone = {r: c for r, c in abw.items() if c.get("alone") and not c.get("video")}
    assert len(alone) == 3, abw
    for rnti, c in alone.items():
        assert 0.85 <= c["ratio"] <= 1.15, (rnti, c)


def test_octopus_drops_whole_messages_on_the_real_gnb(live_run: dict[str, Any]) -> None:
    # #39 done-when 2: policy -> RC control 100 -> ACK; drops when the sender overshoots; the
    # xApp's counters are the gNB's; none without the policy; a gNB restart restores the policy
    phases = (live_run.get("octopus") or {}).get("phases") or {}
    want = [
        "policy", "overshoot_with_policy", "delete", "overshoot_without_policy", "policy_again",
        "restart", "overshoot_after_restart", "delete_final", "counters",
    ]  # fmt: skip
    assert sorted(phases) == sorted(want), sorted(phases)
    unmeasured = [n for n in want if phases[n].get("measured") is False]
    for name in want:
        if name not in unmeasured:
            assert phases[name]["ok"], (name, phases[name])
    if unmeasured:
        # the gNB's JSON metrics stopped (srsRAN's MAC metrics aggregator before patch 0019)
        pytest.xfail("; ".join(f"{n}: {phases[n]['outcome']}" for n in unmeasured))
