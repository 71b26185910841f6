"""The OCC xApp end to end: real Redis and embedded RIC, a ScriptedNode sending KPM format-3
indications with the OCC measurements (4 UEs, every 10 ms), the xApp as a subprocess
(``python -m octoric.xapps.occ``), the example listener (unmodified ricxappframe) and UDP
senders. One RIC and one xApp for the module; the tests run in order."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from testkit.occ_xapp import OccProc
from testkit.rest import http, wait_until

from octoric.contracts.feedback import FeedbackListener
from octoric.contracts.schemas import load as load_schema
from octoric.e2sm.node_session import ScriptedNode
from octoric.redis_server import free_port
from octoric.ric.stack import LoopThread, RicStack, free_pair, running_ric

from .kpm_source import OccIndications

pytestmark = [pytest.mark.integration, pytest.mark.e2e]
REPO = Path(__file__).resolve().parents[3]
UES = [101, 102, 103, 104]


@dataclass
class Env:
    stack: RicStack
    lt: LoopThread
    node: ScriptedNode
    source: OccIndications
    occ: OccProc
    tmp: Path


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    tmp = tmp_path_factory.mktemp("occ")
    with running_ric(tmp) as stack:
        lt = LoopThread()
        source = OccIndications(UES)
        occ = OccProc(stack, tmp, free_pair(), free_port())
        try:

            async def make() -> ScriptedNode:
                node = ScriptedNode(
                    "127.0.0.1", stack.rt.ric.e2_port, "tcp", period_s=0.01, indications=source
                )
                node.start()
                return node

            node = lt.call(make())
            wait_until(node.setup_done.is_set, 20, "E2 setup")
            occ.start()
            yield Env(stack, lt, node, source, occ, tmp)
        finally:
            occ.stop()
            lt.call(node.stop())
            lt.stop()


def _active(e: Env) -> dict[str, Any] | None:
    subs = e.occ.status()["subscriptions"]
    return subs[0] if subs and subs[0]["state"] == "active" else None


def test_subscribes_and_estimates(env: Env) -> None:
    try:
        sub = wait_until(lambda: _active(env), 60, "an active KPM subscription")
    except AssertionError:
        raise AssertionError(env.occ.log()) from None
    assert sub["meid"] == env.node.meid and sub["e2_instance_id"] is not None
    st = wait_until(
        lambda: (s := env.occ.status())["ues"] and len(s["ues"]) == len(UES) and s,
        20,
        "UE estimates",
    )
    assert sorted(u["ue"] for u in st["ues"]) == UES
    assert all(u["target_bps"] > 1e6 and u["guami"] == "00f110:1:1:0" for u in st["ues"])
    # the node got a style-4 subscription, 10 ms period (one E2 subscription)
    assert env.node.stats.subscriptions >= 1
    code, text = http("GET", env.occ.url("/metrics"))
    assert code == 200
    assert (
        b"octoric_occ_ue_samples_per_second" in text
        and b"octoric_occ_processing_latency_seconds" in text
    )


def test_reports_reach_example_listener(env: Env) -> None:
    import jsonschema

    # as the docs say: `examples/abw_listener.py --embedded` beside the running RIC
    rmr_port, http_port = free_pair(), free_port()
    xenv = {**os.environ, "OCTORIC_STATE_DIR": str(env.stack.state_dir)}
    xenv.pop("CONFIG_FILE", None)
    out = subprocess.run(
        [sys.executable, str(REPO / "examples/abw_listener.py"), "--embedded",
         "--rmr-port", str(rmr_port), "--http-port", str(http_port),
         "--json", "--count", "30", "--timeout", "40"],
        env=xenv, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    reports = [json.loads(ln) for ln in out.stdout.splitlines() if ln.startswith("{")]
    assert len(reports) >= 30, out.stderr[-2000:]
    schema = load_schema("abw_report")
    for r in reports:
        jsonschema.validate(r, schema)
    assert {r["meid"] for r in reports} == {env.node.meid}
    assert all(sorted(u["ue"] for u in r["ues"]) == UES for r in reports)
    assert all(
        r["n_granules"] == 10 and len(r["ues"][0]["target_bps_granules"]) == 10 for r in reports
    )
    sns = [r["sn"] for r in reports]
    assert sns == sorted(sns)
    # issue #16: on exit it deregisters, so appmgr (and the 30500 route) no longer has it
    code, listed = http("GET", f"http://127.0.0.1:{env.stack.rt.ric.appmgr_port}/ric/v1/xapps")
    assert code == 200 and "abw-listener" not in {x["name"] for x in listed}, listed


def test_example_listener_without_a_ric_says_so(tmp_path: Path) -> None:
    """issue #16: with no RIC running it is one line naming the cause, not a traceback."""
    xenv = {**os.environ, "OCTORIC_STATE_DIR": str(tmp_path)}
    xenv.pop("CONFIG_FILE", None)
    out = subprocess.run([sys.executable, str(REPO / "examples/abw_listener.py"), "--embedded"],
                         env=xenv, capture_output=True, text=True, timeout=60)  # fmt: skip
    assert out.returncode == 2
    assert "no embedded RIC is running here" in out.stderr and "Traceback" not in out.stderr


