"""Command-line changes to a scenario's RAN layout: cell count, cells per gNB, UE count,
mobility profile (``octoric sim run --cells/--cells-per-gnb/--ues/--mobility``, and the
``sim.cells`` / ``sim.ues`` settings of ``octoric run``)."""

from __future__ import annotations

import copy

from octoric.sim.errors import SimError
from octoric.sim.mobility import PROFILES
from octoric.sim.scenario import FlowSpec, MobilitySpec, Scenario, UeSpec


def apply_layout(
    sc: Scenario,
    cells: int | None = None,
    cells_per_gnb: int | None = None,
    ues: int | None = None,
    mobility: str | None = None,
) -> Scenario:
    """Change ``sc`` in place (and return it).

    - ``cells``: that many cells; all on one gNB unless ``cells_per_gnb`` says otherwise
      (one E2 node per gNB); UE *i* starts in cell *i* mod ``cells``.
    - ``ues``: that many UEs, the scenario's UE kinds repeated in order.
    - ``mobility``: every UE's mobility profile (static, walking, driving, hsr).
    """
    if cells is not None and cells < 1:
        raise SimError("--cells must be >= 1")
    if cells_per_gnb is not None and cells_per_gnb < 1:
        raise SimError("--cells-per-gnb must be >= 1")
    if ues is not None and ues < 1:
        raise SimError("--ues must be >= 1")
    if mobility is not None and mobility not in PROFILES:
        raise SimError(f"unknown mobility profile {mobility!r} (one of {', '.join(PROFILES)})")
    if cells is not None:
        sc.ran.cells = cells
        sc.ran.cells_per_gnb = cells if cells_per_gnb is None else cells_per_gnb
    elif cells_per_gnb is not None:
        sc.ran.cells_per_gnb = cells_per_gnb
    if ues is not None or cells is not None:
        kinds = [k for k in sc.ues for _ in range(k.count)]
        n = len(kinds) if ues is None else ues
        out: list[UeSpec] = []
        for i in range(n):
            u = copy.deepcopy(kinds[i % len(kinds)])
            u.count = 1
            if cells is not None:
                u.cell = i % cells
            out.append(u)
        sc.ues = out
    for u in sc.ues:
        if u.cell >= sc.ran.cells:
            raise SimError(f"a UE starts in cell {u.cell}, but there are {sc.ran.cells} cells")
        if mobility is not None:
            u.mobility = MobilitySpec(mobility)
    return sc


def apply_real_ues(sc: Scenario, n: int) -> Scenario:
    """The first ``n`` UEs carry a real application's packets (``traffic: real``, the live
    real-UE path) instead of their simulated flows; change ``sc`` in place."""
    total = sum(u.count for u in sc.ues)
    if not 1 <= n <= total:
        raise SimError(f"--real-ues {n}: between 1 and the scenario's {total} UEs")
    out: list[UeSpec] = []
    left = n
    for u in sc.ues:
        k = min(u.count, left)
        if k:
            real = copy.deepcopy(u)
            real.count = k
            # scheme occ: the OCC xApp's feedback for the UE is relayed to its application
            real.flows = [FlowSpec(traffic="real", scheme=u.flows[0].scheme if u.flows else "gcc")]
            out.append(real)
            left -= k
        if u.count > k:
            rest = copy.deepcopy(u)
            rest.count = u.count - k
            out.append(rest)
    sc.ues = out
    return sc
