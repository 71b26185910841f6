"""The E2AP envelope codec (e2term's reader), checked against the full codec and srsRAN's PDUs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from octoric.e2sm import e2ap
from octoric.e2sm import envelope as env

pytestmark = pytest.mark.unit


def test_srsran_vectors_parse_and_rebuild(shared_dir: Path) -> None:
    folder = shared_dir / "vectors/srsran"
    seen = 0
    for entry in json.loads((folder / "index.json").read_text()):
        if entry["pdu"] != "E2AP-PDU":
            continue
        data = bytes.fromhex((folder / entry["file"]).read_text().strip())
        e = env.parse(data)
        full = e2ap.decode_e2ap(data)
        assert e.procedure == full.PROCEDURE, entry["file"]
        if hasattr(full, "request_id"):
            rid = full.request_id
            assert e.request_id() == (rid.requestor_id, rid.instance_id)
        assert env.build(e.kind, e.procedure, e.criticality, list(e.ies)) == data
        seen += 1
    assert seen >= 10


@pytest.mark.parametrize("size", [0, 100, 16383, 16384, 40000, 70000])
def test_indications_of_every_size_agree_with_the_codec(size: int) -> None:
    msg = bytes((i * 7) & 0xFF for i in range(size))
    ind = e2ap.RicIndication(
        request_id=e2ap.RicRequestId(1234, 65535),
        ran_function_id=2,
        action_id=3,
        header=b"\x01" * 12,
        message=msg,
        sn=9,
    )
    data = e2ap.encode_e2ap(ind)
    e = env.parse(data)
    assert (e.kind, e.procedure) == (env.INITIATING, e2ap.PROC_RIC_INDICATION)
    assert e.request_id() == (1234, 65535)
    assert e.ran_function_id() == 2
    value = e.ie(26)
    assert value is not None and env.octet_string(value) == msg


def test_built_subscription_delete_decodes_with_the_codec() -> None:
    data = env.build(
        env.INITIATING,
        e2ap.PROC_RIC_SUBSCRIPTION_DELETE,
        0,
        [
            (env.IE_RIC_REQUEST_ID, 0, env.request_id_ie(123, 21)),
            (env.IE_RAN_FUNCTION_ID, 0, (147).to_bytes(2, "big")),
        ],
    )
    msg = e2ap.decode_e2ap(data)
    assert isinstance(msg, e2ap.RicSubscriptionDeleteRequest)
    assert msg.request_id == e2ap.RicRequestId(123, 21) and msg.ran_function_id == 147


@pytest.mark.parametrize(
    "data, where",
    [
        (b"", "shorter"),
        (b"\x80\x05\x00\x00", "extension"),
        (b"\x60\x05\x00\x00", "choice index"),
        (b"\x00\x05\x00\x05\x00\x00\x01", "runs past the end"),
        (b"\x00\x05\x00\x03\x00\x00\x00\xff", "trailing"),
        (b"\x00\x05\x00\x03\x00\x00\x01", "IE header truncated"),
        (b"\x00\x05\x00\xc7" + b"\x00" * 10, "fragment multiplier"),
    ],
)
def test_malformed_envelopes_say_where(data: bytes, where: str) -> None:
    with pytest.raises(env.EnvelopeError, match=where):
        env.parse(data)


@settings(max_examples=3000, deadline=None)
@given(st.binary(max_size=200))
def test_random_bytes_raise_only_envelope_errors(data: bytes) -> None:
    try:
        e = env.parse(data)
        e.request_id()
        e.ran_function_id()
    except env.EnvelopeError:
        pass


@settings(max_examples=500, deadline=None)
@given(st.binary(min_size=1, max_size=300), st.integers(0, 65535), st.integers(0, 65535))
def test_mutated_indications_never_crash(payload: bytes, req: int, inst: int) -> None:
    data = bytearray(
        e2ap.encode_e2ap(e2ap.RicIndication(e2ap.RicRequestId(req, inst), 2, 1, b"h", payload))
    )
    data[len(data) // 2] ^= 0xFF
    try:
        e = env.parse(bytes(data))
        e.request_id()
        e.ran_function_id()
    except env.EnvelopeError:
        pass