def _flow_listeners(env: Env) -> tuple[FeedbackListener, FeedbackListener]:
    lj, lr = FeedbackListener(), FeedbackListener()
    for body in (
        {"id": "video-json", "ue": 101, "address": f"127.0.0.1:{lj.address[1]}", "format": "json"},
        {"id": "video-remb", "ue": 102, "guami": "00f110:1:1:0",
         "address": f"127.0.0.1:{lr.address[1]}",
         "format": "remb", "ssrcs": [0x1234, 0x5678], "sender_ssrc": 7},
    ):  # fmt: skip
        code, resp = http("POST", env.occ.url("/occ/v1/flows"), body)
        assert code == 201, resp
    return lj, lr


def test_flows_get_feedback(env: Env) -> None:
    lj, lr = _flow_listeners(env)
    try:
        time.sleep(1.0)
        js, rs = lj.drain(), lr.drain()
        assert len(js) >= 15 and len(rs) >= 15, (len(js), len(rs))
        assert all(f.format == "json" and f.ue == 101 and f.target_bps > 1e6 for f in js)
        assert all(
            f.format == "remb" and f.ssrcs == (0x1234, 0x5678) and f.sender_ssrc == 7 for f in rs
        )
        for fbs in (js, rs):
            gaps = sorted(b.received_at - a.received_at for a, b in itertools.pairwise(fbs))
            # refreshed every 50 ms (+ the 10 ms timer tick); generous on a loaded machine
            assert gaps[len(gaps) // 2] < 0.065 and gaps[-1] < 0.15, gaps[-5:]
        ue = http("GET", env.occ.url("/occ/v1/ues/102"))[1]
        assert abs(rs[-1].target_bps - ue["target_bps"]) / ue["target_bps"] < 0.05
        code, flows = http("GET", env.occ.url("/occ/v1/flows"))
        assert code == 200 and {f["id"] for f in flows} == {"video-json", "video-remb"}
    finally:
        lj.close()
        lr.close()


def test_bad_rest_input_is_answered_and_counted(env: Env) -> None:
    cases = [
        (b"{not json", "bad_json"),
        ({"ue": 1, "format": "json"}, "bad_flow_address"),
        ({"ue": -5, "address": "127.0.0.1:9", "format": "json"}, "bad_flow_ue"),
        ({"ue": 1, "address": "127.0.0.1:99999", "format": "json"}, "bad_flow_address"),
        ({"ue": 1, "address": "127.0.0.1:9", "format": "rtp"}, "bad_flow_format"),
        ({"ue": 1, "address": "127.0.0.1:9", "format": "remb"}, "bad_flow_ssrcs"),
        ({"ue": 1, "address": "127.0.0.1:9", "format": "json", "colour": 1}, "bad_flow_body"),
        ({"id": "video-json", "ue": 1, "address": "127.0.0.1:9", "format": "json"}, "flow_exists"),
    ]
    for body, reason in cases:
        code, resp = http("POST", env.occ.url("/occ/v1/flows"), body)
        assert code in (400, 409) and resp["reason"] == reason and resp["error"], (body, resp)
    assert http("DELETE", env.occ.url("/occ/v1/flows/nope"))[0] == 404
    assert http("GET", env.occ.url("/occ/v1/ues/abc"))[0] == 400
    assert http("POST", env.occ.url("/ric/v1/subscriptions/response"), {"x": 1})[0] == 400
    errors = env.occ.status()["rest_errors"]
    assert (
        errors["bad_json"] >= 1 and errors["bad_flow_format"] >= 1 and errors["unknown_flow"] >= 1
    )
    assert errors["bad_subscription_response"] >= 1


def test_malformed_indications_are_counted(env: Env) -> None:
    before = env.occ.status()
    for mode in ("missing_metric", "granularity", "unknown_ue"):
        env.source.malformed(mode, 3)
        wait_until(
            lambda m=mode: env.source.bad_sent.get(m, 0) >= 3, 10, f"{mode} indications sent"
        )
    st = wait_until(
        lambda: (s := env.occ.status())["rejected_indications"].get("unknown_ue", 0) >= 3 and s,
        10,
        "rejections",
    )
    rej = st["rejected_indications"]
    assert rej["missing_metric"] >= 3 and rej["granularity"] >= 3 and rej["unknown_ue"] >= 3, rej
    msgs = {e["reason"]: e["error"] for e in st["last_errors"]}
    assert "OCC.BitsPerPrbDl" in msgs["missing_metric"] and "10 ms" in msgs["granularity"]
    # still alive and estimating
    time.sleep(0.3)
    assert env.occ.status()["counters"]["ue_samples"] > before["counters"]["ue_samples"]
    _, text = http("GET", env.occ.url("/metrics"))
    assert b'octoric_occ_rejected_indications_total{reason="granularity"}' in text


def test_config_hot_reload(env: Env) -> None:
    cfg = env.tmp / "occ-config.json"
    original = cfg.read_text()
    d = json.loads(original)
    try:
        d["controls"]["feedback_max_interval_ms"] = 40
        cfg.write_text(json.dumps(d))
        wait_until(
            lambda: env.occ.status()["config"]["feedback_max_interval_ms"] == 40, 10, "reload"
        )
        d["controls"]["engine"]["beta"] = 5.0  # out of range: refused, the old config stays
        cfg.write_text(json.dumps(d))
        st = wait_until(
            lambda: (s := env.occ.status())["config_errors"] >= 1 and s, 10, "a refused edit"
        )
        assert "beta" in st["last_config_error"]
        assert (
            st["config"]["feedback_max_interval_ms"] == 40 and st["config"]["engine"]["beta"] == 0.1
        )
    finally:
        cfg.write_text(original)
    wait_until(lambda: env.occ.status()["config"]["feedback_max_interval_ms"] == 50, 10, "restore")


def test_handover_event_sets_fallback(env: Env) -> None:
    from octoric.contracts.ho_event import HoEvent
    from octoric.ric.rmr_endpoint import RmrEndpoint
    from octoric.xapps.occ.messages import encode

    port = free_pair()
    ep = RmrEndpoint(
        "ho-test",
        port,
        control_port=port + 1,
        seed_table=env.stack.rt.seed_file,
        src_id="127.0.0.1",
    )

    async def start() -> None:
        ep.start()

    env.lt.call(start())
    lst = FeedbackListener()
    body = {"id": "ho-flow", "ue": 103, "address": f"127.0.0.1:{lst.address[1]}", "format": "json"}
    assert http("POST", env.occ.url("/occ/v1/flows"), body)[0] == 201
    try:
        first = lst.get(5)
        assert first is not None and first.fallback is False
        ho_start = encode(HoEvent(103, "start", source_meid=env.node.meid).to_json())
        wait_until(lambda: ep.send(30501, ho_start),
                   10, "30501 sent by route")  # fmt: skip
        t_sent = time.time()
        fb = wait_until(
            lambda: (f := lst.get(0.05)) is not None and f.fallback and f, 5, "fallback feedback"
        )
        print(f"fallback feedback {1e3 * (fb.received_at - t_sent):.1f} ms after the 30501 start")
        assert fb.received_at - t_sent < 0.2
        ue = http("GET", env.occ.url("/occ/v1/ues/103"))[1]
        assert ue["fallback"] is True and ue["handover"] is True
        assert ep.send(30501, encode(HoEvent(103, "complete").to_json()))
        wait_until(
            lambda: (f := lst.get(0.05)) is not None and not f.fallback, 5, "fallback cleared"
        )
        assert ep.send(30501, b'{"version": 2, "ue": "x", "event": "start"}')
        assert ep.send(30501, b"\xff not json")
        # RMR health check: 100 -> 101 "OK" (RMRXapp's default handler)
        assert ep.wh_send_to(f"127.0.0.1:{env.occ.rmr_port}", 100, b"ping")
        reply = env.lt.call(asyncio.wait_for(ep.receive(), 5))
        assert (reply.mtype, reply.payload) == (101, b"OK\n")
        ep.release(reply)
        st = wait_until(
            lambda: (s := env.occ.status())["ho_event_errors"] and s, 5, "bad 30501 counted"
        )
        assert st["ho_event_errors"] == {"ue": 1, "not_json": 1}
        assert st["counters"]["ho_start"] == 1 and st["counters"]["ho_complete"] == 1
    finally:
        http("DELETE", env.occ.url("/occ/v1/flows/ho-flow"))
        lst.close()
        ep.close()


def test_kill9_restart_resumes(env: Env) -> None:
    lj, lr = FeedbackListener(), FeedbackListener()
    try:
        for fid in ("video-json", "video-remb"):  # point the flows here
            http("DELETE", env.occ.url(f"/occ/v1/flows/{fid}"))
        pj, pr = f"127.0.0.1:{lj.address[1]}", f"127.0.0.1:{lr.address[1]}"
        for body in (
            {"id": "video-json", "ue": 101, "address": pj, "format": "json"},
            {"id": "video-remb", "ue": 102, "address": pr, "format": "remb", "ssrcs": [1]},
        ):
            assert http("POST", env.occ.url("/occ/v1/flows"), body)[0] == 201
        old = _active(env)
        assert old is not None
        time.sleep(1.2)  # a checkpoint is taken every second
        env.occ.kill9()
        t_kill = time.time()
        lj.drain()
        lr.drain()
        t_start = env.occ.start()
        first_j, first_r = lj.get(10), lr.get(10)
        assert first_j is not None and first_r is not None, env.occ.log()
        dt_j, dt_r = first_j.received_at - t_start, first_r.received_at - t_start
        print(f"feedback again {dt_j:.3f} s / {dt_r:.3f} s after the restart "
              f"({first_j.received_at - t_kill:.3f} s after kill -9)")  # fmt: skip
        assert dt_j < 1.0 and dt_r < 1.0
        st = wait_until(env.occ.status, 20, "the restarted xApp's REST API")
        assert st["restored"]["flows"] == 2 and st["restored"]["ues"] == len(UES)
        assert st["restored"]["checkpoints"] == len(UES)
        new = wait_until(lambda: _active(env), 30, "the adopted subscription")
        # submgr still holds it for this endpoint: adopted, not deleted and asked again
        assert new["subscription_id"] == old["subscription_id"]
        counters = env.occ.status()["counters"]
        assert counters.get("subscriptions_adopted", 0) == 1, counters
        assert counters.get("stale_subscriptions_deleted", 0) == 0, counters
        # indications flow again into the restored engine: fresh estimates, nothing rejected
        wait_until(
            lambda: env.occ.status()["counters"].get("ue_samples", 0) > 400, 20, "new samples"
        )
        assert "time" not in env.occ.status()["rejected_indications"]
        _, submgr_subs = http("GET", env.stack.url("submgr_rest_port", "/ric/v1/subscriptions"))
        assert len(submgr_subs) == 1, submgr_subs  # still the one subscription
        assert len(lj.drain()) > 5
    finally:
        lj.close()
        lr.close()


def test_run_plugin_component(env: Env) -> None:
    """The xApp under ``octoric run``'s supervisor: status fragment with per-UE ABW."""
    from octoric.config import RunConfig
    from octoric.deploy.xapps_component import KNOWN, XappComponent, components
    from octoric.supervisor import RunContext

    env.occ.stop()  # the plugin starts its own on the same ports
    run_dir = env.tmp / "plugin-run"
    run_dir.mkdir()
    env.stack.rt.write(run_dir / "ric.json")
    ctx = RunContext(RunConfig(), run_dir)
    # enabled by default: occ, handover, octopus
    assert [c.name for c in components(ctx)] == ["xapp-occ", "xapp-handover", "xapp-octopus"]
    comp = XappComponent(KNOWN["occ"], env.occ.rmr_port, env.occ.http_port)
    env.lt.call(comp.start(ctx))
    try:
        frag = wait_until(
            lambda: "UEs, ABW" in comp.status() and comp.status(), 30, "status fragment"
        )
        # "occ 4 UEs, ABW Mbit/s ue101 10.2 ue102 9.9 ...", maybe "; <what needs a look>"
        head, _, abw = frag.split("; ")[0].partition(" UEs, ABW Mbit/s ")
        assert head == f"occ {len(UES)}", frag
        pairs = abw.split()
        named = {pairs[i]: float(pairs[i + 1]) for i in range(0, len(pairs), 2)}
        assert sorted(named) == sorted(f"ue{u}" for u in UES), frag
        assert all(v > 0 for v in named.values()), frag
        assert sorted(comp.abw_by_ue()) == UES
    finally:
        env.lt.call(comp.stop())
    ports = json.loads((run_dir / "xapps.json").read_text())["occ"]
    assert (ports["rmr_port"], ports["http_port"]) == (env.occ.rmr_port, env.occ.http_port)
    rep = comp.report()
    assert sorted(u["ue"] for u in rep["ues"]) == UES and rep["process"]["exit_code"] is not None


def test_a_du_naming_ues_by_f1ap_id(env: Env) -> None:
    """A second gNB that names its UEs by gNB-CU-UE-F1AP-ID only, as srsRAN's DU does, with
    the same numbers as UE ids: OCC subscribes it, estimates its UEs under their UE keys
    (contracts.ue_key: node + F1AP ID, apart from the first node's UEs) and a flow registered
    with such a key gets feedback."""
    from octoric.contracts import ue_key

    env.occ.start()  # the plugin test stopped it
    du_src = OccIndications(UES, ue_kind="gNB-DU-UEID")

    async def make() -> ScriptedNode:
        node = ScriptedNode("127.0.0.1", env.stack.rt.ric.e2_port, "tcp", gnb_id=0x2AA,
                            period_s=0.01, indications=du_src)  # fmt: skip
        node.start()
        return node

    du = env.lt.call(make())
    lst = FeedbackListener()
    try:
        wait_until(du.setup_done.is_set, 20, "E2 setup of the DU")
        keys = sorted(ue_key.du_key(du.meid, u) for u in UES)
        st = wait_until(
            lambda: (
                (s := env.occ.status())
                and sorted(u["ue"] for u in s["ues"] if u["meid"] == du.meid) == keys
                and s
            ),
            60,
            "estimates of the DU's UEs",
        )
        mine = [u for u in st["ues"] if u["meid"] == du.meid]
        assert all(u["guami"] is None and u["target_bps"] > 1e6 for u in mine)
        assert sorted(u["ue"] for u in st["ues"] if u["meid"] == env.node.meid) == UES
        assert "unknown_ue" not in st["rejected_indications"], st["rejected_indications"]
        flow = {"id": "du-flow", "ue": keys[1], "address": f"127.0.0.1:{lst.address[1]}",
                "format": "json"}  # fmt: skip
        assert http("POST", env.occ.url("/occ/v1/flows"), flow)[0] == 201
        fb = lst.get(10)
        assert fb is not None and fb.ue == keys[1] and fb.target_bps > 1e6
        assert http("GET", env.occ.url(f"/occ/v1/ues/{keys[1]}"))[1]["meid"] == du.meid
    finally:
        lst.close()
        env.lt.call(du.stop())
