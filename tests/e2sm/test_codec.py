"""The generic codec's contract: limits, error type, time bound, generated code up to date."""

from __future__ import annotations

import threading

import pytest

from octoric.e2sm import codec, e2ap, kpm, rc, regen_asn1
from octoric.e2sm.common import Guami, UeId, ntp_timestamp, ntp_to_unix
from octoric.e2sm.errors import E2smDecodeError, E2smEncodeError
from octoric.errors import OctoricError

pytestmark = pytest.mark.unit


def test_generated_code_matches_the_asn1_sources() -> None:
    assert regen_asn1.recorded_digest() == regen_asn1.sources_digest(), (
        "e2sm/asn1/*.asn changed: run .venv/bin/python -m octoric.e2sm.regen_asn1"
    )


def test_generated_code_is_what_the_compiler_makes_now() -> None:
    assert regen_asn1.render() == regen_asn1.OUTPUT.read_text()


def test_top_level_types() -> None:
    assert "E2AP-PDU" in codec.TOP_LEVEL_TYPES
    for name in (
        "E2SM-KPM-IndicationMessage",
        "E2SM-KPM-RANfunction-Description",
        "E2SM-RC-ControlMessage",
        "E2SM-RC-RANFunctionDefinition",
    ):
        assert name in codec.TOP_LEVEL_TYPES


def test_decode_error_says_what_and_where() -> None:
    with pytest.raises(E2smDecodeError) as ei:
        codec.decode("E2AP-PDU", b"\x00\x08\x00")
    err = ei.value
    assert isinstance(err, OctoricError)
    assert err.type_name == "E2AP-PDU" and err.where and err.where.startswith("byte ")
    assert "\n" not in str(err)


def test_limits() -> None:
    with pytest.raises(E2smDecodeError, match="empty"):
        codec.decode("E2AP-PDU", b"")
    with pytest.raises(E2smDecodeError, match="limit"):
        codec.decode("E2AP-PDU", b"\x00" * (codec.MAX_PDU_BYTES + 1))
    with pytest.raises(E2smDecodeError, match="unknown"):
        codec.decode("No-Such-Type", b"\x00")
    raw = e2ap.encode_e2ap(e2ap.ResetRequest(1, e2ap.Cause("misc", "unspecified")))
    with pytest.raises(E2smDecodeError, match="trailing"):
        codec.decode("E2AP-PDU", raw + b"\x00")


def test_time_bound() -> None:
    guami = Guami(b"\x00\xf1\x10", 1, 1, 1)
    reports = tuple(
        kpm.UeReport(UeId.gnb(i, guami), kpm.IndicationFormat1((kpm.MeasRecord((1, 2, 3)),)))
        for i in range(300)
    )
    raw = kpm.encode_kpm(kpm.KpmIndicationMessage(kpm.IndicationFormat3(reports)))
    with pytest.raises(E2smDecodeError, match="longer than"):
        codec.decode("E2SM-KPM-IndicationMessage", raw, time_limit_s=0.0)
    # the codec is usable afterwards
    assert codec.decode("E2SM-KPM-IndicationMessage", raw)


def test_errors_are_counted() -> None:
    before = codec.STATS.decode_errors
    with pytest.raises(E2smDecodeError):
        codec.decode("E2SM-RC-ControlHeader", b"\xff")
    assert codec.STATS.decode_errors == before + 1
    assert codec.STATS.errors_by_type["E2SM-RC-ControlHeader"] >= 1


def test_encode_errors() -> None:
    with pytest.raises(E2smEncodeError):
        e2ap.encode_e2ap(e2ap.RicSubscriptionDeleteRequest(e2ap.RicRequestId(70000, 0), 1))
    with pytest.raises(E2smEncodeError):
        kpm.encode_kpm(kpm.KpmEventTrigger(0))
    with pytest.raises(ValueError):
        kpm.action_definition_style5([UeId.gnb(1, Guami(b"\x00\x00\x00", 0, 0, 0))])


def test_recursive_rc_types_encode() -> None:
    deep: rc.Element | rc.Structure | rc.ListValue = rc.Element(5)
    for i in range(30):
        deep = rc.Structure((rc.RanParam(i + 1, deep), rc.RanParam(100 + i, rc.Element(True))))
    msg = rc.RcControlMessage((rc.RanParam(1, rc.ListValue((deep,))),))  # type: ignore[arg-type]
    assert rc.decode_rc(rc.RcControlMessage, rc.encode_rc(msg)) == msg


def test_threads_share_the_codec_safely() -> None:
    msgs = [e2ap.RicSubscriptionDeleteRequest(e2ap.RicRequestId(i, i), i) for i in range(50)]
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for m in msgs:
                assert e2ap.decode_e2ap(e2ap.encode_e2ap(m)) == m
        except BaseException as e:  # collected for the main thread
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_ntp_timestamps() -> None:
    assert ntp_to_unix(ntp_timestamp(1_700_000_000.5)) == pytest.approx(1_700_000_000.5, abs=1e-6)
    assert len(ntp_timestamp(0)) == 8


def test_recursive_type_error_does_not_exhaust_memory() -> None:
    # found by the fuzzer: pycrate's fullname() walked the parent cycle of a recursive type
    # forever while formatting this error (23 GB before the OOM killer)
    bad = bytes.fromhex("00000100006000004000000001440000000283000178")
    with pytest.raises(E2smDecodeError):
        codec.decode("E2SM-RC-ControlMessage", bad)


def test_empty_sized_strings_are_not_padded() -> None:
    # X.691: no octet-aligned field follows an empty string, hence no padding (asn1tools and
    # srsRAN agree); pycrate 0.8.1 padded
    header = kpm.KpmIndicationHeader(b"\x11" * 8, sender_type="", vendor_name="0")
    raw = kpm.encode_kpm(header)
    assert raw.hex() == "061111111111111111001030"
    assert kpm.decode_kpm(kpm.KpmIndicationHeader, raw) == header
