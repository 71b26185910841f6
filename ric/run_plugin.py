"""How the embedded RIC plugs into ``octoric run``: one supervisor component, four processes."""

from __future__ import annotations

from octoric.ric.launcher import RicComponent
from octoric.supervisor import Component, RunContext


def components(ctx: RunContext) -> list[Component]:
    return [RicComponent()]
