"""Latency marks across processes: what a benchmark joins into a span."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from octoric.contracts import latency_trace as lt

pytestmark = pytest.mark.unit


def test_off_unless_the_variable_is_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(lt.ENV, raising=False)
    assert not lt.LatencyTrace("e2term_in").enabled


def test_marks_of_two_processes_join_into_spans(tmp_path: Path) -> None:
    start = lt.LatencyTrace("e2term_in", str(tmp_path))
    start.mark(b"pdu-1", 1_000_000)
    start.mark(b"pdu-2", 2_000_000)
    start.mark(b"twice", 3_000_000)
    start.mark(b"twice", 4_000_000)  # two identical PDUs: ambiguous, left out
    start.close()
    code = (
        "from octoric.contracts.latency_trace import LatencyTrace as T;"
        f"t = T('handover_out', {str(tmp_path)!r});"
        "t.mark(b'pdu-1', 1_500_000); t.mark(b'twice', 5_000_000); t.mark(b'other', 9)"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    begin = lt.read_marks(tmp_path, "e2term_in")
    end = lt.read_marks(tmp_path, "handover_out")
    assert begin[lt.key_of(b"pdu-1")] == [1_000_000]
    assert lt.spans_ms(begin, end) == [0.5]  # pdu-1 only: pdu-2 never left, "twice" ambiguous
    assert lt.key_of(b"pdu-1") != lt.key_of(b"pdu-2")
