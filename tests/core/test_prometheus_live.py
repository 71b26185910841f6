"""Debian's Prometheus scrapes a live ``octoric run`` (issue #42): the run writes
``<run_dir>/prometheus.yml`` naming its /metrics endpoints; Prometheus (on loopback, a temp
storage folder, every second) scrapes them with that file's targets; its HTTP API then has
per-UE ABW and PRB series labelled by node and UE, the OCC loop latency's p99 from its
histogram, every endpoint following the conventions, a handover detected (with its detection
latency's p99) and Octopus's dropper counting, and every query of every panel of the shipped
Grafana dashboard (deploy/grafana/octoric.json, schema-checked) returns a number.

``make test`` installs Prometheus from Debian (``make prometheus``). Wall time 20-32 s on the
2-core machine (the run's start-up and its first handover are most of it).
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from testkit.metrics_conventions import check
from testkit.octoric_run import run_argv

from octoric import lifeline
from octoric.redis_server import free_port

pytestmark = [pytest.mark.integration, pytest.mark.e2e]
REPO = Path(__file__).resolve().parents[2]
GRAFANA = REPO / "deploy" / "grafana" / "octoric.json"
OPEN = urllib.request.build_opener(urllib.request.ProxyHandler({}))
RATE_INTERVAL = "15s"  # what Grafana's $__rate_interval is at a 1 s scrape, and then some

# What Grafana needs of a dashboard and its panels to load and query them
_DS = {"type": "object", "required": ["type", "uid"],
       "properties": {"type": {"const": "prometheus"}, "uid": {"type": "string"}}}  # fmt: skip
_GRID = {
    "type": "object",
    "required": ["x", "y", "w", "h"],
    "properties": {
        "x": {"type": "integer", "minimum": 0, "maximum": 23},
        "y": {"type": "integer", "minimum": 0},
        "w": {"type": "integer", "minimum": 1, "maximum": 24},
        "h": {"type": "integer", "minimum": 1},
    },
}
_TARGET = {
    "type": "object",
    "required": ["refId", "expr", "datasource"],
    "properties": {"refId": {"type": "string", "minLength": 1},
                   "expr": {"type": "string", "minLength": 1}, "datasource": _DS},
}  # fmt: skip
_PANEL = {
    "type": "object",
    "required": ["id", "type", "title", "gridPos"],
    "properties": {"id": {"type": "integer"}, "title": {"type": "string", "minLength": 1},
                   "gridPos": _GRID, "type": {"enum": ["row", "timeseries", "stat", "gauge"]}},
    "if": {"properties": {"type": {"not": {"const": "row"}}}},
    "then": {"required": ["datasource", "targets"],
             "properties": {"datasource": _DS,
                            "targets": {"type": "array", "minItems": 1, "items": _TARGET}}},
}  # fmt: skip
DASHBOARD_SCHEMA = {
    "type": "object",
    "required": ["title", "uid", "schemaVersion", "panels", "templating"],
    "properties": {
        "title": {"type": "string", "minLength": 1},
        "uid": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,40}$"},
        "schemaVersion": {"type": "integer", "minimum": 30},
        "panels": {"type": "array", "minItems": 1, "items": _PANEL},
    },
}


def _get(url: str) -> Any:
    with OPEN.open(url, timeout=5) as r:
        return json.loads(r.read())


def _text(url: str) -> str:
    with OPEN.open(url, timeout=5) as r:
        return str(r.read().decode())


class Prom:
    def __init__(self, port: int) -> None:
        self.base = f"http://127.0.0.1:{port}/api/v1"

    def query(self, expr: str) -> list[dict[str, Any]]:
        q = urllib.parse.urlencode({"query": expr})
        body = _get(f"{self.base}/query?{q}")
        assert body["status"] == "success", (expr, body)
        result: list[dict[str, Any]] = body["data"]["result"]
        return result

    def targets(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = _get(f"{self.base}/targets")["data"]["activeTargets"]
        return out


def _wait(what: str, deadline: float, fn: Any) -> Any:
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = fn()
            if last:
                return last
        except OSError as e:
            last = e
        time.sleep(0.5)
    pytest.fail(f"{what}: not within the time allowed (last: {last!r})"[:3000])


def _stop(proc: subprocess.Popen[Any], sig: int) -> None:
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture
def prometheus_bin() -> str:
    path = shutil.which("prometheus") or "/usr/bin/prometheus"
    if not Path(path).exists():
        pytest.fail("Prometheus is missing: `make test` installs it (make prometheus)")
    return path


@pytest.fixture
def run(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], Path, int]]:
    """A live ``octoric run`` (default scenario) on free ports, stopped with the test."""
    argv, dash = run_argv(tmp_path / "runs", 60)
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=lifeline.die_with_parent(signal.SIGTERM),  # a clean stop if pytest dies
    )  # fmt: skip
    try:
        yield proc, tmp_path / "runs", dash
    finally:
        _stop(proc, signal.SIGINT)
        proc.communicate()


def test_prometheus_scrapes_a_live_run(
    run: tuple[subprocess.Popen[str], Path, int], prometheus_bin: str, tmp_path: Path
) -> None:
    t0 = time.monotonic()
    proc, runs, dash = run
    dashboard = json.loads(GRAFANA.read_text())
    jsonschema.validate(dashboard, DASHBOARD_SCHEMA)
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids)), f"panel ids not unique: {ids}"
    queries = [(p["title"], t["expr"]) for p in dashboard["panels"] for t in p.get("targets", [])]
    assert len(queries) >= 15

    # the run's own scrape configuration, once the dashboard (its last target) listens
    def written() -> Path | None:
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        return next(iter(runs.glob("*/prometheus.yml")), None)

    run_cfg = _wait("the run's prometheus.yml", t0 + 20, written)
    cfg = yaml.safe_load(run_cfg.read_text())
    (job,) = cfg["scrape_configs"]
    comps = {sc["labels"]["component"]: sc["targets"][0] for sc in job["static_configs"]}
    assert {"appmgr", "e2term", "submgr", "a1", "xapp-occ", "xapp-handover", "xapp-octopus",
            "dashboard"} <= set(comps), comps  # fmt: skip
    assert comps["dashboard"] == f"127.0.0.1:{dash}"
    cfg["global"] = {"scrape_interval": "1s", "evaluation_interval": "1s"}
    prom_cfg = tmp_path / "prometheus.yml"
    prom_cfg.write_text(yaml.safe_dump(cfg))
    port = free_port()
    prom = subprocess.Popen(
        [prometheus_bin, f"--config.file={prom_cfg}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
         f"--web.listen-address=127.0.0.1:{port}", "--storage.tsdb.retention.time=1h",
         "--log.level=warn"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        preexec_fn=lifeline.die_with_parent(),
    )  # fmt: skip
    try:
        api = Prom(port)

        def every_target_up() -> bool:
            assert prom.poll() is None, prom.communicate()[1][-3000:]
            ts = api.targets()
            return len(ts) == len(comps) and all(t["health"] == "up" for t in ts)

        _wait("every target up", t0 + 35, every_target_up)
        # the xApps' KPIs: per-UE ABW and PRBs with their node and UE
        abw = _wait("per-UE ABW", t0 + 35,
                    lambda: api.query("octoric_occ_ue_abw_bits_per_second"))  # fmt: skip
        prb = api.query("octoric_occ_ue_prb_used")
        for series in (abw, prb):
            labels = [s["metric"] for s in series]
            assert all(m.get("meid", "").startswith("gnb") and m.get("ue") for m in labels), labels
            assert all(m["component"] == "xapp-occ" for m in labels), labels
        assert len({m["metric"]["ue"] for m in prb}) >= 4, prb

        # the loop latency's p99 from its histogram, computed by PromQL
        buckets = f"rate(octoric_occ_processing_latency_seconds_bucket[{RATE_INTERVAL}])"
        p99 = f"histogram_quantile(0.99, sum by (le) ({buckets}))"

        def p99_number() -> float | None:
            r = api.query(p99)
            v = float(r[0]["value"][1]) if r else float("nan")
            return v if v == v else None  # NaN until two scrapes saw indications

        lat = _wait("the OCC loop's p99", t0 + 40, p99_number)
        assert 0 < lat < 1.0, lat

        # every endpoint as Prometheus scraped it follows the conventions
        for comp, addr in comps.items():
            check(_text(f"http://{addr}/metrics"), comp)

        # the default run's handover train and Octopus policy at work (issue #42): a detection
        # seen, with its latency, and the gNB's dropper counting
        detections = f"octoric_handover_detection_latency_seconds_bucket[{RATE_INTERVAL}]"
        ho_p99 = f"histogram_quantile(0.99, sum by (le) (rate({detections})))"

        def value(expr: str) -> float:
            r = api.query(expr)
            return float(r[0]["value"][1]) if r else float("nan")

        def handover_and_drops() -> bool:
            starts = value('sum(octoric_handover_events_total{kind="start"})')
            drops = value("sum(octoric_octopus_gnb_drops_total)")
            return starts > 0 and drops > 0 and value(ho_p99) >= 0  # NaN: not yet

        _wait("a handover detected and Octopus drops", t0 + 45, handover_and_drops)

        # every panel's every query returns data, a number (Grafana's $__rate_interval
        # substituted)
        empty = []
        for title, expr in queries:
            r = api.query(expr.replace("$__rate_interval", RATE_INTERVAL))
            values = [float(x["value"][1]) for x in r]
            if not values or not all(v == v for v in values):
                empty.append((title, expr, values))
        assert not empty, empty
    finally:
        _stop(prom, signal.SIGTERM)
        prom.communicate()
    print(f"live run + Prometheus: {time.monotonic() - t0:.1f} s to the last query")
