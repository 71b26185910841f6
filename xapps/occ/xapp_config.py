"""The OCC xApp's ``controls`` (descriptor section), validated; ``engine`` holds
``OccConfig`` fields."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from octoric.e2sm.kpm import OCC_MEASUREMENTS
from octoric.xapps.base.errors import XappConfigError
from octoric.xapps.occ.config import OccConfig
from octoric.xapps.occ.errors import OccConfigError
from octoric.xapps.occ.metrics import REQUIRED


@dataclass(frozen=True)
class OccXappConfig:
    reporting_period_ms: int = 10  # KPM event trigger: one indication per period
    granularity_ms: int = 1  # KPM granularity period; the engine needs 1
    report_style: int = 4  # KPM report style (4: every UE of the node)
    # KPM measurements; OCC.PrbTotalDl is added for nodes whose RAN function definition lists it
    measurements: tuple[str, ...] = OCC_MEASUREMENTS
    nodes: tuple[str, ...] = ()  # only these meids; empty: every connected KPM node
    discovery_period_s: float = 1.0
    subscription_timeout_s: float = 10.0  # no outcome by then: ask again
    feedback_min_change: float = 0.02
    feedback_max_interval_ms: int = 50
    state_period_ms: int = 100  # UE records -> SDL
    checkpoint_period_ms: int = 1000  # engine state -> SDL
    publish_reports: bool = True  # OCTORIC_ABW_REPORT (30500)
    # a node without OCC's vendor measurements but with the standard ones (a stock gNB):
    # subscribe to those and estimate the rest (xapps/occ/degraded.py); False: leave it alone
    degraded_mode: bool = True
    # an indication whose granules end further ahead of this xApp's clock is dropped (counted
    # clock_ahead): one forged far-future time stamp must not make every real one "too old"
    max_clock_ahead_ms: int = 5000
    # a node's report that starts at most this much before the end of its previous one continues
    # it (counted time_overlap_shifted): srsRAN stamps a report's start on the wall clock in
    # whole ms, so back-to-back 10 ms reports overlap by 1 ms in ~3 % of cases (live gNB)
    max_time_overlap_ms: int = 2
    engine: dict[str, Any] = field(default_factory=dict)  # OccConfig fields

    def __post_init__(self) -> None:
        if not 1 <= self.reporting_period_ms <= 10_000:
            raise XappConfigError("controls.reporting_period_ms", "must be 1..10000")
        if not 0 <= self.max_time_overlap_ms <= 1000:
            raise XappConfigError("controls.max_time_overlap_ms", "must be 0..1000")
        if self.granularity_ms != 1:
            raise XappConfigError(
                "controls.granularity_ms", "the OCC engine works on 1 ms granules; must be 1"
            )
        if self.reporting_period_ms % self.granularity_ms:
            raise XappConfigError(
                "controls.reporting_period_ms", "must be a multiple of granularity"
            )
        if self.report_style != 4:
            raise XappConfigError("controls.report_style", "only style 4 (all UEs) is supported")
        missing = [m for m in REQUIRED if m not in self.measurements]
        if missing:
            raise XappConfigError("controls.measurements", f"the engine needs {missing}")
        if not 0.0 <= self.feedback_min_change < 1.0:
            raise XappConfigError("controls.feedback_min_change", "must be in [0, 1)")
        for name in ("feedback_max_interval_ms", "state_period_ms", "checkpoint_period_ms"):
            if not 1 <= getattr(self, name) <= 600_000:
                raise XappConfigError(f"controls.{name}", "must be 1..600000")
        if not 0.05 <= self.discovery_period_s <= 3600 or self.subscription_timeout_s <= 0:
            raise XappConfigError("controls.discovery_period_s", "must be 0.05..3600 s")
        self.occ_config()  # validate the engine section now

    def occ_config(self) -> OccConfig:
        try:
            return OccConfig(**self.engine)
        except TypeError as e:
            raise XappConfigError("controls.engine", f"bad engine parameters: {e}") from None
        except OccConfigError as e:
            raise XappConfigError(f"controls.engine.{e.field}", str(e)) from None
