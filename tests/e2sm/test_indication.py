"""The columnar indication parser, and the fast Format 3 decoder against the generic one."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from testkit import strategies as S

from octoric.e2sm import e2ap, indication, kpm
from octoric.e2sm.common import Guami, UeId, ntp_timestamp
from octoric.e2sm.envelope import decode_ric_indication
from octoric.e2sm.errors import E2smDecodeError
from octoric.e2sm.fastpath import FastFormat3Decoder

pytestmark = pytest.mark.unit
GUAMI = Guami(b"\x00\xf1\x10", 2, 1, 1)
HEADER = kpm.encode_kpm(kpm.KpmIndicationHeader(ntp_timestamp(1_700_000_000.25)))


def _occ_message(
    n_ue: int = 3, n_rec: int = 10
) -> tuple[kpm.KpmIndicationMessage, list[list[list[int]]]]:
    values = [
        [[u * 1000 + m * 10 + g for g in range(n_rec)] for m in range(8)] for u in range(n_ue)
    ]
    reports = tuple(
        kpm.UeReport(
            UeId.gnb(100 + u, GUAMI, u),
            kpm.IndicationFormat1(
                tuple(
                    kpm.MeasRecord(tuple(values[u][m][g] for m in range(8))) for g in range(n_rec)
                ),
                tuple(kpm.MeasInfo(m) for m in kpm.OCC_MEASUREMENTS),
                1,
            ),
        )
        for u in range(n_ue)
    )
    return kpm.KpmIndicationMessage(kpm.IndicationFormat3(reports)), values


@pytest.mark.parametrize("decoder", [indication.GenericDecoder(), FastFormat3Decoder()])
def test_columns_of_a_style4_indication(decoder: indication.IndicationDecoder) -> None:
    msg, values = _occ_message()
    cols = indication.parse_indication(HEADER, kpm.encode_kpm(msg), decoder)
    assert cols.values.shape == (3, 8, 10)
    assert cols.metrics == list(kpm.OCC_MEASUREMENTS)
    assert [u.amf_ue_ngap_id for u in cols.ue_ids if u] == [100, 101, 102]
    assert np.array_equal(cols.values, np.array(values, dtype=float))
    assert cols.granularity_ms == 1
    assert cols.timestamps[0] == pytest.approx(1_700_000_000.25, abs=1e-6)
    assert cols.timestamps[9] - cols.timestamps[0] == pytest.approx(0.009, abs=1e-6)
    assert np.array_equal(cols.metric("OCC.McsDl")[1], np.array(values[1][3], dtype=float))


def test_fast_path_handles_large_fragmented_messages() -> None:
    msg, values = _occ_message(100, 10)
    raw = kpm.encode_kpm(msg)
    assert len(raw) > 16384  # the open type is fragmented
    fast = FastFormat3Decoder()
    cols = indication.parse_indication(HEADER, raw, fast)
    assert fast.fast == 1 and fast.fallbacks == 0
    assert np.array_equal(cols.values, np.array(values, dtype=float))


def _same(a: indication.KpmColumns, b: indication.KpmColumns) -> None:
    assert a.ue_ids == b.ue_ids
    assert a.metrics == b.metrics
    assert a.granularity_ms == b.granularity_ms
    assert np.array_equal(a.values, b.values, equal_nan=True)
    assert np.array_equal(a.timestamps, b.timestamps)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(S.kpm_messages)
def test_fast_path_equals_generic(msg: kpm.KpmIndicationMessage) -> None:
    raw = kpm.encode_kpm(msg)
    _same(
        indication.parse_indication(HEADER, raw, FastFormat3Decoder()),
        indication.parse_indication(HEADER, raw, indication.GenericDecoder()),
    )


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=200), st.integers(0, 400), st.integers(0, 255))
def test_fast_path_on_corrupted_bytes_agrees_with_generic(junk: bytes, pos: int, byte: int) -> None:
    msg, _ = _occ_message(2, 2)
    raw = bytearray(kpm.encode_kpm(msg))
    raw[pos % len(raw)] = byte
    for data in (bytes(raw), junk):
        try:
            generic = indication.GenericDecoder().decode_message(data)
        except E2smDecodeError:
            with pytest.raises(E2smDecodeError):
                FastFormat3Decoder().decode_message(data)
            continue
        fast = FastFormat3Decoder().decode_message(data)
        assert [s.ue_id for s in fast] == [s.ue_id for s in generic]
        for f, g in zip(fast, generic, strict=True):
            assert f.metrics == g.metrics
            assert np.array_equal(f.values, g.values, equal_nan=True)


def test_no_value_and_not_satisfied_are_nan() -> None:
    rec = kpm.MeasRecord((1, None, kpm.NOT_SATISFIED, 2.5))
    msg = kpm.KpmIndicationMessage(
        kpm.IndicationFormat3(
            (kpm.UeReport(UeId.gnb(1, GUAMI), kpm.IndicationFormat1((rec,), None, None)),)
        )
    )
    cols = indication.parse_indication(HEADER, kpm.encode_kpm(msg), granularity_ms=10)
    row = cols.values[0, :, 0]
    assert row[0] == 1 and math.isnan(row[1]) and math.isnan(row[2]) and row[3] == 2.5
    assert cols.metrics == ["#0", "#1", "#2", "#3"]
    assert cols.granularity_ms == 10


def test_cell_level_format1() -> None:
    msg = kpm.KpmIndicationMessage(
        kpm.IndicationFormat1(
            (kpm.MeasRecord((5, 6)), kpm.MeasRecord((7, 8))),
            (kpm.MeasInfo("RRU.PrbAvailDl"), kpm.MeasInfo("OCC.ActiveUesDl")),
            1,
        )
    )
    cols = indication.parse_indication(HEADER, kpm.encode_kpm(msg))
    assert cols.ue_ids == [None]
    assert cols.values.tolist() == [[[5.0, 7.0], [6.0, 8.0]]]


def test_bad_indication_raises_decode_error() -> None:
    with pytest.raises(E2smDecodeError):
        indication.parse_indication(HEADER, b"\x40\x00\xff")
    with pytest.raises(E2smDecodeError):
        indication.parse_indication(b"\x00", kpm.encode_kpm(_occ_message()[0]))


def _same_indication(a: e2ap.RicIndication, b: e2ap.RicIndication) -> None:
    assert a == b
    assert a.wire == b.wire


@settings(max_examples=200, deadline=None)
@given(S.E2AP_MESSAGES[e2ap.RicIndication])
def test_fast_envelope_equals_generic(msg: e2ap.RicIndication) -> None:
    raw = e2ap.encode_e2ap(msg)
    _same_indication(decode_ric_indication(raw), e2ap.decode_e2ap(raw))  # type: ignore[arg-type]


@settings(max_examples=300, deadline=None)
@given(S.E2AP_MESSAGES[e2ap.RicIndication], st.integers(0, 10_000), st.integers(0, 255))
def test_fast_envelope_on_corrupted_bytes_agrees_with_generic(
    msg: e2ap.RicIndication, pos: int, byte: int
) -> None:
    raw = bytearray(e2ap.encode_e2ap(msg))
    raw[pos % len(raw)] = byte
    try:
        generic = e2ap.decode_e2ap(bytes(raw))
    except E2smDecodeError:
        with pytest.raises(E2smDecodeError):
            decode_ric_indication(bytes(raw))
        return
    if not isinstance(generic, e2ap.RicIndication):
        with pytest.raises(E2smDecodeError):
            decode_ric_indication(bytes(raw))
        return
    _same_indication(decode_ric_indication(bytes(raw)), generic)


def test_fast_envelope_on_the_benchmark_message() -> None:
    from octoric.e2sm.bench import build_indication

    pdu, header, message = build_indication()
    ind, cols = indication.parse_ric_indication(pdu)
    assert ind.header == header and ind.message == message
    assert cols.values.shape == (100, 8, 10)
    _same_indication(ind, e2ap.decode_e2ap(pdu))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (b"\x03\x80\xff\x05", b"\x03\x90\xff\x05"),  # REAL base 8: not CER/DER
        (b"\x03\x80\xff\x05", b"\x03\x84\xff\x05"),  # REAL scaling factor F = 1
        (b"\x03\x80\xff\x05", b"\x03\x81\xff\x05"),  # REAL without a mantissa octet
        (b"\x01\x00\x10", b"\x01\xa5\x10"),  # notSatisfied's NULL open type not 0x00
    ],
)
def test_fast_and_generic_refuse_the_same_malformed_records(old: bytes, new: bytes) -> None:
    rec = kpm.MeasRecord((1, 2.5, kpm.NOT_SATISFIED, 70000))
    msg = kpm.KpmIndicationMessage(
        kpm.IndicationFormat3(
            (kpm.UeReport(UeId.gnb(1, GUAMI), kpm.IndicationFormat1((rec,), None, 1)),)
        )
    )
    raw = kpm.encode_kpm(msg)
    assert raw.count(old) == 1
    bad = raw.replace(old, new)
    with pytest.raises(E2smDecodeError):
        indication.GenericDecoder().decode_message(bad)
    with pytest.raises(E2smDecodeError):
        FastFormat3Decoder().decode_message(bad)


@settings(max_examples=200, deadline=None)
@given(ts=st.binary(min_size=8, max_size=8))
def test_header_fast_path_equals_generic_decoder(ts: bytes) -> None:
    from octoric.e2sm.indication import collect_start_generic, collect_start_of

    hdr = kpm.encode_kpm(kpm.KpmIndicationHeader(ts))
    assert len(hdr) == 9 and hdr[0] == 0  # the layout the fast path reads
    assert collect_start_of(hdr) == collect_start_generic(hdr)


def test_header_with_optionals_goes_to_the_generic_decoder() -> None:
    from octoric.e2sm.indication import collect_start_of

    hdr = kpm.encode_kpm(kpm.KpmIndicationHeader(ntp_timestamp(1_763_812_345.5), sender_name="gnb"))
    assert len(hdr) != 9
    assert collect_start_of(hdr) == 1_763_812_345.5
    with pytest.raises(E2smDecodeError):
        collect_start_of(b"\x00" * 4)  # truncated: the generic decoder's error
