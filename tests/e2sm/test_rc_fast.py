"""The fast E2SM-RC Format 2 decoder against the generic one."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from testkit import strategies as S

from octoric.contracts.rc import PARAM_HO_PHASE, PARAM_NR_CELL
from octoric.e2sm import rc
from octoric.e2sm.common import Guami, UeId
from octoric.e2sm.errors import E2smDecodeError
from octoric.e2sm.rc_fast import RcIndicationDecoder

pytestmark = pytest.mark.unit
GUAMI = Guami(b"\x00\xf1\x10", 1, 1, 0)

format2_messages = st.builds(
    rc.RcIndicationMessage,
    ue_params=S.lists(st.tuples(S.ue_ids, S.lists(S.ran_params, 1, 4).map(tuple)), 1, 3).map(tuple),
)


def _generic(data: bytes) -> rc.RcIndicationMessage:
    return rc.decode_rc(rc.RcIndicationMessage, data)


def test_a_handover_report_takes_the_fast_path() -> None:
    msg = rc.RcIndicationMessage(
        ue_params=(
            (
                UeId.gnb(5, GUAMI, 7),
                (
                    rc.RanParam(PARAM_HO_PHASE, rc.Element(2)),
                    rc.RanParam(PARAM_NR_CELL, rc.Element(rc.Bits(0x123456789, 36))),
                ),
            ),
        )
    )
    dec = RcIndicationDecoder()
    assert dec.decode(rc.encode_rc(msg)) == msg
    assert (dec.fast, dec.fallbacks) == (1, 0)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(format2_messages)
def test_fast_equals_generic(msg: rc.RcIndicationMessage) -> None:
    raw = rc.encode_rc(msg)
    assert RcIndicationDecoder().decode(raw) == _generic(raw)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(format2_messages, st.integers(0, 10_000), st.integers(0, 255), st.binary(max_size=64))
def test_corrupted_bytes_get_the_generic_answer(
    msg: rc.RcIndicationMessage, pos: int, byte: int, junk: bytes
) -> None:
    raw = bytearray(rc.encode_rc(msg))
    raw[pos % len(raw)] = byte
    for data in (bytes(raw), bytes(raw[: pos % len(raw) + 1]), junk):
        try:
            expected = _generic(data)
        except E2smDecodeError:
            with pytest.raises(E2smDecodeError):
                RcIndicationDecoder().decode(data)
            continue
        assert RcIndicationDecoder().decode(data) == expected


@given(S.rc_indication_messages)
@settings(max_examples=100, deadline=None)
def test_other_formats_fall_back(msg: rc.RcIndicationMessage) -> None:
    raw = rc.encode_rc(msg)
    assert RcIndicationDecoder().decode(raw) == _generic(raw)
