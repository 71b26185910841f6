"""Fuzzing every decoder: only E2smDecodeError may escape, and no input takes long.

The default suite runs a short smoke pass; the long run (1M inputs per decoder) is
``python -m octoric.e2sm.fuzz --inputs-per-decoder 1000000`` (see e2sm/README.md) and, shorter,
the ``slow`` test below.
"""

from __future__ import annotations

import contextlib
import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from octoric.e2sm import codec, e2ap, fuzz
from octoric.e2sm.errors import E2smDecodeError


def _check(reports: list[fuzz.DecoderReport]) -> None:
    assert reports
    for r in reports:
        assert r.findings == [], (r.name, r.findings[:3])
        assert r.inputs > 0


@pytest.mark.unit
def test_fuzz_smoke_every_decoder() -> None:
    out = io.StringIO()
    reports = fuzz.run(300, seed=3, out=out)
    assert {r.name for r in reports} == set(fuzz.decoders())
    _check(reports)


@pytest.mark.unit
@settings(max_examples=300, deadline=None)
@given(st.sampled_from(codec.TOP_LEVEL_TYPES), st.binary(max_size=300))
def test_random_bytes_raise_only_decode_errors(type_name: str, data: bytes) -> None:
    try:
        codec.decode(type_name, data)
    except E2smDecodeError as e:
        assert e.type_name == type_name and e.reason


@pytest.mark.unit
@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300))
def test_random_bytes_e2ap_dataclasses(data: bytes) -> None:
    with contextlib.suppress(E2smDecodeError):
        e2ap.decode_e2ap(data)


@pytest.mark.slow
def test_fuzz_long() -> None:
    reports = fuzz.run(20_000, seed=11, out=io.StringIO())
    _check(reports)


@pytest.mark.unit
@pytest.mark.parametrize(
    "header",
    [  # found by the fuzzer once parse_indication was among its decoders (issue #40): an
        # extension alternative of indicationHeader-formats leaked a TypeError
        "5fe410ec4c5f91cfcca1d97add881cd035b3b0",
        "42f9229461ce0a5743101bd9c677aa4b236b1a862312f3f2cca7e24229892589afa93e0dfc",
    ],
)
def test_an_unknown_header_format_is_a_decode_error(header: str) -> None:
    from octoric.e2sm.indication import parse_indication

    message = fuzz.seed_corpus()["E2SM-KPM-IndicationMessage"][0]
    with pytest.raises(E2smDecodeError):
        parse_indication(bytes.fromhex(header), message)
