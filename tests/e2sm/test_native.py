"""The native KPM Format 3 decoder (e2sm/native, Rust) against the generic decoder: equal on
generated messages, on corrupted and junk bytes (the same error or the same value), on the
benchmark message; and it really decodes natively what the Python fast path decodes."""

from __future__ import annotations

import functools
import math
import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from testkit import strategies as S

from octoric.e2sm import e2ap, indication, kpm
from octoric.e2sm.common import Guami, UeId, ntp_timestamp
from octoric.e2sm.errors import E2smDecodeError
from octoric.e2sm.fastpath import FastFormat3Decoder
from octoric.e2sm.native import NativeFormat3Decoder, native_decoder

pytestmark = pytest.mark.unit
HEADER = kpm.encode_kpm(kpm.KpmIndicationHeader(ntp_timestamp(1_700_000_000.25)))
GUAMI = Guami(b"\x00\xf1\x10", 2, 1, 1)


@pytest.fixture(scope="module")
def native() -> NativeFormat3Decoder:
    d = native_decoder()
    if d is None:
        pytest.fail("libocto_e2sm.so is not built (make setup builds it)")
    return d


def _same(a: list[indication.UeSeries], b: list[indication.UeSeries]) -> None:
    assert [s.ue_id for s in a] == [s.ue_id for s in b]
    for x, y in zip(a, b, strict=True):
        assert x.metrics == y.metrics
        assert x.granularity_ms == y.granularity_ms
        assert x.values.shape == y.values.shape
        assert np.array_equal(x.values, y.values, equal_nan=True)
        # -0.0 and the sign of infinities too
        assert np.array_equal(np.signbit(x.values), np.signbit(y.values))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(S.kpm_messages)
def test_native_equals_generic(native: NativeFormat3Decoder, msg: kpm.KpmIndicationMessage) -> None:
    raw = kpm.encode_kpm(msg)
    _same(native.decode_message(raw), indication.GenericDecoder().decode_message(raw))


# name lists a UE after another may repeat exactly (the decoder then reads them by one
# comparison of bits) or nearly: one late character, one name fewer, an ID for a name
_NEAR_LISTS = (
    ("DRB.UEThpDl", "RRU.PrbUsedDl", "OCC.McsDl"),
    ("DRB.UEThpDl", "RRU.PrbUsedDl", "OCC.McsDm"),
    ("DRB.UEThpDl", "RRU.PrbUsedDl"),
    ("DRB.UEThpDl", "RRU.PrbUsedDl", 7),
    ("DRB.UEThpDl", "RRU.PrbUsedDl", "OCC.McsDl", "OCC.McsDl"),
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(range(len(_NEAR_LISTS))), st.booleans()),
                min_size=2, max_size=8))  # fmt: skip
def test_native_equals_generic_on_repeated_and_nearly_repeated_name_lists(
    native: NativeFormat3Decoder, ues: list[tuple[int, bool]]
) -> None:
    reports = []
    for u, (k, gp) in enumerate(ues):
        names = _NEAR_LISTS[k]
        rec = kpm.MeasRecord(tuple(range(u, u + len(names))))
        reports.append(kpm.UeReport(UeId.gnb(7 + u, GUAMI, u), kpm.IndicationFormat1(
            (rec,), tuple(kpm.MeasInfo(n) for n in names), 1 if gp else None)))  # fmt: skip
    raw = kpm.encode_kpm(kpm.KpmIndicationMessage(kpm.IndicationFormat3(tuple(reports))))
    before = native.fallbacks
    _same(native.decode_message(raw), indication.GenericDecoder().decode_message(raw))
    assert native.fallbacks == before  # decoded natively, not handed over


def _mixed_message(n_ue: int) -> kpm.KpmIndicationMessage:
    """``n_ue`` UEs, two records each of an integer, a real, notSatisfied, noValue, a large
    integer and a small negative real."""
    rec = kpm.MeasRecord((1, 2.5, kpm.NOT_SATISFIED, None, 70000, -3.75e-5))
    return kpm.KpmIndicationMessage(
        kpm.IndicationFormat3(tuple(
            kpm.UeReport(UeId.gnb(7 + u, GUAMI, u), kpm.IndicationFormat1(
                (rec, rec), tuple(kpm.MeasInfo(f"M.{k}") for k in range(6)), 1))
            for u in range(n_ue)
        ))
    )  # fmt: skip


