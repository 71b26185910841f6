"""Every component's /metrics follows Prometheus' conventions (issues #16 and #42;
``testkit.metrics_conventions``): scraped from a running RIC, from the three xApps' registries
(the OCC xApp fed real KPM indications of two nodes, so its per-UE and per-cell KPIs and its
loop-latency histogram are there) and from the run dashboard's collector; parsed with
prometheus_client. The live scrape by the real Prometheus is tests/core/test_prometheus_live.py.
"""

from __future__ import annotations

import time
import urllib.request
from collections import deque
from dataclasses import replace

import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.exposition import generate_latest
from ricsdl.syncstorage import SyncStorage
from testkit.metrics_conventions import buckets, check, families

from octoric.deploy.run_metrics import RunCollector, RunView
from octoric.e2sm import e2ap
from octoric.e2sm.e2ap_ies import RicRequestId
from octoric.redis_server import free_port
from octoric.xapps.base.metrics import Series
from octoric.xapps.base.sdl import SdlStore
from octoric.xapps.base.shell import RmrMessage
from octoric.xapps.occ import kpis
from octoric.xapps.occ.kpm_input import engine_input

from ..xapps.occ.kpm_source import OccIndications
from .conftest import RicStack

pytestmark = [pytest.mark.integration]
OPEN = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class _Sub:
    request_id = RicRequestId(123, 5)


def _pdu(src: OccIndications, sn: int) -> bytes:
    h, m = src(_Sub, sn)
    return e2ap.encode_e2ap(e2ap.RicIndication(RicRequestId(123, 5), 2, 1, h, m, sn=sn))


def _sdl() -> SdlStore:
    return SdlStore("x", storage=SyncStorage(fake_db_backend="dict"))


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
    # e2term's forwarding latency: a histogram (PromQL), its recent quantiles kept beside it
    with OPEN.open(ric_stack.url("e2term_http_port", "/metrics"), timeout=5) as r:
        fams = families(r.read().decode())
    assert fams["octoric_e2term_forward_latency_seconds"].type == "histogram"
    assert {0.0001, 0.001} <= set(buckets(fams["octoric_e2term_forward_latency_seconds"]))
    assert fams["octoric_e2term_forward_latency_seconds_quantile"].type == "gauge"


def test_the_occ_xapp_kpis_and_loop_latency() -> None:
    from octoric.xapps.occ.xapp import OccXapp

    occ = OccXapp(free_port(), free_port(), sdl=_sdl())
    occ.cfg = replace(occ.cfg, publish_reports=False)  # no RMR here: nothing to send to
    nodes = {"gnb_a": OccIndications([11, 12, 13]), "gnb_b": OccIndications([21, 22])}
    for sn in range(3):
        for meid, src in nodes.items():
            occ.on_indication(RmrMessage(12050, 5, meid, _pdu(src, sn)))
    assert not occ.rejected
    text = generate_latest(occ.shell.registry).decode()
    assert check(text, "occ") >= 25
    fams = families(text)
    want_ues = {("gnb_a", "11"), ("gnb_a", "12"), ("gnb_a", "13"), ("gnb_b", "21"),
                ("gnb_b", "22")}  # fmt: skip
    for kpi in ("ue_prb_used", "ue_mcs", "ue_throughput_bits_per_second", "ue_buffer_bytes",
                "ue_abw_bits_per_second"):  # fmt: skip
        fam = fams[f"octoric_occ_{kpi}"]
        assert fam.type == "gauge"
        got = {(s.labels["meid"], s.labels["ue"]) for s in fam.samples}
        assert got == want_ues, (kpi, got)
    for kpi in ("cell_prb_used", "cell_prb_idle", "cell_prb_carrier", "cell_active_ues",
                "cell_throughput_bits_per_second"):  # fmt: skip
        fam = fams[f"octoric_occ_{kpi}"]
        assert {s.labels["meid"] for s in fam.samples} == {"gnb_a", "gnb_b"}, kpi
    # PRBs: a cell's used and idle PRBs are within its carrier's
    used = {s.labels["meid"]: s.value for s in fams["octoric_occ_cell_prb_used"].samples}
    idle = {s.labels["meid"]: s.value for s in fams["octoric_occ_cell_prb_idle"].samples}
    assert all(0 < used[m] + idle[m] <= 51.0 + 1e-6 for m in used), (used, idle)
    # the loop latency: a histogram with buckets at the 1 ms and 2 ms targets, one count per
    # indication
    lat = fams["octoric_occ_processing_latency_seconds"]
    assert lat.type == "histogram"
    b = buckets(lat)
    assert {0.001, 0.002} <= set(b) and b[float("inf")] == 6
    assert fams["octoric_occ_subscriptions"].type == "gauge"


