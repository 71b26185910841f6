"""The embedded RIC end to end: real Redis, the four RIC processes, a scripted E2 node over
the TCP-framed E2 transport, and an unmodified ricxappframe 3.2.2 xApp (tests/ric/programs)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from octoric.deploy.xapp_env import descriptor, xapp_environment
from octoric.e2sm.node_session import ScriptedNode
from octoric.redis_server import free_port

from .conftest import LoopThread, RicStack, free_pair

pytestmark = [pytest.mark.integration, pytest.mark.e2e]
PROBE = Path(__file__).parent / "programs" / "probe_xapp.py"


def start_node(stack: RicStack, lt: LoopThread, period_s: float = 0.01) -> ScriptedNode:
    async def make() -> ScriptedNode:
        node = ScriptedNode("127.0.0.1", stack.rt.ric.e2_port, "tcp", period_s=period_s)
        node.start()
        return node

    node = lt.call(make())
    assert isinstance(node, ScriptedNode)
    deadline = time.monotonic() + 10
    while not node.setup_done.is_set():
        assert time.monotonic() < deadline, "E2 setup did not complete"
        time.sleep(0.05)
    return node


def run_probe(
    stack: RicStack, tmp: Path, meid: str, *args: str, timeout: float = 90
) -> list[dict[str, Any]]:
    rmr_port, http_port = free_pair(), free_port()
    cfg = tmp / "probe-config.json"
    cfg.write_text(
        json.dumps(
            descriptor(
                "probe",
                rmr_port,
                rx=["RIC_INDICATION", "RIC_CONTROL_ACK", "RIC_CONTROL_FAILURE"],
                tx=["RIC_CONTROL_REQ"],
            )
        )
    )
    env = xapp_environment(stack.rt, "probe", rmr_port, http_port, cfg)
    out = subprocess.run(
        [sys.executable, str(PROBE), str(rmr_port), str(http_port), meid, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    events = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    assert out.returncode == 0, out.stderr[-3000:]
    return events


def test_subscribe_indicate_control_delete(
    ric_stack: RicStack, loop_thread: LoopThread, tmp_path: Path
) -> None:
    node = start_node(ric_stack, loop_thread)
    events = run_probe(ric_stack, tmp_path, node.meid, "--indications", "30", "--control")
    by = lambda kind: [e for e in events if e["event"] == kind]  # noqa: E731

    posted = by("posted")[0]
    assert posted["status"] == 201 and posted["body"]["SubscriptionId"]
    resp = by("subscription_response")[0]["body"]
    inst = resp["SubscriptionInstances"][0]
    assert inst["XappEventInstanceId"] == 12345 and inst["ErrorCause"] == ""
    e2_instance = inst["E2EventInstanceId"]

    inds = by("indication")
    assert len(inds) >= 30
    assert all(i["decoded"] for i in inds), inds[:3]
    assert {i["sub_id"] for i in inds} == {e2_instance}  # sub_id = E2EventInstanceId
    assert {i["instance"] for i in inds} == {e2_instance}
    assert {i["meid"] for i in inds} == {node.meid}
    sns = [i["sn"] for i in inds]
    assert sns == list(range(sns[0], sns[0] + len(sns))), "indications lost or reordered"

    acks = by("control_ack")
    assert len(acks) == 1 and acks[0]["type"] == "RicControlAcknowledge"
    assert acks[0]["meid"] == node.meid and acks[0]["instance"] == 42
    assert len(node.stats.controls) == 1 and node.stats.controls[0].ran_function_id == 3

    assert by("deleted")[0]["status"] == 204
    assert by("after_delete")[0]["new"] == 0
    assert node.stats.deletions == 1 and not node.subs

    # the RIC saw it all: node and RAN functions recorded, the probe registered via appmgr
    status = json.loads(
        subprocess.run(
            [sys.executable, "-m", "octoric.cli", "ric", "status", "--json"],
            capture_output=True,
            text=True,
            timeout=30,
            env={**__import__("os").environ, "OCTORIC_STATE_DIR": str(ric_stack.state_dir)},
        ).stdout
    )
    assert [n["meid"] for n in status["nodes"]] == [node.meid]
    assert status["nodes"][0]["ran_functions"][0]["oid"] == "1.3.6.1.4.1.53148.1.2.2.2"
    assert status["subscriptions"] == []
    assert [x["name"] for x in status["xapps"]] == ["probe"]
    assert all(h["healthy"] for h in status["health"])
    loop_thread.call(node.stop())


def test_metrics_are_prometheus_text(ric_stack: RicStack, loop_thread: LoopThread) -> None:
    node = start_node(ric_stack, loop_thread)
    with urllib.request.urlopen(ric_stack.url("e2term_http_port", "/metrics"), timeout=5) as r:
        text = r.read().decode()
    assert "octoric_e2term_pdus_in_total" in text and 'kind="E2setupRequest"' in text
    assert "octoric_e2term_connected_nodes 1.0" in text
    loop_thread.call(node.stop())