@pytest.mark.parametrize("special", [0x40, 0x41, 0x42, 0x43])
def test_special_reals_agree_across_the_three_decoders(
    native: NativeFormat3Decoder, special: int
) -> None:
    """X.690 special REAL values (8.5.9): +inf, -inf, NaN, minus zero. Found by the corrupted
    bytes test below (the generic path read NaN as -inf, pycrate reads minus zero as +0):
    the generic decoder now reads NaN as NaN, and the fast paths give +0 for minus zero as it
    does, so all three agree."""
    raw = bytearray(kpm.encode_kpm(_mixed_message(1)))
    raw[67] = special  # the first content octet of the second record's last REAL
    data = bytes(raw)
    want = {0x40: math.inf, 0x41: -math.inf, 0x42: math.nan, 0x43: 0.0}[special]
    generic = indication.GenericDecoder().decode_message(data)
    for got in (native.decode_message(data), FastFormat3Decoder().decode_message(data)):
        _same(got, generic)
    v = float(generic[0].values[5, 1])
    if math.isnan(want):
        assert math.isnan(v)
    else:
        assert v == want and math.copysign(1, v) == math.copysign(1, want)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300), st.integers(0, 4000), st.integers(0, 255), st.integers(1, 6))
def test_native_on_corrupted_bytes_agrees_with_generic(
    native: NativeFormat3Decoder, junk: bytes, pos: int, byte: int, n_ue: int
) -> None:
    raw = bytearray(kpm.encode_kpm(_mixed_message(n_ue)))
    raw[pos % len(raw)] = byte
    for data in (bytes(raw), junk):
        try:
            generic = indication.GenericDecoder().decode_message(data)
        except E2smDecodeError:
            with pytest.raises(E2smDecodeError):
                native.decode_message(data)
            continue
        _same(native.decode_message(data), generic)


@pytest.mark.parametrize(
    "value",
    [0.0, -0.0, 1.0, -2.5, 1e-300, 3.9e307, 1.7e308, 5e-324, 2.2250738585072014e-308,
     123456789.125, 2.0**60 + 1.0],
)  # fmt: skip
def test_reals_exactly_as_generic(native: NativeFormat3Decoder, value: float) -> None:
    rec = kpm.MeasRecord((value, 1))
    msg = kpm.KpmIndicationMessage(
        kpm.IndicationFormat3(
            (kpm.UeReport(UeId.gnb(1, GUAMI), kpm.IndicationFormat1((rec,), None, 1)),)
        )
    )
    raw = kpm.encode_kpm(msg)
    got = native.decode_message(raw)
    _same(got, indication.GenericDecoder().decode_message(raw))
    if value != 0.0:  # (octoric's encoder writes -0.0 as plain zero; both decoders agree)
        assert struct.pack(">d", got[0].values[0, 0]) == struct.pack(">d", value)


def test_the_benchmark_message_is_decoded_natively(native: NativeFormat3Decoder) -> None:
    from octoric.e2sm.bench import build_indication

    _, _, message = build_indication()
    before = native.native
    got = native.decode_message(message)
    assert native.native == before + 1
    _same(got, FastFormat3Decoder().decode_message(message))
    assert len(got) == 100 and got[0].values.shape == (8, 10)


def test_what_it_does_not_handle_goes_to_the_python_path(native: NativeFormat3Decoder) -> None:
    cell = kpm.KpmIndicationMessage(
        kpm.IndicationFormat1((kpm.MeasRecord((5, 6)),), (kpm.MeasInfo("A"), kpm.MeasInfo("B")), 1)
    )
    raw = kpm.encode_kpm(cell)
    before = native.fallbacks
    assert native.decode_message(raw)[0].ue_id is None
    assert native.fallbacks == before + 1
    with pytest.raises(E2smDecodeError):
        native.decode_message(b"")


def _same_columns(a: indication.KpmColumns, b: indication.KpmColumns) -> None:
    assert a.ue_ids == b.ue_ids
    assert a.metrics == b.metrics
    assert a.granularity_ms == b.granularity_ms
    assert a.values.shape == b.values.shape
    assert np.array_equal(a.values, b.values, equal_nan=True)
    assert np.array_equal(a.timestamps, b.timestamps)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(S.kpm_messages, st.sampled_from([None, 10]))
def test_native_columns_equal_generic(
    native: NativeFormat3Decoder, msg: kpm.KpmIndicationMessage, gp: int | None
) -> None:
    raw = kpm.encode_kpm(msg)
    _same_columns(
        indication.parse_indication(HEADER, raw, native, gp),
        indication.parse_indication(HEADER, raw, indication.GenericDecoder(), gp),
    )


def test_the_benchmark_indication_takes_the_zero_copy_path(native: NativeFormat3Decoder) -> None:
    from octoric.e2sm.bench import build_indication

    pdu, _, _ = build_indication()
    before, fell = native.native, native.fallbacks
    _, cols = indication.parse_ric_indication(pdu, native)
    assert native.native == before + 1 and native.fallbacks == fell
    _, ref = indication.parse_ric_indication(pdu, FastFormat3Decoder())
    _same_columns(cols, ref)


