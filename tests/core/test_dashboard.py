"""The live dashboard in a real browser: Debian's Chromium, driven by Playwright.

The dashboard serves a run folder; the test appends to its files in the formats the live
simulator (``sim-series.jsonl``) and the handover xApp (``handover-events.jsonl``) write,
and checks that the page loads, draws every plot, shows the health table, picks up what is
appended within seconds and logs no console error. Then a real ``octoric run`` with the
default configuration (issue #42): its dashboard shows OCC-fed and GCC flows, handovers the
xApp detected and the Octopus dropper's drops, and its report.html the summary table and the
latency CDFs. ``make test`` installs Chromium (``make browser``); ``OCTORIC_SCREENSHOT`` (a
path ending in .png) keeps screenshots for a person to look at.
"""

from __future__ import annotations

import json
import os
import shutil
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from octoric.config import RunConfig
from octoric.deploy.dashboard import DashboardComponent
from octoric.ric.stack import LoopThread
from octoric.supervisor import RunContext

pytestmark = pytest.mark.integration
T0 = time.time() - 30


class RicLike:
    """The status surface of a component (the dashboard only reads it)."""

    name = "ric"

    def __init__(self) -> None:
        self.summary = {"nodes": [{"meid": "gnb_1", "connected": True},
                                  {"meid": "gnb_2", "connected": True}],
                        "subscriptions": [1, 2], "xapps": ["occ"]}  # fmt: skip

    def status(self) -> str:
        return "ric 2 nodes, 2 subs, 1 xApps"

    def failed(self) -> str | None:
        return None


def _row(i: int) -> dict[str, Any]:
    return {
        "sim_seconds": float(i),
        "updated_unix": T0 + i,
        "handovers": i // 5,
        "ue_rates": [
            {"ue": ue, "capacity_kbps": 20_000.0 + 500 * i, "throughput_kbps": 15_000.0,
             "abw_kbps": None if i == 0 else 18_000.0 + 300 * i}
            for ue in (1000, 1001)
        ],
        "flow_rates": [
            {"flow": k, "ue": ue, "scheme": s, "target_kbps": 17_000.0, "frames": 30,
             "frame_p50_ms": 20.0 + i, "frame_p99_ms": 45.0 + i, "dropped_pkts": 3 * i,
             "tail_dropped_pkts": i // 2}
            for k, (ue, s) in enumerate(((1000, "occ"), (1001, "gcc")))
        ],
    }  # fmt: skip


def _append(path: Path, rows: list[dict[str, Any]]) -> None:
    with path.open("a", encoding="utf-8") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)


@pytest.fixture
def chromium() -> str:
    path = shutil.which("chromium")
    if path is None:
        pytest.fail("Chromium is missing: `make test` installs it (make browser)")
    return path


@pytest.fixture
def board(tmp_path: Path) -> Any:
    """A dashboard on a free port over ``tmp_path``, and an xApp status page beside it."""
    loop = LoopThread()
    xapp = web.Application()

    async def status(request: web.Request) -> web.Response:
        rmr = {"rx_12050": 40, "tx_30501": 12, "tx_30501_failed_no_route": 2}
        return web.json_response({"rmr": rmr, "overloaded": False,
                                  "rejected_indications": {"undecodable": 1}})  # fmt: skip

    xapp.router.add_get("/status", status)
    runner = web.AppRunner(xapp)

    async def serve() -> int:
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        return int(runner.addresses[0][1])

    xport = loop.call(serve())
    cfg = RunConfig()
    cfg.dashboard.port = 0
    comp = DashboardComponent(
        [RicLike()],
        {"handover": f"http://127.0.0.1:{xport}/status", "occ": "http://127.0.0.1:9/status"},
    )
    loop.call(comp.start(RunContext(config=cfg, run_dir=tmp_path)))
    try:
        yield comp, tmp_path
    finally:
        loop.call(comp.stop())
        loop.call(runner.cleanup())
        loop.stop()


