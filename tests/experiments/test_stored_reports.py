"""The committed paper reports are what their stored results give (issue #40: behaviour
unchanged by the restructuring): each docs/eval-NAME.md is rebuilt from docs/eval-NAME.json by
``octoric eval report`` (claims judged again by today's rule) and must come out byte for byte.
A change to a report's code or to the verdict rule shows here, and the report is then
regenerated on purpose and committed with that change."""

from __future__ import annotations

from pathlib import Path

import pytest

from octoric.experiments import registry
from octoric.experiments.runner import rebuild

DOCS = Path(__file__).resolve().parents[2] / "docs"
STORED = sorted(p for p in DOCS.glob("eval-*.json") if p.with_suffix(".md").exists())


def test_there_are_stored_reports() -> None:
    assert len(STORED) >= 4, STORED
    assert {p.stem.removeprefix("eval-") for p in STORED} <= set(registry.EXPERIMENTS)


@pytest.mark.parametrize("stored", STORED, ids=lambda p: p.stem)
def test_a_stored_report_rebuilds_identically(stored: Path, tmp_path: Path) -> None:
    out = rebuild(stored, tmp_path / "report.md")
    assert out.read_text() == stored.with_suffix(".md").read_text()
