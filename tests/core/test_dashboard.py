"""The live dashboard in a real browser: Debian's Chromium, driven by Playwright.

The dashboard serves a run folder; the test appends to its files in the formats the live
simulator (``sim-series.jsonl``) and the handover xApp (``handover-events.jsonl``) write,
and checks that the page loads, draws every plot, shows the health table, picks up what is
appended within seconds and logs no console error. ``make test`` installs Chromium
(``make browser``); ``OCTORIC_SCREENSHOT`` keeps a screenshot for a person to look at.
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
            {"flow": k, "ue": ue, "scheme": "occ", "target_kbps": 17_000.0, "frames": 30,
             "frame_p50_ms": 20.0 + i, "frame_p99_ms": 45.0 + i, "dropped_pkts": 3 * i,
             "tail_dropped_pkts": i // 2}
            for k, ue in enumerate((1000, 1001))
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
            [{"event": "start", "ue": 1000, "unix_ms": (T0 + 3) * 1000}])  # fmt: skip
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
        # every plot drawn, with its traces: rates (4), latency (2 flows x 2), drops, handovers
        for plot, least in (("rates", 4), ("latency", 4), ("drops", 4), ("handovers", 3)):
            n = page.locator(f"#{plot} .scatterlayer .trace").count()
            assert n >= least, f"{plot}: {n} traces"
        assert page.locator("#ue option").count() == 2
        health = page.inner_text("#health")
        assert "2 of 2 connected" in health
        assert "RMR rx 40, tx 12, no route 2, tx failed 0" in health
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
