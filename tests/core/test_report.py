"""The run report (``deploy.report``): ``octoric report RUN_DIR`` draws report.html from a run
folder's files: the summary tables per flow, per scheme and per xApp, each figure as SVG with a
PNG fallback, the configuration and versions, the components' state folded away; the same
tables and figures go into report.json. A missing file leaves its section out."""

from __future__ import annotations

import base64
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.unit
T0 = 1.8e9  # the run's wall clock at simulated second 0


def _flow(i: int, scheme: str, p50: float, dropped: int = 0) -> dict[str, Any]:
    return {"flow": i, "ue": i, "traffic": "video", "scheme": scheme, "frames_sent": 600,
            "frames_decoded": 594, "frame_latency_ms": {"p50": p50, "p95": 2 * p50, "p99": 3 * p50},
            "network_latency_ms": {"p50": p50 - 10, "p95": p50, "p99": 2 * p50},
            "stall_rate": 0.01 * i, "decoded_bitrate_kbps": 4000.0 + 1000 * i,
            "dropped_packets": dropped, "tail_dropped_packets": 2, "harq_lost_packets": 1,
            "wired_lost_packets": 0}  # fmt: skip


def _run_folder(tmp: Path) -> Path:
    long_state = {"ues": [{"ue": 1000 + i, "target_bps": 1e6 * i} for i in range(200)]}
    (tmp / "report.json").write_text(json.dumps(
        {"stopped_because": "duration", "seconds": 30.2,
         "config": {"duration": 30.0, "sim": {"scenario": "demo", "seed": 3}},
         "components": {"sim": {"flows": 3}, "xapp-occ": {**long_state, "flows": 2,
                                                          "latency_ms": {"0.5": 0.8, "0.99": 2.5}},
                        "xapp-handover": {"ho_events": {"start": 1, "complete": 1}},
                        "xapp-octopus": {"policies": [{"id": "octopus-demo",
                                                       "state": "enforced"}]}}}))  # fmt: skip
    rows = [{"sim_seconds": t, "updated_unix": T0 + t, "handovers": 0,
             "ue_rates": [{"ue": 1000 + u, "capacity_kbps": 9000.0 + 100 * t,
                           "throughput_kbps": 5000.0, "abw_kbps": None if t < 2 else 7000.0}
                          for u in range(3)],
             "flow_rates": [{"flow": u, "ue": 1000 + u, "scheme": s, "target_kbps": 6000.0,
                             "dropped_pkts": 3 * t if u == 2 else 0, "tail_dropped_pkts": 0}
                            for u, s in enumerate(("occ", "gcc", "gcc"))]}
            for t in range(20)]  # fmt: skip
    (tmp / "sim-series.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows) + '{"torn')
    gt = [{"event": "start", "ue": 1000, "unix_ms": (T0 + 12) * 1e3, "sim_s": 12.0,
           "source_meid": "gnb_a", "target_meid": "gnb_b", "failed": False, "pingpong": False},
          {"event": "end", "ue": 1000, "unix_ms": (T0 + 12.09) * 1e3, "sim_s": 12.09,
           "source_meid": "gnb_a", "target_meid": "gnb_b", "failed": False},
          # in progress when the run stopped: not judged
          {"event": "start", "ue": 1001, "unix_ms": (T0 + 19.5) * 1e3, "sim_s": 19.5,
           "source_meid": "gnb_b", "target_meid": "gnb_a", "failed": False,
           "pingpong": False}]  # fmt: skip
    (tmp / "sim-handovers.jsonl").write_text("".join(json.dumps(r) + "\n" for r in gt))
    ev = [{"ue": 1000, "event": "start", "t_ms": (T0 + 12.001) * 1e3, "source_meid": "gnb_a",
           "path": "rc"},
          {"ue": 1000, "event": "complete", "t_ms": (T0 + 12.092) * 1e3, "source_meid": "gnb_a",
           "target_meid": "gnb_b", "path": "rc"}]  # fmt: skip
    (tmp / "handover-events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in ev))
    pct = list(range(101))
    (tmp / "sim-summary.json").write_text(json.dumps({
        "scenario": "demo", "sim_seconds": 20.0,
        "ues": [{"ue": i, "amf_ue_ngap_id": 1000 + i, "delivered_bytes": 10_000_000,
                 "handovers": 1 if i == 0 else 0,
                 "dropper": {"dropped_packets": 57, "dropped_msgs_by_msg": 9,
                             "dropped_msgs_by_bitrate": 0} if i == 2 else None}
                for i in range(3)],
        "flows": [_flow(0, "occ", 30.0), _flow(1, "gcc", 40.0), _flow(2, "gcc", 35.0, 57)],
        "latency_quantiles": {"percentiles": pct, "flows": [
            {"flow": i, "frame_ms": [20.0 + i + p for p in pct],
             "network_ms": [10.0 + i + p / 2 for p in pct]} for i in range(3)]},
    }))  # fmt: skip
    (tmp / "abw-reports.jsonl").write_text(json.dumps(
        {"unix": T0 + 5, "reports": 200, "bad": 0, "ues": [1000, 1001],
         "delivery_ms": {"p50": 1.5, "p99": 3.0, "max": 4.0},
         "age_ms": {"p50": 4.0, "p99": 9.0, "max": 11.0}}) + "\n")  # fmt: skip
    return tmp


def test_report_from_a_run_folder(tmp_path: Path) -> None:
    run = _run_folder(tmp_path)
    out = subprocess.run([sys.executable, "-m", "octoric.cli", "report", str(run)],
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert out.returncode == 0, out.stderr
    page = (run / "report.html").read_text()
    # every figure: an SVG with a PNG fallback, both decodable
    figs = re.findall(r'<figure id="fig-([a-z_]+)">', page)
    assert figs == ["rates", "cdf_frame", "cdf_network", "handovers", "drops"], figs
    svgs = re.findall(r'srcset="data:image/svg\+xml;base64,([^"]+)"', page)
    pngs = re.findall(r'<img alt="[^"]*" src="data:image/png;base64,([^"]+)"', page)
    assert len(svgs) == len(pngs) == 5
    for b64 in svgs:
        assert b"<svg" in base64.b64decode(b64)[:2000]
    for b64 in pngs:
        assert base64.b64decode(b64)[:8] == b"\x89PNG\r\n\x1a\n"
    # the summary: one row per flow, with its numbers, under the UE names of the figures
    table = page.split('<table class="summary">')[1].split("</table>")[0]
    assert table.count("<tr>") == 4  # the head and three flows
    assert "UE 1000</td><td>OCC-fed</td>" in table and "UE 1001</td><td>GCC</td>" in table
    assert "UE 1002</td><td>GCC + Octopus dropper</td>" in table
    assert '<td class="n">90</td>' in table  # UE 1000's frame p99
    assert '<td class="n">1</td>' in table  # frames lost %: 6 of 600
    # OCC-fed beside GCC, and each xApp's line
    schemes = page.split('<table class="schemes">')[1].split("</table>")[0]
    assert "OCC-fed" in schemes and "GCC" in schemes
    xapps = page.split('<table class="xapps">')[1].split("</table>")[0]
    assert "1 judged, 0 missed" in xapps and "57 packets dropped" in xapps
    assert "30500 delivery" in xapps and "p50 0.800 ms" in xapps
    # the configuration and versions; raw state whole, folded away
    assert "scenario: demo" in page and "<td>python</td>" in page
    assert "<details><summary>xapp-occ</summary>" in page
    raw = page.split("<details><summary>xapp-occ</summary>")[1].split("</details>")[0]
    assert "&quot;ue&quot;: 1199" in raw and "199000000.0" in raw  # the last of 200 UEs
    assert " ..." not in page and "...</code>" not in page
    assert "stopped because: duration" in page
    # the same in report.json
    rep = json.loads((run / "report.json").read_text())
    a = rep["analysis"]
    assert [f["key"] for f in a["figures"]] == figs
    assert [r["name"] for r in a["flows"]] == ["UE 1000", "UE 1001", "UE 1002"]
    cdf = next(f for f in a["figures"] if f["key"] == "cdf_frame")
    assert cdf["panels"][0]["series"][0]["x"][50] == 70.0  # flow 0's median frame latency
    ho = next(f for f in a["figures"] if f["key"] == "handovers")
    xapp_start = next(s for s in ho["panels"][0]["series"] if s["name"] == "start (xApp)")
    assert xapp_start["x"] == [12.001]  # on the simulator's clock, as the ground truth
    assert a["handover_check"]["handovers"] == 1 and a["handover_check"]["missed"] == 0
    assert "python" in rep["versions"]


def test_a_report_of_what_there_is(tmp_path: Path) -> None:
    from octoric.deploy import report

    run = _run_folder(tmp_path)
    for f in ("sim-series.jsonl", "sim-handovers.jsonl", "handover-events.jsonl",
              "abw-reports.jsonl"):  # fmt: skip
        (run / f).unlink()
    page = report.build(run)
    assert re.findall(r'<figure id="fig-([a-z_]+)">', page) == ["cdf_frame", "cdf_network"]
    assert '<table class="summary">' in page and "30500" not in page


def test_report_of_a_folder_that_is_no_run(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "octoric.cli", "report", str(tmp_path)],
                         capture_output=True, text=True, timeout=60)  # fmt: skip
    assert out.returncode != 0 and "not a run folder" in out.stderr
