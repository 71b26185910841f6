"""Issue #39: what a real srsRAN gNB (release_25_10 + octoric's patch series, run by
``octoric testbed live``) sent and received over E2, captured by srsRAN's own E2AP pcap writer
(``tests/e2sm/vectors/srsran-live``, ``index.json`` names the provenance). No srsRAN is needed:
CI keeps the proof that octoric's codecs read what the real gNB sends, byte for byte, and what
octoric sent the real gNB.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from octoric.e2sm import e2ap, indication, kpm, rc
from octoric.xapps.base.discovery import kpm_definition_of

pytestmark = pytest.mark.unit
VECTORS = Path(__file__).parent / "vectors" / "srsran-live"


def _index() -> dict:
    return json.loads((VECTORS / "index.json").read_text())


def _pdus() -> dict[str, bytes]:
    out = {}
    for v in _index()["vectors"]:
        raw = bytes.fromhex("".join((VECTORS / v["file"]).read_text().split()))
        assert len(raw) == v["bytes"], v["file"]
        out[v["file"]] = raw
    return out


def _one(prefix: str) -> bytes:
    found = [raw for name, raw in _pdus().items() if name.startswith(prefix)]
    assert found, f"no vector {prefix}*"
    return found[0]


def test_the_vectors_name_their_source() -> None:
    prov = _index()["provenance"]
    assert prov["srsran_tag"] == "release_25_10"
    assert len(prov["srsran_commit"]) == 40
    assert prov["patch_series"].startswith("0001-0015")
    assert "gnb_rfless.yml" in prov["config"]


def test_every_vector_decodes_and_re_encodes_to_the_same_bytes() -> None:
    for name, raw in _pdus().items():
        msg = e2ap.decode_e2ap(raw)
        assert e2ap.encode_e2ap(msg) == raw, name


def test_the_dus_e2_setup_offers_kpm_with_occ_and_rc() -> None:
    setup = e2ap.decode_e2ap(_one("du-E2SetupRequest"))
    assert isinstance(setup, e2ap.E2SetupRequest)
    by_oid = {f.oid: f for f in setup.ran_functions}
    assert "1.3.6.1.4.1.53148.1.2.2.2" in by_oid  # E2SM-KPM (srsRAN's OID)
    assert "1.3.6.1.4.1.53148.1.1.2.3" in by_oid  # E2SM-RC
    definition = kpm_definition_of(by_oid["1.3.6.1.4.1.53148.1.2.2.2"].definition)
    assert definition is not None
    names = {m[0] for style in definition.report_styles or () for m in style.measurements}
    assert {"OCC.McsDl", "OCC.BitsPerPrbDl", "OCC.DlBufferBytes", "OCC.DlArrivedBytes"} <= names


def test_a_real_style4_indication_carries_every_test_ue_and_granule() -> None:
    # the DU reports to the OCC xApp's subscription and to the handover xApp's: take OCC's
    parsed = [
        indication.parse_ric_indication(raw)[1]
        for name, raw in _pdus().items()
        if name.startswith("du-RicIndication")
    ]
    occ = [c for c in parsed if "OCC.McsDl" in c.metrics]
    assert occ, "no indication of the OCC xApp's subscription"
    cols = occ[0]
    assert len(cols.ue_ids) == 4
    assert all(u.kind == "gNB-DU-UEID" for u in cols.ue_ids)
    assert cols.values.shape[2] == 10  # ten 1 ms granules per 10 ms report
    assert not np.isnan(cols.metric("OCC.PrbTotalDl")).any()


def test_the_real_gnb_refused_a_control_for_a_ue_without_drb() -> None:
    req = e2ap.decode_e2ap(_one("du-RicControlRequest"))
    assert isinstance(req, e2ap.RicControlRequest)
    header = rc.decode_rc(rc.RcControlHeader, req.header)
    assert header.action_id == 100 and header.ue_id.kind == "gNB-DU-UEID"
    fail = e2ap.decode_e2ap(_one("du-RicControlFailure"))
    assert isinstance(fail, e2ap.RicControlFailure)
    assert (fail.cause.group, fail.cause.value) == ("ricRequest", "control-failed-to-execute")


def test_the_cu_cp_accepts_the_handover_xapps_rc_report_subscription() -> None:
    req = e2ap.decode_e2ap(_one("cu-cp-RicSubscriptionRequest"))
    assert isinstance(req, e2ap.RicSubscriptionRequest) and req.ran_function_id == 3  # E2SM-RC
    resp = e2ap.decode_e2ap(_one("cu-cp-RicSubscriptionResponse"))
    assert isinstance(resp, e2ap.RicSubscriptionResponse)
    assert resp.request_id == req.request_id


def test_the_cu_cp_refuses_a_kpm_style4_subscription() -> None:
    # the OCC xApp asked the CU-CP's KPM function too; srsRAN's CU-CP has no UE-level KPM
    fail = e2ap.decode_e2ap(_one("cu-cp-RicSubscriptionFailure"))
    assert isinstance(fail, e2ap.RicSubscriptionFailure)
    assert fail.ran_function_id == kpm.RAN_FUNCTION_ID
