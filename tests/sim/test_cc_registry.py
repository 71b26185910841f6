"""The rate-control package: every scheme file registers itself, and the template a new
scheme starts from imports cleanly, builds, and registers nothing."""

from __future__ import annotations

import importlib

import pytest

from octoric.sim import cc
from octoric.sim.cc import SCHEMES, SchemeContext, build_scheme
from octoric.sim.receiver import FeedbackBatch

pytestmark = pytest.mark.unit


def test_each_scheme_file_registers_its_scheme() -> None:
    files = {"fixed": "fixed", "gcc": "gcc", "pbe": "pbe", "occ": "occ_fed"}
    assert set(files) <= set(SCHEMES)
    ctx = SchemeContext(rtt_ms=40.0, start_bps=1e6, min_bps=1e5, max_bps=1e7)
    for name, module in files.items():
        ctrl = build_scheme(name, ctx)
        assert type(ctrl).__module__ == f"octoric.sim.cc.{module}"
        assert ctrl.target_bps(0) > 0


def test_the_template_imports_builds_and_registers_nothing() -> None:
    before = dict(SCHEMES)
    tpl = importlib.import_module("octoric.sim.cc._template")
    assert before == SCHEMES
    ctrl = tpl.TemplateScheme(SchemeContext(rtt_ms=40.0, start_bps=2e6, min_bps=1e5, max_bps=1e7))
    assert isinstance(ctrl, cc.RateController) and ctrl.target_bps(0) == 2e6
    ctrl.on_feedback(0, FeedbackBatch([1, 2], [0, 1], [5, 6], [1200, 1200]))
    ctrl.on_feedback(1, FeedbackBatch([9], [2], [7], [1200]))  # 3..8 lost
    assert ctrl.target_bps(1) == 1e6