def test_bad_queries_are_4xx_and_counted(board: Any) -> None:
    comp, _ = board
    for q in ("series=-1", "truth=x"):
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(f"{comp.url}api/state?{q}", timeout=5)
        assert e.value.code == 400
    assert comp.report()["bad_requests"] == 2
    with urllib.request.urlopen(f"{comp.url}api/state", timeout=5) as r:
        assert json.loads(r.read())["series"] == {"start": 0, "rows": [], "total": 0}


def test_the_page_loads_updates_and_logs_no_errors(board: Any, chromium: str) -> None:
    from playwright.sync_api import sync_playwright

    comp, run = board
    _append(run / "sim-series.jsonl", [_row(i) for i in range(10)])
    _append(run / "sim-handovers.jsonl",
            [{"event": "start", "ue": 1000, "unix_ms": (T0 + 3) * 1000, "sim_s": 3.0}])  # fmt: skip
    _append(run / "handover-events.jsonl",
            [{"event": "start", "ue": 1000, "t_ms": (T0 + 3.002) * 1000},
             {"event": "complete", "ue": 1000, "t_ms": (T0 + 3.1) * 1000}])  # fmt: skip
    problems: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: problems.append(str(e)))
        page.goto(comp.url)
        page.wait_for_function("Number(document.body.dataset.polls || 0) >= 1", timeout=20_000)
        # every plot drawn, with its traces: rates (4), OCC against GCC (a UE each), latency
        # (p99 of 2 flows; p50 on a click), drops (2 flows x 2), handovers
        for plot, least in (("rates", 4), ("schemes", 2), ("latency", 2), ("drops", 4),
                            ("handovers", 3)):  # fmt: skip
            n = page.locator(f"#{plot} .scatterlayer .trace").count()
            assert n >= least, f"{plot}: {n} traces"
        legend = page.locator("#schemes .legend").text_content() or ""
        assert "UE 1000 OCC-fed" in legend and "UE 1001 GCC" in legend, legend
        assert page.locator("#ue option").all_inner_texts() == ["UE 1000 OCC-fed", "UE 1001 GCC"]
        # one time axis: the simulator's seconds; the xApp's event at its wall clock lands on it
        assert "simulated s" in (page.locator("#handovers .xtitle").text_content() or "")
        xs = page.evaluate("document.getElementById('handovers').data.map(t => t.x[0])")
        assert xs[0] == 3.0 and abs(xs[1] - 3.002) < 1e-6, xs
        health = page.inner_text("#health")
        assert "2 of 2 connected" in health
        # no failure, no "0 failed": only what happened; unrouted sends are not errors
        assert "RMR rx 40, tx 12, rejected 1, 2 unrouted (no subscriber: not an error)" in health
        assert "tx failed" not in health  # none failed: not shown
        assert "xApp occ" in health and "no status" in health  # an xApp that does not answer
        assert "10 s of series" in page.inner_text("#updated")
        # what the run appends shows up within a few polls
        _append(run / "sim-series.jsonl", [_row(i) for i in range(10, 15)])
        page.wait_for_function(
            "document.getElementById('updated').textContent.includes('15 s of series')",
            timeout=10_000,
        )
        page.select_option("#ue", "1001")
        shot = os.environ.get("OCTORIC_SCREENSHOT")
        if shot:
            page.screenshot(path=shot, full_page=True)
        browser.close()
    assert problems == []


def _api_state(port: int) -> dict[str, Any]:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(f"http://127.0.0.1:{port}/api/state", timeout=5) as r:
        state: dict[str, Any] = json.loads(r.read())
    return state


def _shows_all_three(state: dict[str, Any]) -> bool:
    """OCC-fed and GCC flows with OCC's ABW, a handover the xApp detected, Octopus drops."""
    rows = state["series"]["rows"]
    if not rows:
        return False
    last = rows[-1]
    schemes = {f["scheme"] for f in last.get("flow_rates") or []}
    abw = any(u.get("abw_kbps") for u in last.get("ue_rates") or [])
    drops = any(f.get("dropped_pkts") for f in last.get("flow_rates") or [])
    detected = any(e.get("event") == "start" for e in state["events"]["rows"])
    return schemes >= {"occ", "gcc"} and abw and drops and detected


