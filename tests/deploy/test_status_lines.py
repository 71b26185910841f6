"""Issue #42 ("dense status"): the run's status lines name UEs, print no Python reprs, and
read as errors only when something failed. The fragments come from the xApps' real status
shapes (the keys their status pages serve); the live run checks the whole line
(tests/sim/test_live_run.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from octoric.deploy import xapps_component as xc
from octoric.deploy.sim_component import abw_vs_capacity
from octoric.runner import _summary
from octoric.supervisor import RunOutcome

pytestmark = pytest.mark.unit


def _occ(status: dict[str, Any], unrouted: tuple[int, ...] = ()) -> str:
    comp = xc.XappComponent(xc.KNOWN["occ"], rmr_port=1, http_port=2)

    class Running:  # a child that is up: status() reads the xApp's last status
        proc = type("P", (), {"returncode": None})()

    comp.child = Running()  # type: ignore[assignment]
    comp.last_status, comp._unrouted = status, unrouted
    return comp.status()


OCC_OK = {
    "ues": [{"ue": 1001, "target_bps": 2.5e6}, {"ue": 1000, "target_bps": 12.25e6}],
    "subscriptions": [{}],
    "rejected_indications": {},
    "overloaded": False,
    "rmr": {"rx_12050": 900, "tx_30500": 850, "tx_30500_failed_no_route": 40},
}


def test_occ_row_names_each_ues_abw() -> None:
    assert _occ(OCC_OK) == "occ 2 UEs, ABW Mbit/s ue1000 12.2 ue1001 2.5"


def test_no_route_is_not_an_error_and_does_not_grow_on_the_row() -> None:
    # sends with no route earlier (before a subscriber registered): nothing to say now
    assert "route" not in _occ(OCC_OK) and "fail" not in _occ(OCC_OK)
    # while they keep finding no route: said once, by message type, without a count
    line = _occ(OCC_OK, unrouted=(30500,))
    assert line.endswith("; nobody subscribes to OCTORIC_ABW_REPORT (30500)"), line
    assert "40" not in line.split(";", 1)[1]


def test_real_failures_are_named_with_their_count() -> None:
    bad = {**OCC_OK, "rejected_indications": {"granularity": 3, "undecodable": 1},
           "rmr": {**OCC_OK["rmr"], "tx_30500_failed_state_10": 7}, "overloaded": True}  # fmt: skip
    parts = _occ(bad).split("; ")[1:]
    assert parts == [
        "4 indications rejected (granularity 3, undecodable 1)",
        "7 RMR sends failed",
        "overloaded (shedding messages)",
    ], parts


def test_unrouted_since_the_last_poll() -> None:
    before = {"rmr": {"tx_30500_failed_no_route": 40, "tx_30501_failed_no_route": 2}}
    now = {"rmr": {"tx_30500_failed_no_route": 41, "tx_30501_failed_no_route": 2}}
    assert xc.unrouted_since(before, now) == (30500,)
    assert xc.unrouted_since(now, now) == ()


def test_handover_row_counts_handovers_not_its_own_failures() -> None:
    st = {"ho_events": {"start": 5, "complete": 4, "failure": 0}, "subscriptions": [{}, {}],
          "rmr": {}, "rejected_indications": {}}  # fmt: skip
    comp = xc.XappComponent(xc.KNOWN["handover"], rmr_port=1, http_port=2)
    comp.child = type("C", (), {"proc": type("P", (), {"returncode": None})()})()  # type: ignore[assignment]
    comp.last_status = st
    assert comp.status() == "handover 5 HO starts, 4 complete, 2 subs"
    comp.last_status = {**st, "ho_events": {"start": 5, "complete": 4, "failure": 1}}
    assert comp.status() == "handover 5 HO starts, 4 complete, 1 HO failures, 2 subs"


def test_sim_row_names_the_ues() -> None:
    st = {"ue_rates": [{"ue": 1000, "abw_kbps": 2100, "capacity_kbps": 3400},
                       {"ue": 1001, "abw_kbps": None, "capacity_kbps": 5000}]}  # fmt: skip
    assert abw_vs_capacity(st) == "ABW/cap Mbit/s ue1000 2.1/3.4 ue1001 -/5.0"


def test_summary_prints_no_python_reprs(tmp_path: Path) -> None:
    report = {"components": {
        "redis": {"port": 6379, "external": False, "pid": None},
        "xapp-octopus": {"rmr_port": 4590, "flows": None, "latency_ms": None, "ues": []},
        "sim": {"sim_seconds": 17.503000000000001, "summary_lines": ["ue1000 p99 100.8"]},
    }}  # fmt: skip
    text = _summary(RunOutcome(report=report, seconds=21.7, reason="duration"), tmp_path / "r")
    assert "None" not in text and "False" not in text, text
    assert "redis        port=6379, external=no\n" in text, text
    assert "xapp-octopus rmr_port=4590\n" in text and "sim_seconds=17.503," not in text, text
    assert "sim_seconds=17.503\n" in text, text