@functools.cache
def _bench_pdu() -> bytes:
    from octoric.e2sm.bench import build_indication

    return build_indication()[0]


def _python_path(pdu: bytes) -> tuple[object, indication.KpmColumns] | Exception:
    """The envelope reader + parse_indication (the Python fast path), or what it raised."""
    from octoric.e2sm.envelope import decode_ric_indication

    try:
        ind = decode_ric_indication(pdu)
        return ind, indication.parse_indication(ind.header, ind.message, FastFormat3Decoder())
    except Exception as e:  # compared, not handled
        return e


def _check_whole_pdu(native: NativeFormat3Decoder, pdu: bytes) -> bool:
    """The native whole-PDU decode either declines or equals the Python path; True if it
    decoded."""
    got = native.decode_ric_indication(pdu)
    if got is None:
        return False
    ref = _python_path(pdu)
    assert not isinstance(ref, Exception), f"native accepted what Python refused: {ref!r}"
    ind, cols = ref
    nind, ncols = got
    assert isinstance(ind, e2ap.RicIndication)
    rid = ind.request_id
    assert (nind.requestor_id, nind.instance_id) == (rid.requestor_id, rid.instance_id)
    assert nind.ran_function_id == ind.ran_function_id
    assert nind.action_id == ind.action_id
    assert nind.sn == ind.sn
    assert nind.insert == (ind.indication_type == "insert")
    assert nind.collect_start == cols.collect_start
    _same_columns(ncols, cols)
    return True


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    S.kpm_messages,
    st.one_of(st.none(), st.integers(0, 65535)),
    st.booleans(),
    st.integers(0, 65535),
    st.integers(0, 4095),
    st.binary(min_size=8, max_size=8),
)
def test_whole_pdu_equals_the_python_path(
    native: NativeFormat3Decoder, msg: kpm.KpmIndicationMessage, sn: int | None, insert: bool,
    inst: int, rfid: int, ts: bytes,
) -> None:  # fmt: skip
    from octoric.e2sm import e2ap
    from octoric.e2sm.e2ap_ies import RicRequestId

    hdr = kpm.encode_kpm(kpm.KpmIndicationHeader(ts))
    pdu = e2ap.encode_e2ap(e2ap.RicIndication(
        RicRequestId(7, inst), rfid, 3, hdr, kpm.encode_kpm(msg), "insert" if insert else "report",
        sn,
    ))  # fmt: skip
    _check_whole_pdu(native, pdu)


def test_whole_pdu_reads_the_benchmark_indication_and_declines_the_unusual(
    native: NativeFormat3Decoder,
) -> None:
    from octoric.e2sm import e2ap
    from octoric.e2sm.bench import build_indication
    from octoric.e2sm.e2ap_ies import RicRequestId

    pdu, _, _ = build_indication()
    assert len(pdu) > 16384  # fragmented length determinants on the way
    assert _check_whole_pdu(native, pdu)
    ind = e2ap.decode_e2ap(pdu)
    assert isinstance(ind, e2ap.RicIndication)
    # a call process ID, or a header with its optional strings: the Python path's
    for other in (
        e2ap.RicIndication(ind.request_id, 2, 1, ind.header, ind.message, sn=1,
                           call_process_id=b"\x01"),
        e2ap.RicIndication(ind.request_id, 2, 1, kpm.encode_kpm(kpm.KpmIndicationHeader(
            ntp_timestamp(1.5), sender_name="gnb")), ind.message, sn=1),
    ):  # fmt: skip
        raw = e2ap.encode_e2ap(other)
        assert native.decode_ric_indication(raw) is None
        assert not isinstance(_python_path(raw), Exception)
    # a RIC indication of another RAN function and message: declined or equal
    rc_like = e2ap.encode_e2ap(e2ap.RicIndication(RicRequestId(1, 1), 3, 1, b"\x01", b"\x02"))
    assert not _check_whole_pdu(native, rc_like)


@settings(max_examples=400, deadline=None)
@given(st.integers(0, 60000), st.integers(0, 255), st.integers(0, 3))
def test_whole_pdu_on_corrupted_bytes(native: NativeFormat3Decoder, pos: int, byte: int,
                                      cut: int) -> None:  # fmt: skip
    pdu = bytearray(_bench_pdu())
    pdu[pos % len(pdu)] = byte
    if cut:
        pdu = pdu[: len(pdu) - cut * 7]
    _check_whole_pdu(native, bytes(pdu))  # never raises; equal whenever it decodes
