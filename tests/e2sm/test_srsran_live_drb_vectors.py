"""Issue #39: what a real srsRAN gNB sent with test-mode UEs that have a DRB (srsran_agent patch
0016) and with its OCC.* measurements switched off (patch 0017), captured by srsRAN's own E2AP
pcap writer in runs of ``octoric testbed live`` (``tests/e2sm/vectors/srsran-live-drb``,
``index.json`` names the provenance): the octopus xApp's RC CONTROL action 100 for the video UE
and the gNB's ACK carrying its dropper's counters after real drops; the DU's stock KPM offer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from octoric.contracts.octopus_policy import DropCounters
from octoric.e2sm import e2ap
from octoric.xapps.base.discovery import kpm_definition_of
from octoric.xapps.octopus.xapp import drop_counters

pytestmark = pytest.mark.unit
VECTORS = Path(__file__).parent / "vectors" / "srsran-live-drb"
KPM_OID = "1.3.6.1.4.1.53148.1.2.2.2"


def _index() -> dict:
    return json.loads((VECTORS / "index.json").read_text())


def _pdu(file: str) -> bytes:
    entry = next(v for v in _index()["vectors"] if v["file"] == file)
    raw = bytes.fromhex("".join((VECTORS / file).read_text().split()))
    assert len(raw) == entry["bytes"]
    return raw


def test_the_vectors_name_their_source() -> None:
    prov = _index()["provenance"]
    assert prov["srsran_tag"] == "release_25_10" and len(prov["srsran_commit"]) == 40
    assert prov["patch_series"].startswith("0001-0017")
    assert "cu_up_drb_5qi" in prov["config"]


def test_every_vector_decodes_and_re_encodes_to_the_same_bytes() -> None:
    for v in _index()["vectors"]:
        raw = _pdu(v["file"])
        assert e2ap.encode_e2ap(e2ap.decode_e2ap(raw)) == raw, v["file"]


def test_the_real_gnb_acknowledged_the_control_with_its_drop_counters() -> None:
    req = e2ap.decode_e2ap(_pdu("du-RicControlRequest.hex"))
    ack = e2ap.decode_e2ap(_pdu("du-RicControlAcknowledge.hex"))
    assert isinstance(req, e2ap.RicControlRequest)
    assert isinstance(ack, e2ap.RicControlAcknowledge)
    assert ack.request_id == req.request_id and ack.ran_function_id == req.ran_function_id
    # what the octopus xApp reads from it (and publishes in 30502): the drops of injected video
    counters = drop_counters(ack.outcome)
    assert counters == DropCounters(packets=1131, bytes=1384575, msgs_by_message=21,
                                    msgs_by_bitrate=0)  # fmt: skip


def test_the_stock_kpm_offer_has_no_occ_measurements_but_the_standard_ones() -> None:
    setup = e2ap.decode_e2ap(_pdu("du-E2SetupRequest-stock-kpm.hex"))
    assert isinstance(setup, e2ap.E2SetupRequest)
    kpm_fn = next(f for f in setup.ran_functions if f.oid == KPM_OID)
    definition = kpm_definition_of(kpm_fn.definition)
    assert definition is not None
    names = {m[0] for style in definition.report_styles or () for m in style.measurements}
    assert not {n for n in names if n.startswith("OCC.")}
    assert {"RRU.PrbUsedDl", "RRU.PrbAvailDl", "DRB.UEThpDl"} <= names
