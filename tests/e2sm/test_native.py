"""The native KPM Format 3 decoder (e2sm/native, Rust) against the generic decoder: equal on
generated messages, on corrupted and junk bytes (the same error or the same value), on the
benchmark message; and it really decodes natively what the Python fast path decodes."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from testkit import strategies as S

from octoric.e2sm import indication, kpm
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


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300), st.integers(0, 4000), st.integers(0, 255), st.integers(1, 6))
def test_native_on_corrupted_bytes_agrees_with_generic(
    native: NativeFormat3Decoder, junk: bytes, pos: int, byte: int, n_ue: int
) -> None:
    rec = kpm.MeasRecord((1, 2.5, kpm.NOT_SATISFIED, None, 70000, -3.75e-5))
    msg = kpm.KpmIndicationMessage(
        kpm.IndicationFormat3(tuple(
            kpm.UeReport(UeId.gnb(7 + u, GUAMI, u), kpm.IndicationFormat1(
                (rec, rec), tuple(kpm.MeasInfo(f"M.{k}") for k in range(6)), 1))
            for u in range(n_ue)
        ))
    )  # fmt: skip
    raw = bytearray(kpm.encode_kpm(msg))
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
