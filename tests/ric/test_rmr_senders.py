"""Who may send what to e2term over RMR (issue #17).

Before: a process on the host sent an E2SM-RC control that the gNB executed (the ACK came back
to it) and deleted a subscription behind submgr's back. Now e2term forwards subscription
requests only from submgr and RIC controls only from registered xApps whose descriptor lists
RIC_CONTROL_REQ (a control from a sender not registered yet waits up to 5 s for its
registration: xApps often send before theirs lands); refusals are counted and logged with
the sender."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from octoric.contracts import message_types as mt
from octoric.e2sm import e2ap, rc
from octoric.e2sm.common import Guami, UeId
from octoric.e2sm.e2ap_ies import RicRequestId
from octoric.ric.rmr_endpoint import RmrEndpoint

from .conftest import LoopThread, RicStack, free_pair
from .test_ric_bad_input import metrics
from .test_ric_e2e import start_node

pytestmark = [pytest.mark.integration]


def _control(ue: int) -> bytes:
    ue_id = UeId.gnb(ue, Guami(bytes.fromhex("00f110"), 1, 1, 0))
    hdr, msg = rc.octopus_control(ue_id, rc.OctopusAdaptation(drb_id=1))
    req = e2ap.RicControlRequest(RicRequestId(999, 1), 3, hdr, msg, ack_request="ack")
    return e2ap.encode_e2ap(req)


async def _stranger_sends(stack: RicStack, tmp: Path, meid: str) -> None:
    seed = tmp / "stranger.rt"
    e2t = f"127.0.0.1:{stack.rt.ric.e2term_rmr_port}"
    seed.write_text(f"newrt|start\nrte|{mt.RIC_CONTROL_REQ}|{e2t}\n"
                    f"rte|{mt.RIC_SUB_DEL_REQ}|{e2t}\nnewrt|end\n")  # fmt: skip
    ep = RmrEndpoint("stranger", free_pair(), seed_table=seed)
    ep.start()
    try:
        for mtype, payload in ((mt.RIC_CONTROL_REQ, _control(7)),
                               (mt.RIC_SUB_DEL_REQ, b"\x00\x08\x00\x10")):  # fmt: skip
            for _ in range(50):  # the connection comes up
                if ep.send(mtype, payload, meid=meid) == 0:
                    break
                await asyncio.sleep(0.05)
        await asyncio.sleep(0.5)
    finally:
        ep.close()


def test_strangers_cannot_control_nodes_or_delete_subscriptions(
    ric_stack: RicStack, loop_thread: LoopThread, tmp_path: Path
) -> None:
    node = start_node(ric_stack, loop_thread)
    loop_thread.call(_stranger_sends(ric_stack, tmp_path, node.meid))
    deadline = time.monotonic() + 15  # a stranger's control waits 5 s for a registration
    while True:
        m = metrics(ric_stack, "e2term_http_port")
        if 'kind="control_not_allowed"' in m and 'kind="subscription_not_from_submgr"' in m:
            break
        assert time.monotonic() < deadline, m[-2000:]
        time.sleep(0.1)
    assert node.stats.controls == []  # the gNB never saw the stranger's control
    loop_thread.call(node.stop())
