"""Issue #39, done-when 3: what a real srsRAN CU-CP sends for a handover, detected by the handover
xApp.

A live gNB whose UEs are the DU's test-mode UEs never reports a handover: its CU-CP has no UE (no
RRC), and ``ho`` answers "UE is invalid". So the reports come from srsRAN's own CU-CP running a
real inter-DU handover in its test environment, with its E2 agent created as the gNB creates it
(patch 0022; ``tests/e2sm/vectors/srsran-cu-cp/index.json`` gives the provenance). Here they go
over real E2 (TCP) from a node that offers the live CU-CP's own RAN functions
(``srsran-live/cu-cp-E2SetupRequest.hex``), through the embedded RIC, to the handover xApp as a
subprocess: its subscription, srsRAN's header and message bytes unchanged (only the RIC request
ID is the subscription's, as the CU-CP would use it), and one handover detected: a start, then a
completion with srsRAN's interruption.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from testkit.rest import wait_until

from octoric.e2sm import e2ap, rc
from octoric.e2sm.node_session import ScriptedNode
from octoric.ric.stack import LoopThread, running_ric

from .test_xapp_e2e import XappProc

pytestmark = [pytest.mark.integration, pytest.mark.e2e]
VECTORS = Path(__file__).resolve().parents[2] / "e2sm" / "vectors"
GNB_ID = 411  # the test environment's cells are NCI 0x66c000 and 0x66c001: gNB 411 (22 bits)


def _pdu(path: Path) -> bytes:
    return bytes.fromhex("".join(path.read_text().split()))


def _reports() -> list[e2ap.RicIndication]:
    index = json.loads((VECTORS / "srsran-cu-cp" / "index.json").read_text())
    out = []
    for v in index["vectors"]:
        raw = _pdu(VECTORS / "srsran-cu-cp" / v["file"])
        assert len(raw) == v["bytes"]
        ind = e2ap.decode_e2ap(raw)
        assert isinstance(ind, e2ap.RicIndication) and e2ap.encode_e2ap(ind) == raw
        out.append(ind)
    return out


def _cu_cp_functions() -> list[Any]:
    setup = e2ap.decode_e2ap(_pdu(VECTORS / "srsran-live" / "cu-cp-E2SetupRequest.hex"))
    assert isinstance(setup, e2ap.E2SetupRequest)
    return list(setup.ran_functions)


@pytest.fixture(scope="module")
def cu_cp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ScriptedNode, XappProc]]:
    tmp = tmp_path_factory.mktemp("cu-cp")
    with running_ric(tmp) as stack:
        lt = LoopThread()

        async def make() -> ScriptedNode:
            node = ScriptedNode("127.0.0.1", stack.rt.ric.e2_port, "tcp", gnb_id=GNB_ID,
                                period_s=None, ran_functions=_cu_cp_functions())  # fmt: skip
            node.start()
            return node

        node = lt.call(make())
        ho = XappProc("handover", "octoric.xapps.handover", stack, tmp)
        try:
            wait_until(node.setup_done.is_set, 20, "E2 setup")
            ho.start()
            yield node, ho
        finally:
            ho.stop()
            lt.call(node.stop())
            lt.stop()


def test_the_real_cu_cps_handover_reports_give_one_detected_handover(
    cu_cp: tuple[ScriptedNode, XappProc],
) -> None:
    node, ho = cu_cp
    subs = wait_until(
        lambda: [s for s in node.subs.values() if s.ran_function_id == rc.RAN_FUNCTION_ID],
        60,
        f"the handover xApp's RC subscription\n{ho.log()}",
    )
    sub = subs[0]
    started, completed = _reports()
    lt = LoopThread()
    try:
        for report in (started, completed):
            lt.call(node.send(replace(report, request_id=sub.request_id)))
            wait_until(
                lambda n=report: (
                    ho.status()["detector"].get("entries", 0) >= (1 if n is started else 2)
                ),
                10,
                f"the report read\n{ho.log()}",
            )
    finally:
        lt.stop()
    st = wait_until(
        lambda: (s := ho.status())["ho_events"] == {"start": 1, "complete": 1} and s,
        10,
        f"one start and one completion\n{ho.log()}",
    )
    assert st["rejected_indications"] == {}, st
    assert st["in_handover"] == []
