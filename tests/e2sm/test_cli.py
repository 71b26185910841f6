"""``octoric e2sm decode/encode``: JSON out, hex out, one-line errors, non-zero exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from octoric.cli import main
from octoric.e2sm import e2ap, kpm

pytestmark = pytest.mark.unit


def test_decode_hex_and_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    raw = e2ap.encode_e2ap(e2ap.RicSubscriptionDeleteRequest(e2ap.RicRequestId(123, 21), 2))
    assert main(["e2sm", "decode", "--pdu", "E2AP-PDU", "--hex", raw.hex()]) == 0
    js = json.loads(capsys.readouterr().out)
    assert js[0] == "initiatingMessage"
    assert js[1]["value"][0] == "RICsubscriptionDeleteRequest"
    (tmp_path / "pdu.hex").write_text(raw.hex() + "\n")
    (tmp_path / "pdu.bin").write_bytes(raw)
    for f in ("pdu.hex", "pdu.bin"):
        assert main(["e2sm", "decode", "--pdu", "E2AP-PDU", "--file", str(tmp_path / f)]) == 0
        assert json.loads(capsys.readouterr().out) == js


def test_encode_from_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    raw = kpm.encode_kpm(kpm.action_definition_style4())
    assert main(["e2sm", "decode", "--pdu", "E2SM-KPM-ActionDefinition", "--hex", raw.hex()]) == 0
    (tmp_path / "a.json").write_text(capsys.readouterr().out)
    assert (
        main(
            [
                "e2sm",
                "encode",
                "--pdu",
                "E2SM-KPM-ActionDefinition",
                "--json",
                str(tmp_path / "a.json"),
            ]
        )
        == 0
    )
    assert capsys.readouterr().out.strip() == raw.hex()


@pytest.mark.parametrize(
    "argv",
    [
        ["e2sm", "decode", "--pdu", "E2AP-PDU", "--hex", "zz"],
        ["e2sm", "decode", "--pdu", "E2AP-PDU", "--hex", "00ff"],
        ["e2sm", "decode", "--pdu", "Nope", "--hex", "00"],
        ["e2sm", "decode", "--pdu", "E2AP-PDU", "--file", "/nonexistent/x"],
        ["e2sm", "encode", "--pdu", "E2SM-KPM-EventTriggerDefinition", "--json", "/nonexistent"],
    ],
)
def test_bad_input_is_one_line(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) != 0
    err = capsys.readouterr().err.strip()
    assert err.startswith("octoric: error:") and "\n" not in err and "Traceback" not in err


def test_bad_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "bad.json").write_text("{not json")
    (tmp_path / "wrong.json").write_text('{"eventDefinition-formats": ["nope", {}]}')
    for f in ("bad.json", "wrong.json"):
        assert (
            main(
                [
                    "e2sm",
                    "encode",
                    "--pdu",
                    "E2SM-KPM-EventTriggerDefinition",
                    "--json",
                    str(tmp_path / f),
                ]
            )
            == 1
        )
        err = capsys.readouterr().err.strip()
        assert err.startswith("octoric: error:") and "\n" not in err


def test_types(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["e2sm", "types"]) == 0
    names = capsys.readouterr().out.split()
    assert "E2AP-PDU" in names and "E2SM-RC-ControlHeader" in names


def test_kpm_v2_header_with_kpm_version(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    v2 = "00e8fe6f80"  # the KPM v02.03 header: preamble, 4-octet NTP seconds
    argv = ["e2sm", "decode", "--pdu", "E2SM-KPM-IndicationHeader", "--hex", v2]
    assert main([*argv, "--kpm-version", "2.03"]) == 0
    js = json.loads(capsys.readouterr().out)
    assert js == {
        "indicationHeader-formats": ["indicationHeader-Format1", {"colletStartTime": "e8fe6f80"}]
    }
    assert main(argv) != 0  # as v04.00: an error that names the likely cause
    assert "--kpm-version 2.03" in capsys.readouterr().err
    (tmp_path / "h.json").write_text(json.dumps(js))
    enc = [
        "e2sm",
        "encode",
        "--pdu",
        "E2SM-KPM-IndicationHeader",
        "--json",
        str(tmp_path / "h.json"),
    ]
    assert main([*enc, "--kpm-version", "v02.03"]) == 0
    assert capsys.readouterr().out.strip() == v2
    assert main([*enc, "--kpm-version", "9"]) != 0
    assert "--kpm-version" in capsys.readouterr().err


def test_ue_key_both_ways(capsys: pytest.CaptureFixture[str]) -> None:
    """A testbed user finds the key of the UE a DU names by F1AP ID, and takes keys apart."""
    from octoric.contracts import ue_key

    assert main(["e2sm", "ue-key", "--meid", "gnb_001_001_00019b", "--f1ap-id", "3"]) == 0
    made = json.loads(capsys.readouterr().out)
    assert made["ue"] == ue_key.du_key("gnb_001_001_00019b", 3)
    assert main(["e2sm", "ue-key", str(made["ue"])]) == 0
    parts = json.loads(capsys.readouterr().out)
    assert parts == {"ue": made["ue"], "node_tag": ue_key.tag("gnb_001_001_00019b"), "f1ap_id": 3}
    assert main(["e2sm", "ue-key", "17"]) == 0
    assert json.loads(capsys.readouterr().out)["amf_ue_ngap_id"] == 17
    for bad in (["--meid", "x"], ["--meid", "x", "--f1ap-id", str(2**32)], [str(2**60)],
                ["5", "--meid", "x", "--f1ap-id", "1"]):  # fmt: skip
        assert main(["e2sm", "ue-key", *bad]) != 0
        assert "error" in capsys.readouterr().err
