"""The components of ``octoric testbed live``, in start order: Redis (the runner's), the
dashboard, the RIC, the gNB, the xApps, the checks."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from octoric import runner
from octoric.config import RunConfig
from octoric.contracts import auth
from octoric.deploy.dashboard import DashboardComponent
from octoric.deploy.testbed.gnb import GnbComponent, GnbOptions
from octoric.deploy.testbed.live import LiveChecks, plot
from octoric.deploy.xapps_component import components as xapp_components
from octoric.ric.launcher import RicComponent
from octoric.supervisor import Component, RunContext


@dataclass(frozen=True)
class TestbedOptions:
    build_dir: Path
    ues: int = 4
    time_scaling: float = 1.0
    cells: int = 2  # as srsran_agent/configs/gnb_rfless.yml; up to gnb.MAX_CELLS
    inject: bool = True  # OCC-fed video into N3 for the video UE (live.LiveChecks, injector)
    stock_kpm: bool = False  # the DU offers no OCC.* measurements: OCC's degraded mode


def build_components(ctx: RunContext, opts: TestbedOptions) -> list[Component]:
    extra = {"e2": {"e2sm_kpm_occ_enabled": False}} if opts.stock_kpm else {}
    gnb = GnbComponent(
        GnbOptions(opts.build_dir, ues_per_cell=opts.ues // opts.cells,
                   time_scaling=opts.time_scaling, cells=opts.cells, extra=extra)
    )  # fmt: skip
    xapps = xapp_components(ctx)
    checks = LiveChecks(gnb, xapps, inject=opts.inject)
    parts: list[Component] = [RicComponent(), gnb, *xapps, checks]
    if not ctx.config.dashboard.enabled:
        return parts
    return [DashboardComponent(parts, {x.spec.name: x.status_url for x in xapps}), *parts]


def _after(run_dir: Path) -> Path | None:
    from octoric.deploy import report

    plot(run_dir)
    return report.write(run_dir)


def run(cfg: RunConfig, opts: TestbedOptions, live: bool = True) -> int:
    os.environ.setdefault(auth.TOKEN_ENV, auth.new_token())
    return runner.run(cfg, lambda ctx: build_components(ctx, opts), live=live, after=_after)
