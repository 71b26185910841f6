"""``octoric run``: the embedded deployment on one machine, composed.

Redis (``octoric.runner``), the live web dashboard (``deploy.dashboard``), then the RIC, a
subscriber to OCC's 30500 reports (``deploy.abw_listener``), the live simulated gNBs, the
enabled xApps and the A1 policies of the config (``deploy.a1_policies``), in that start
order. The xApps' ports are chosen
first so the simulator registers its OCC-fed flows with the OCC xApp of this run, wherever it
listens.
"""

from __future__ import annotations

import os

from octoric import runner
from octoric.config import RunConfig
from octoric.contracts import auth
from octoric.deploy.a1_policies import A1PoliciesComponent
from octoric.deploy.abw_listener import AbwListenerComponent
from octoric.deploy.dashboard import DashboardComponent
from octoric.deploy.sim_component import SimComponent
from octoric.deploy.xapps_component import components as xapp_components
from octoric.ric.launcher import RicComponent
from octoric.supervisor import Component, RunContext


def build_components(ctx: RunContext) -> list[Component]:
    xapps = xapp_components(ctx)
    occ = next((x for x in xapps if x.spec.name == "occ"), None)
    occ_url = None if occ is None else f"http://127.0.0.1:{occ.http_port}/occ/v1/flows"
    parts: list[Component] = [RicComponent()]
    if occ is not None:
        # a reader of OCC's 30500 reports, routed before OCC publishes; before the simulator,
        # whose clock starts with it, so its registration costs the run no simulated seconds
        parts.append(AbwListenerComponent())
    parts += [SimComponent(ctx, occ_url), *xapps]
    names = [x.spec.name for x in xapps]
    if ctx.config.a1_policies:  # after the xApps: the types they serve exist by then
        parts.append(A1PoliciesComponent(ctx.config.a1_policies, names))
    if not ctx.config.dashboard.enabled:
        return parts
    # first, so its address is printed before the rest starts
    board = DashboardComponent(parts, {x.spec.name: x.status_url for x in xapps})
    return [board, *parts]


def run(cfg: RunConfig, live: bool = True) -> int:
    # one API token for the run (contracts.auth): the RIC writes it into the run folder, and
    # every child (simulator, xApps) inherits it to present or to check
    os.environ.setdefault(auth.TOKEN_ENV, auth.new_token())
    from octoric.deploy import report

    return runner.run(cfg, build_components, live=live, after=report.write)
