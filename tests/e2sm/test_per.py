"""The one aligned-PER bit reader / writer and length determinant (e2sm/per.py)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from octoric.e2sm import per

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    "n, head",
    [
        (0, b"\x00"),
        (127, b"\x7f"),
        (128, b"\x80\x80"),
        (16383, b"\xbf\xff"),
        (16384, b"\xc1"),
        (65536, b"\xc4"),
        (70000, b"\xc4"),
    ],
)
def test_length_determinant_of_every_size_round_trips(n: int, head: bytes) -> None:
    content = bytes((i * 13) & 0xFF for i in range(n))
    wire = per.length_prefixed(content)
    assert wire.startswith(head)
    assert per.read_length_prefixed(wire + b"tail", 0) == (content, len(wire))
    r = per.BitReader(b"\x00" + wire)
    r.bits(3)  # an open type starts aligned: the reader pads first
    assert r.length_prefixed() == content and r.at_end()


def test_writer_refuses_fragments_and_reader_says_where() -> None:
    with pytest.raises(per.Unsupported):
        per.write_length(16384)
    with pytest.raises(per.Unsupported):
        per.BitWriter().length(16384)
    with pytest.raises(per.PerError, match="fragment multiplier 7 at byte 1"):
        per.read_length_prefixed(b"\x00\xc7", 1)
    with pytest.raises(per.PerError, match="runs past the end"):
        per.read_length_prefixed(b"\x05\x00", 0)
    with pytest.raises(per.PerError, match="fragmented length"):
        per.BitReader(b"\xc1").length()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 24), st.integers(0, (1 << 24) - 1)), max_size=40))
def test_bits_written_are_the_bits_read(fields: list[tuple[int, int]]) -> None:
    w = per.BitWriter()
    for n, v in fields:
        w.bits(v & ((1 << n) - 1), n)
    w.length(300)
    w.octets(b"ab")
    r = per.BitReader(w.done())
    assert [r.bits(n) for n, _ in fields] == [v & ((1 << n) - 1) for n, v in fields]
    assert r.length() == 300 and r.octets(2) == b"ab" and r.at_end()
    with pytest.raises(per.PerError):
        r.bits(1)