def test_ue_series_are_capped_and_leave_with_their_ue() -> None:
    """The bound on label cardinality: at most ``max_ue_series`` UEs (lowest keys) get
    series, the rest are counted; a UE the node's latest report no longer names loses its
    series, and a node silent for ``STALE_S`` takes its UEs' and its cell's away."""
    export = kpis.KpiExport(51.0, max_ue_series=3)
    src_a = OccIndications([11, 12, 13, 14])
    a0 = engine_input(_pdu(src_a, 0), meid="gnb_a")
    b = engine_input(_pdu(OccIndications([21]), 0), meid="gnb_b")
    export.note("gnb_a", a0)
    export.note("gnb_b", b)
    out = export.series([])
    prb = out["ue_prb_used"]
    assert isinstance(prb, Series)
    assert sorted(lv for lv, _ in prb.samples) == [("gnb_a", "11"), ("gnb_a", "12"),
                                                    ("gnb_a", "13")]  # fmt: skip
    assert out["ue_series_capped"] == 2
    # a second report of gnb_a without UE 11: its series go, the others average both reports
    a1 = engine_input(_pdu(OccIndications([12, 13, 14]), 1), meid="gnb_a")
    export.note("gnb_a", a1)
    prb = export.series([])["ue_prb_used"]
    assert isinstance(prb, Series)
    got = dict(prb.samples)
    assert sorted(got) == [("gnb_a", "12"), ("gnb_a", "13"), ("gnb_a", "14")]
    pu = kpis.K.PRB_USED_DL
    both = (a0.metrics[pu][2].sum() + a1.metrics[pu][1].sum()) / (a0.n_granules + a1.n_granules)
    assert got[("gnb_a", "13")] == pytest.approx(both)
    # gnb_a goes silent
    export._recent["gnb_a"] = deque([(time.monotonic() - kpis.STALE_S - 1, a1)])
    out = export.series([])
    prb = out["ue_prb_used"]
    assert isinstance(prb, Series)
    assert [lv for lv, _ in prb.samples] == [("gnb_b", "21")]
    assert out["ue_series_capped"] == 0
    cells = out["cell_prb_carrier"]
    assert isinstance(cells, Series) and [lv for lv, _ in cells.samples] == [("gnb_b",)]


def test_the_handover_and_octopus_xapps() -> None:
    from octoric.xapps.handover.xapp import HandoverXapp
    from octoric.xapps.octopus.xapp import OctopusXapp

    ho = HandoverXapp(free_port(), free_port(), sdl=_sdl())
    text = generate_latest(ho.shell.registry).decode()
    assert check(text, "handover") >= 10
    fams = families(text)
    assert fams["octoric_handover_detection_latency_seconds"].type == "histogram"
    assert {0.001, 0.002} <= set(buckets(fams["octoric_handover_detection_latency_seconds"]))
    oc = OctopusXapp(free_port(), free_port(), sdl=_sdl())
    text = generate_latest(oc.shell.registry).decode()
    assert check(text, "octopus") >= 5
    fams = families(text)
    assert fams["octoric_octopus_policies"].type == "gauge"  # was a counter: "policies held"
    assert fams["octoric_octopus_gnb_drops"].type == "counter"


def test_the_run_dashboard() -> None:
    row = {
        "sim_seconds": 4.0, "handovers": 1,
        "ue_rates": [{"ue": 1000, "capacity_kbps": 9000.0, "throughput_kbps": 8000.0}],
        "flow_rates": [{"flow": 0, "ue": 1000, "scheme": "occ", "target_kbps": 7000.0,
                        "dropped_pkts": 3}],
    }  # fmt: skip
    reg = CollectorRegistry()
    view = RunView(lambda: row, lambda: [("sim", False), ("ric", True)], lambda: (5, 1, 0))
    reg.register(RunCollector(view))
    text = generate_latest(reg).decode()
    assert check(text, "dashboard") >= 8
    fams = families(text)
    thp = fams["octoric_sim_ue_throughput_bits_per_second"].samples
    assert [(s.labels, s.value) for s in thp] == [({"ue": "1000"}, 8e6)]
    failed = {s.labels["component"]: s.value for s in fams["octoric_run_component_failed"].samples}
    assert failed == {"sim": 0.0, "ric": 1.0}