@pytest.mark.slow  # ~35 s of `octoric run`; the page test above and tests/sim/test_live_run.py
def test_the_default_run_shows_all_three_xapps_and_reports_them(
    tmp_path: Path, chromium: str
) -> None:
    """Issue #42 done-when 1: `octoric run` as it comes (only its ports moved), in Chromium.
    Its handovers and drops come within the first ~15 s, so the run is stopped (Ctrl-C) once
    the dashboard has shown them, and its report is read."""
    import signal
    import subprocess

    from playwright.sync_api import sync_playwright
    from testkit.octoric_run import run_argv

    from octoric.config import load
    from octoric.sim.scenario import DEMO_OCTOPUS_UE

    # the default A1 policy names the demo scenario's Octopus UE
    assert load().a1_policies[0].body["scope"]["ues"] == [DEMO_OCTOPUS_UE]
    argv, dash = run_argv(tmp_path, 45)
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    shot = os.environ.get("OCTORIC_SCREENSHOT")
    problems: list[str] = []
    try:
        deadline = time.monotonic() + 40
        state: dict[str, Any] = {}
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                state = _api_state(dash)
                if _shows_all_three(state):
                    break
            except OSError:
                pass
            time.sleep(0.5)
        assert _shows_all_three(state), (proc.poll(), state.get("components"))
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1400, "height": 1300})
            page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: problems.append(str(e)))
            page.goto(f"http://127.0.0.1:{dash}/")
            page.wait_for_function("Number(document.body.dataset.polls || 0) >= 1", timeout=20_000)
            names = page.evaluate(
                "Object.fromEntries(['rates', 'schemes', 'latency', 'drops', 'handovers']"
                ".map(id => [id, document.getElementById(id).data.map(t => t.name)]))"
            )
            assert len(names["rates"]) == 4, names
            assert any("OCC-fed" in n for n in names["schemes"]), names
            assert any("GCC" in n for n in names["schemes"]), names
            assert any("OCC-fed" in n for n in names["latency"]), names
            assert f"UE {DEMO_OCTOPUS_UE} Octopus" in names["drops"], names
            assert "handover (simulator)" in names["handovers"], names
            assert "start (xApp)" in names["handovers"], names
            verdicts = page.locator("#health tr td:nth-child(3)").all_inner_texts()
            assert verdicts and set(verdicts) == {"ok"}, page.inner_text("#health")
            # OCC's 30500 reports have a reader from the start: none went without a route
            health = page.inner_text("#health")
            assert "xApp occ" in health, health
            occ_row = [ln for ln in health.splitlines() if ln.startswith("xApp occ")]
            assert occ_row and "unrouted" not in occ_row[0], health
            if shot:
                page.screenshot(path=shot.replace(".png", "-default-run.png"), full_page=True)
            page.close()  # before the run ends: the page would log its refused polls
            proc.send_signal(signal.SIGINT)
            out, _ = proc.communicate(timeout=60)
            assert proc.returncode == 0, out[-3000:]
            (run_dir,) = [d for d in tmp_path.iterdir() if d.is_dir()]
            page = browser.new_page(viewport={"width": 1300, "height": 1300})
            page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: problems.append(str(e)))
            page.goto((run_dir / "report.html").as_uri())
            rows = page.locator("table.summary tbody tr").count()
            assert rows == 7, rows  # one per flow of the demo
            body = page.inner_text("table.summary")
            assert "OCC-fed" in body and "GCC + Octopus dropper" in body, body
            for fig in ("cdf_frame", "cdf_network", "rates", "handovers", "drops"):
                img = page.locator(f"#fig-{fig} img")
                src = img.evaluate("i => i.currentSrc.slice(0, 26)")
                assert src == "data:image/svg+xml;base64,", (fig, src)  # the SVG, not the PNG
                assert img.evaluate("i => i.complete && i.naturalWidth > 0"), fig
            xapps = page.inner_text("table.xapps")
            assert "packets dropped" in xapps and "events detected" in xapps, xapps
            assert "scenario: demo" in page.inner_text("#config + pre")
            if shot:
                page.screenshot(path=shot.replace(".png", "-report.png"), full_page=True)
            browser.close()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert problems == []
