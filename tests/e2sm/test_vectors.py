"""Real PDUs from srsRAN_Project's E2 tests (../shared/vectors/srsran): decode every one and
re-encode it to the same bytes, through every layer (generic codec, JSON, dataclasses)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from octoric.e2sm import codec, e2ap, jsonconv, rc

pytestmark = pytest.mark.unit


def _vectors(vectors_dir: Path) -> list[tuple[str, str, bytes]]:
    index = json.loads((vectors_dir / "index.json").read_text())
    out = []
    for entry in index:
        raw = bytes.fromhex("".join((vectors_dir / entry["file"]).read_text().split()))
        assert len(raw) == entry["bytes"], entry["file"]
        out.append((entry["file"], entry["pdu"], raw))
    assert out, "index.json lists no vectors"
    return out


def test_every_vector_round_trips_through_the_codec(vectors_dir: Path) -> None:
    for name, pdu, raw in _vectors(vectors_dir):
        value = codec.decode(pdu, raw)
        assert codec.encode(pdu, value) == raw, name


def test_every_vector_round_trips_through_json(vectors_dir: Path) -> None:
    for name, pdu, raw in _vectors(vectors_dir):
        js: Any = json.loads(json.dumps(jsonconv.decode_to_json(pdu, raw)))
        assert jsonconv.encode_from_json(pdu, js) == raw, name


def test_every_vector_round_trips_through_dataclasses(vectors_dir: Path) -> None:
    rc_types = {
        "E2SM-RC-ControlHeader": rc.RcControlHeader,
        "E2SM-RC-ControlMessage": rc.RcControlMessage,
    }
    for name, pdu, raw in _vectors(vectors_dir):
        if pdu == "E2AP-PDU":
            msg = e2ap.decode_e2ap(raw)
            assert e2ap.encode_e2ap(msg) == raw, name
            if isinstance(msg, e2ap.RicControlRequest) and msg.ran_function_id == 3:
                # the E2SM-RC payloads inside srsRAN's control requests
                header = rc.decode_rc(rc.RcControlHeader, msg.header)
                message = rc.decode_rc(rc.RcControlMessage, msg.message)
                assert rc.encode_rc(header) == msg.header
                assert rc.encode_rc(message) == msg.message
        else:
            cls = rc_types[pdu]
            assert rc.encode_rc(rc.decode_rc(cls, raw)) == raw, name


def test_known_vector_contents(vectors_dir: Path) -> None:
    by_name = {n: raw for n, _, raw in _vectors(vectors_dir)}
    resp = e2ap.decode_e2ap(
        by_name["e2_setup_procedure_test__correctly_unpack_e2_response__e2_resp.hex"]
    )
    assert isinstance(resp, e2ap.E2SetupResponse)
    assert resp.global_ric_id.plmn == b"\x00\xf1\x10"
    delete = e2ap.decode_e2ap(
        by_name[
            "e2_subscription_setup_test__start_subscription_then_delete_subscription__sub_del_req.hex"
        ]
    )
    assert isinstance(delete, e2ap.RicSubscriptionDeleteRequest)
    assert (delete.request_id.requestor_id, delete.request_id.instance_id) == (123, 21)
    # O-RAN SC sends subscription requests with procedure criticality "ignore": kept on re-encode
    sub = e2ap.decode_e2ap(
        by_name[
            "e2_subscription_setup_test__start_subscription_then_delete_subscription__e2ap_sub_req.hex"
        ]
    )
    assert isinstance(sub, e2ap.RicSubscriptionRequest)
    assert sub.wire is not None and sub.wire.procedure_criticality == "ignore"
