"""The Octopus header codec against the shared test vectors."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from octoric.contracts import octopus_header as oh

pytestmark = pytest.mark.unit

VECTORS = Path(oh.__file__).with_name("octopus_header_vectors.json")
DOC = Path(__file__).resolve().parents[2] / "docs" / "octopus-header.md"


def _vectors() -> dict:  # type: ignore[type-arg]
    return json.loads(VECTORS.read_text())  # type: ignore[no-any-return]


def test_valid_vectors_both_ways() -> None:
    for v in _vectors()["valid"]:
        raw = bytes.fromhex(v["hex"])
        h = oh.parse(raw)
        assert h == oh.OctopusHeader(**v["fields"]), v["name"]
        assert h.encode() == raw
        assert oh.parse(raw + b"payload") == h


def test_invalid_vectors_rejected_and_counted() -> None:
    c = oh.HeaderCounters()
    vs = _vectors()["invalid"]
    for v in vs:
        with pytest.raises(oh.OctopusHeaderError, match=v["error_contains"]):
            oh.parse(bytes.fromhex(v["hex"]), c)
    assert c.malformed == len(vs) and c.parsed == 0


def test_doc_carries_the_same_vectors() -> None:
    doc = DOC.read_text()
    data = _vectors()
    for v in data["valid"] + data["invalid"]:
        assert f"`{v['hex']}`" in doc, v["name"]


@given(
    st.integers(0, 0xFFFF), st.integers(0, 0xFFFFFFFF), st.booleans(), st.booleans(),
    st.integers(0, 7), st.booleans(), st.integers(0, 7), st.integers(0, 0xFFFFFFFF),
)  # fmt: skip
def test_roundtrip(
    sid: int, mid: int, f: bool, last: bool, p: int, d: bool, t: int, b: int
) -> None:
    h = oh.OctopusHeader(sid, mid, f, last, p, d, t, b)
    assert oh.parse(h.encode()) == h


@given(st.binary(max_size=40))
def test_random_bytes_never_crash(data: bytes) -> None:
    with contextlib.suppress(oh.OctopusHeaderError):
        oh.parse(data)


def test_serial_compare() -> None:
    assert oh.serial_lt(1, 2) and not oh.serial_lt(2, 1) and not oh.serial_lt(5, 5)
    assert oh.serial_lt(0xFFFFFFFF, 0) and not oh.serial_lt(0, 0xFFFFFFFF)
