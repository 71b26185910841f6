"""Every component's /metrics follows Prometheus' conventions (issue #16): counts that only
grow are counters (``_total``), levels are gauges, latencies are summaries in seconds (no
percentiles or units other than base units in names), help texts say more than the name.
Scraped from a running RIC and from the xApps' registries, parsed with prometheus_client."""

from __future__ import annotations

import re
import urllib.request

import pytest
from prometheus_client.exposition import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from ricsdl.syncstorage import SyncStorage

from octoric.redis_server import free_port
from octoric.xapps.base.sdl import SdlStore

from .conftest import RicStack

pytestmark = [pytest.mark.integration]
BAD_NAME = re.compile(r"_(us|ms|usec|msec|percent)(_|$)|_p\d\d|percentile")
OPEN = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def check(text: str, where: str) -> int:
    n = 0
    for fam in text_string_to_metric_families(text):
        if fam.name.startswith(("python_", "process_")):
            continue
        n += 1
        assert not BAD_NAME.search(fam.name), f"{where}: {fam.name}: a unit or percentile"
        assert fam.type in ("counter", "gauge", "summary", "histogram"), (where, fam.name)
        assert fam.documentation.strip(), f"{where}: {fam.name} has no help"
        if fam.type == "gauge":
            assert not fam.name.endswith("_total"), f"{where}: gauge {fam.name} named a counter"
        if "latency" in fam.name or "seconds" in fam.name:
            assert "seconds" in fam.name, f"{where}: {fam.name}: latencies in seconds"
    return n


def test_the_ric_components(ric_stack: RicStack) -> None:
    for port in ("appmgr_port", "e2term_http_port", "submgr_rest_port", "a1_rest_port"):
        with OPEN.open(ric_stack.url(port, "/metrics"), timeout=5) as r:
            text = r.read().decode()
        assert check(text, port) >= 10
    # counts are counters: e.g. RMR messages sent, REST refusals
    with OPEN.open(ric_stack.url("a1_rest_port", "/metrics"), timeout=5) as r:
        text = r.read().decode()
    assert "# TYPE octoric_a1_sent_total counter" in text
    assert "# TYPE octoric_a1_sdl_healthy gauge" in text


def test_the_xapps() -> None:
    from octoric.xapps.handover.xapp import HandoverXapp
    from octoric.xapps.occ.xapp import OccXapp

    sdl = SdlStore("x", storage=SyncStorage(fake_db_backend="dict"))
    ho = HandoverXapp(free_port(), free_port(), sdl=sdl)
    assert check(generate_latest(ho.shell.registry).decode(), "handover") >= 10
    occ = OccXapp(free_port(), free_port(), sdl=sdl)
    assert check(generate_latest(occ.shell.registry).decode(), "occ") >= 10
