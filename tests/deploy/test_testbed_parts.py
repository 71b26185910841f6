"""Issue #39: the parts of ``octoric testbed live`` that need no gNB: the gNB config a run writes,
the E2AP pcap reader, the gNB metrics reader, the test UEs from srsRAN's F1AP log, the
injector's packet encodings, and the clear errors for a missing or unpatched gNB."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
import yaml

from octoric.deploy.testbed import e2_capture, gtpu
from octoric.deploy.testbed.gnb import (
    CONFIG_TEMPLATE,
    GnbOptions,
    ModeUe,
    gnb_binary,
    render_config,
    ues_from_f1ap_log,
)
from octoric.deploy.testbed.gnb_metrics import GnbMetrics
from octoric.deploy.testbed.live import abw_vs_gnb
from octoric.e2sm import e2ap
from octoric.errors import OctoricError

pytestmark = pytest.mark.unit


def test_run_config_points_the_gnb_at_this_runs_ric(tmp_path: Path) -> None:
    cfg = render_config(GnbOptions(tmp_path, ues_per_cell=3, time_scaling=2.0), tmp_path,
                        ric_port=23456, transport="tcp", ws_port=34567)  # fmt: skip
    assert cfg["e2"]["addr"] == "127.0.0.1"
    assert (cfg["e2"]["port"], cfg["e2"]["transport"]) == (23456, "tcp")
    assert cfg["e2"]["enable_du_e2"] and cfg["e2"]["enable_cu_cp_e2"]
    assert cfg["remote_control"]["port"] == 34567
    assert cfg["test_mode"]["test_ue"]["nof_ues"] == 3
    assert cfg["ru_dummy"]["time_scaling"] == 2.0
    assert cfg["pcap"]["e2ap_enable"] is True
    assert cfg["pcap"]["e2ap_du_filename"] == str(tmp_path / "gnb-e2ap-du.pcap")
    assert cfg["log"]["filename"].startswith(str(tmp_path))
    # the template itself stays loadable YAML with two cells
    tpl = yaml.safe_load(CONFIG_TEMPLATE.read_text())
    assert len(tpl["cells"]) == 2


def test_a_missing_or_unpatched_gnb_is_named(tmp_path: Path) -> None:
    with pytest.raises(OctoricError, match=r"no gnb at .*build\.sh"):
        gnb_binary(tmp_path)
    exe = tmp_path / "apps" / "gnb" / "gnb"
    exe.parent.mkdir(parents=True)
    exe.write_bytes(b"\x7fELF a gnb without the patch")
    with pytest.raises(OctoricError, match=r"no E2 over TCP .*0011"):
        gnb_binary(tmp_path)
    exe.write_bytes(b"\x7fELF ... Transport to the RIC: sctp, or tcp ...")
    assert gnb_binary(tmp_path) == exe


def _pcap(pdus: list[bytes], linktype: int = e2_capture.E2AP_DLT) -> bytes:
    out = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, linktype)
    for i, p in enumerate(pdus):
        out += struct.pack("<IIII", 1700000000 + i, 500, len(p), len(p)) + p
    return out


def _delete_request() -> bytes:
    return e2ap.encode_e2ap(e2ap.RicSubscriptionDeleteRequest(e2ap.RicRequestId(1021, 1), 2))


def test_pcap_records_are_read_and_counted_by_kind(tmp_path: Path) -> None:
    req = _delete_request()
    f = tmp_path / "e2ap.pcap"
    f.write_bytes(_pcap([req, b"\x00\x01", req]) + b"\x01\x02\x03")  # a torn last record
    pdus = e2_capture.read_pdus(f)
    assert [p.data for p in pdus] == [req, b"\x00\x01", req]
    assert pdus[0].t == pytest.approx(1700000000.0005)
    assert e2_capture.tally(f) == {"RicSubscriptionDeleteRequest": 2, "undecodable": 1}
    assert set(e2_capture.samples(f)) == {"RicSubscriptionDeleteRequest"}
    assert e2_capture.tally(tmp_path / "absent.pcap") == {}


def test_a_pcap_of_another_link_type_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "f1ap.pcap"
    f.write_bytes(_pcap([b"\x00"], linktype=154))
    with pytest.raises(e2_capture.PcapError, match="link type 154"):
        e2_capture.read_pdus(f)
    (tmp_path / "x.pcap").write_bytes(b"not a pcap file at all....")
    with pytest.raises(e2_capture.PcapError, match="not a pcap"):
        e2_capture.read_pdus(tmp_path / "x.pcap")


def test_gnb_metrics_average_each_ue_over_a_window(tmp_path: Path) -> None:
    m = GnbMetrics(1, tmp_path / "m.jsonl")
    doc = {"timestamp": "x", "cells": [{"cell_metrics": {"pci": 1}, "ue_list": [
        {"rnti": 17921, "pci": 1, "dl_brate": 10e6, "dl_mcs": 27, "dl_bs": 1000}]}]}  # fmt: skip
    m.add(doc)
    doc["cells"][0]["ue_list"][0]["dl_brate"] = 20e6
    m.add(doc)
    m.add({"du": {"du_high": {}}})  # not a scheduler document
    m._flush(123.0)
    assert m.latest()[17921]["dl_brate_bps"] == pytest.approx(15e6)
    assert m.latest()[17921]["reports"] == 2
    assert (tmp_path / "m.jsonl").read_text().count("\n") == 1


def test_test_ues_and_their_f1ap_ids_come_from_srsran_log() -> None:
    t = "2026-11-28T00:40:01.000 [DU-F1   ] [I] "
    log = "\n".join([
        f"{t}ue=0 c-rnti=0x4601 du_ue=0: F1 UE context created successfully.",
        f"{t}ue=1 c-rnti=0x4603 du_ue=1: F1 UE context created successfully.",
        f"{t}Rx PDU du=0 ue=1 cu_ue=0 du_ue=1: DLRRCMessageTransfer",
        f"{t}Rx PDU du=0 ue=0 cu_ue=1 du_ue=0: DLRRCMessageTransfer",
    ])  # fmt: skip
    ues = ues_from_f1ap_log(log, cells=[1, 2], rnti0=0x4601, per_cell=2)
    assert ues == [ModeUe(1, 0x4601, 1), ModeUe(1, 0x4602, None), ModeUe(2, 0x4603, 0),
                   ModeUe(2, 0x4604, None)]  # fmt: skip


def test_abw_vs_gnb_takes_medians_after_the_start() -> None:
    rows = [{"t": float(t), "ues": {"0x4601": {"occ_frame_abw_bps": 10e6 + t,
             "occ_target_bps": 8e6, "gnb_dl_brate_bps": 20e6 if t < 5 else 11e6}}}
            for t in range(20)]  # fmt: skip
    c = abw_vs_gnb(rows)["0x4601"]
    assert c["gnb_median_bps"] == 11e6
    assert c["occ_target_median_bps"] == 8e6
    assert c["ratio"] == pytest.approx((10e6 + 12) / 11e6)
    assert c["samples"] == 15


def test_g_pdu_round_trip_and_ipv4_checksum() -> None:
    inner = gtpu.ipv4_udp(bytes([10, 45, 0, 1]), bytes([10, 45, 1, 2]), 5000, 6000, b"hello", 7)
    assert len(inner) == 20 + 8 + 5
    # a correct IPv4 header sums to 0xffff (its checksum is 0 when recomputed)
    assert gtpu._checksum(inner[:20]) == 0
    pkt = gtpu.g_pdu(0x1234, 9, inner)
    assert pkt[:2] == b"\x34\xff" and len(pkt) == gtpu.GTPU_HEADER_LEN + len(inner)
    assert gtpu.parse_g_pdu(pkt) == (0x1234, 9, inner)
    with pytest.raises(ValueError, match="QFI"):
        gtpu.g_pdu(1, 64, inner)
    with pytest.raises(ValueError, match="length field"):
        gtpu.parse_g_pdu(pkt[:-1])


def test_the_cli_names_what_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from octoric.cli import main

    monkeypatch.delenv("OCTORIC_SRSRAN_BUILD", raising=False)
    assert main(["testbed", "live"]) == 1
    assert "--srsran-build DIR or set OCTORIC_SRSRAN_BUILD" in capsys.readouterr().err
    assert main(["testbed", "live", "--srsran-build", str(tmp_path), "--ues", "3"]) == 1
    assert "--ues must be even" in capsys.readouterr().err


def test_srsran_log_is_read_in_whole_lines(tmp_path: Path) -> None:
    from octoric.deploy.testbed.gnb import GnbComponent

    exe = tmp_path / "apps" / "gnb" / "gnb"
    exe.parent.mkdir(parents=True)
    exe.write_bytes(b"Transport to the RIC")
    g = GnbComponent(GnbOptions(tmp_path))
    log = tmp_path / "gnb-srsran.log"
    g.config = {"log": {"filename": str(log)}, "cells": [{"pci": 1}],
                "test_mode": {"test_ue": {"rnti": "0x4601", "nof_ues": 1}}}  # fmt: skip
    log.write_text("x [DU-F1   ] [I] ue=0 c-rnti=0x4601 du_ue=0: F1 UE context created\nx [DU-F1")
    assert g.test_ues() == [ModeUe(1, 0x4601, None)]  # the cut line waits
    with log.open("a") as f:
        f.write("   ] [I] Rx PDU du=0 ue=0 cu_ue=5 du_ue=0: DLRRCMessageTransfer\n")
    assert g.test_ues() == [ModeUe(1, 0x4601, 5)]
