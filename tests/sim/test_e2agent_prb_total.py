"""OCC.PrbTotalDl (the serving carrier's DL PRBs) at the simulated gNB's E2 agent: listed in
the KPM RAN function definition of its E2 setup, reported per UE and granule in style 4
(NaN / noValue where the UE is not served), averaged over multi-slot granules, and summed
over the action's cells in style 1."""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
import pytest
from testkit.sim_agent import drain, offline_agent

from octoric.e2sm import e2ap, indication, kpm
from octoric.e2sm.common import Cgi
from octoric.e2sm.e2ap_ies import RicActionToBeSetup, RicRequestId, RicSubscriptionDetails
from octoric.sim.e2agent import MEASUREMENTS, E2Agent
from octoric.sim.engine import Engine
from octoric.sim.overrides import apply_layout
from octoric.sim.scenario import load

pytestmark = pytest.mark.unit
PRB_TOTAL = "OCC.PrbTotalDl"
N_PRB = 106


def _agent(cells: int = 2, ues: int = 4, n_prb: int = N_PRB) -> tuple[Engine, E2Agent]:
    sc = load("multi-ue")
    apply_layout(sc, cells=cells, ues=ues)
    sc.ran.n_prb = n_prb
    sc.duration_s = 2
    return offline_agent(sc, 2)


def _subscribe(agent: E2Agent, action: kpm.KpmActionDefinition, period_ms: int = 10) -> Any:
    req = e2ap.RicSubscriptionRequest(
        RicRequestId(10, 1),
        kpm.RAN_FUNCTION_ID,
        RicSubscriptionDetails(
            kpm.encode_kpm(kpm.KpmEventTrigger(period_ms)),
            (RicActionToBeSetup(1, "report", kpm.encode_kpm(action)),),
        ),
    )
    asyncio.run(agent._handle(req))
    (resp,) = drain(agent)
    assert isinstance(resp, e2ap.RicSubscriptionResponse) and resp.admitted == [1], resp
    return resp


def _indications(agent: E2Agent) -> list[e2ap.RicIndication]:
    return [m for m in drain(agent) if isinstance(m, e2ap.RicIndication)]


def test_setup_announces_prb_total() -> None:
    assert kpm.OCC_OPTIONAL_MEASUREMENTS == (PRB_TOTAL,)
    assert (*kpm.OCC_MEASUREMENTS, PRB_TOTAL) == MEASUREMENTS
    _, agent = _agent()
    # the E2 setup request as the RIC decodes it
    setup = e2ap.decode_e2ap(e2ap.encode_e2ap(agent._setup_request()))
    assert isinstance(setup, e2ap.E2SetupRequest)
    (f,) = [f for f in setup.ran_functions if f.ran_function_id == kpm.RAN_FUNCTION_ID]
    d = kpm.decode_kpm(kpm.KpmRanFunctionDefinition, f.definition)
    assert d.report_styles is not None and [s.style for s in d.report_styles] == [1, 2, 3, 4, 5]
    for s in d.report_styles:
        names = [n for n, _ in s.measurements]
        assert names == [*kpm.OCC_MEASUREMENTS, PRB_TOTAL]


def test_style4_reports_the_carrier_prbs_in_every_granule() -> None:
    eng, agent = _agent()
    names = (*kpm.OCC_MEASUREMENTS, PRB_TOTAL)
    _subscribe(agent, kpm.action_definition_style4(names, granularity_ms=1))
    eng.run_until(1000)
    inds = _indications(agent)
    assert len(inds) >= 95  # one per 10 ms
    served = unserved = 0
    for ind in inds:
        cols = indication.parse_indication(ind.header, ind.message)
        assert cols.metrics == list(names) and cols.values.shape[2] == 10
        total = cols.values[:, names.index(PRB_TOTAL), :]
        used = cols.values[:, names.index("RRU.PrbUsedDl"), :]
        ok = ~np.isnan(used)
        assert (total[ok] == N_PRB).all()
        assert np.isnan(total[~ok]).all()  # noValue where the UE is not served here
        served += int(ok.sum())
        unserved += int((~ok).sum())
    assert served >= 95 * 10 * 4 * 0.9, (served, unserved)


def test_style4_two_ms_granules_and_an_optional_only_subscription() -> None:
    eng, agent = _agent(cells=1, ues=2)
    _subscribe(agent, kpm.action_definition_style4([PRB_TOTAL, "OCC.McsDl"], granularity_ms=2), 20)
    eng.run_until(400)
    inds = _indications(agent)
    assert len(inds) >= 15
    for ind in inds:
        cols = indication.parse_indication(ind.header, ind.message)
        assert cols.metrics == [PRB_TOTAL, "OCC.McsDl"] and cols.granularity_ms == 2
        assert cols.values.shape == (2, 2, 10)
        assert (cols.values[:, 0, :] == N_PRB).all()  # the mean over the granule's slots


def _style1_records(action: kpm.KpmActionDefinition) -> list[tuple[Any, ...]]:
    """Every style-1 record of 200 ms of a 2-cell gNB subscribed with ``action``."""
    eng, agent = _agent(cells=2)
    _subscribe(agent, action)
    eng.run_until(200)
    inds = _indications(agent)
    assert len(inds) >= 15
    out = []
    for ind in inds:
        msg = kpm.decode_kpm(kpm.KpmIndicationMessage, ind.message)
        assert isinstance(msg.format, kpm.IndicationFormat1)
        out += [tuple(r.values) for r in msg.format.records]
    return out


def test_style1_sums_the_carriers_of_the_action_cells() -> None:
    for total, idle in _style1_records(kpm.action_definition_style1([PRB_TOTAL, "RRU.PrbAvailDl"])):
        assert total == 2 * N_PRB  # both cells of the gNB
        assert isinstance(idle, int) and 0 <= idle <= 2 * N_PRB
    # with a cell global ID: that cell's carrier only
    _, agent = _agent(cells=2)
    cgi = Cgi(agent.plmn, agent.cell_nci[1])
    recs = _style1_records(kpm.action_definition_style1([PRB_TOTAL], cell=cgi))
    assert set(recs) == {(N_PRB,)}
