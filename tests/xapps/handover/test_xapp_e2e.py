"""The handover xApp end to end: real Redis and embedded RIC, two scripted gNBs over E2 (gNB A
offers KPM + E2SM-RC and sends OCC's KPM reports every 10 ms, gNB B offers E2SM-RC only), both
sending RC REPORT style 4 UE information (a UE entry without a handover every 10 ms, and the
handover phases the test queues); the handover and OCC xApps as subprocesses
(``python -m octoric.xapps.<name>``) and a researcher's probe xApp on unmodified ricxappframe
that lists OCTORIC_HO_EVENT in its descriptor. A UE handed over from gNB A to gNB B gives one
30501 start and one complete, received by the probe and by OCC, which falls back for the UE from
start to complete. One RIC and one set of xApps for the module; the tests run in order."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from testkit.rest import NO_PROXY, http, wait_until

from octoric.contracts.feedback import FeedbackListener
from octoric.contracts.rc import PARAM_HO_PHASE, PARAM_NR_CELL, PARAM_RRC_STATE, PARAM_SOURCE_CELL
from octoric.deploy.xapp_env import descriptor, xapp_environment
from octoric.e2sm import rc
from octoric.e2sm.common import UeId
from octoric.e2sm.e2ap_ies import RanFunction
from octoric.e2sm.node_session import NodeSubscription, ScriptedNode, default_ran_functions
from octoric.redis_server import free_port
from octoric.ric.stack import LoopThread, RicStack, free_pair, running_ric
from octoric.supervisor import stop_process_group

from ..occ.kpm_source import GUAMI, OccIndications

pytestmark = [pytest.mark.integration, pytest.mark.e2e]
REPO = Path(__file__).resolve().parents[3]
PROBE = Path(__file__).parent / "programs" / "ho_probe.py"
UES = [101, 102, 103, 104]
CELL_A, CELL_B = 0x19B001, 0x19C001  # NR Cell Identities of gNB A's and gNB B's cells


class RcFeed:
    """A scripted gNB's RC REPORT style 4: queued handover phases, else a UE-information entry
    without a handover (UE 104's serving cell), one indication per reporting period."""

    def __init__(self, cell: int) -> None:
        self.cell = cell
        self.queue: deque[bytes] = deque()
        self.sent = 0
        self.header = rc.encode_rc(rc.RcIndicationHeader(1, 1))
        self.idle = self._message(104, None, cell, None)

    @staticmethod
    def _message(ue: int, phase: int | None, cell: int, source: int | None) -> bytes:
        params = [
            rc.RanParam(PARAM_RRC_STATE, rc.Element(0)),
            rc.RanParam(PARAM_NR_CELL, rc.Element(rc.Bits(cell, 36))),
        ]
        if phase is not None:
            params.append(rc.RanParam(PARAM_HO_PHASE, rc.Element(phase)))
        if source is not None:
            params.append(rc.RanParam(PARAM_SOURCE_CELL, rc.Element(rc.Bits(source, 36))))
        ue_id = UeId.gnb(ue, GUAMI)
        return rc.encode_rc(rc.RcIndicationMessage(ue_params=((ue_id, tuple(params)),)))

    def handover(self, ue: int, phase: int, cell: int, source: int) -> None:
        """As octoric's simulated gNB reports it: the start from the source gNB, naming the
        target cell; the end from the target gNB (E2 agent ``on_mobility``)."""
        self.queue.append(self._message(ue, phase, cell, source))

    def garbage(self) -> None:
        self.queue.append(b"\xff\xff\xff")

    def __call__(self, sub: NodeSubscription, sn: int) -> tuple[bytes, bytes]:
        try:
            msg = self.queue.popleft()
            self.sent += 1
        except IndexError:
            msg = self.idle
        return self.header, msg


def rc_function() -> RanFunction:
    return RanFunction(
        rc.RAN_FUNCTION_ID, rc.encode_rc(rc.octoric_ran_function_definition()), 1, rc.OID
    )


@dataclass
class XappProc:
    name: str
    module: str
    stack: RicStack
    tmp: Path
    rmr_port: int = field(default_factory=free_pair)
    http_port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.http_port}{path}"

    def start(self) -> None:
        d = json.loads((REPO / f"xapps/{self.name}/config-file.json").read_text())
        by_name = {"http": self.http_port, "rmr-data": self.rmr_port,
                   "rmr-route": self.rmr_port + 1}  # fmt: skip
        for p in d["messaging"]["ports"]:
            p["port"] = by_name[p["name"]]
        if self.name == "handover":  # the test's webhook receiver listens on loopback (#43)
            d["controls"]["webhook_allow"] = ["127.0.0.1"]
        cfg = self.tmp / f"{self.name}-config.json"
        cfg.write_text(json.dumps(d))
        env = xapp_environment(self.stack.rt, self.name, self.rmr_port, self.http_port, cfg)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", self.module, "--rmr-port", str(self.rmr_port),
             "--http-port", str(self.http_port)],
            env=env, stdout=(self.tmp / f"{self.name}.log").open("wb"),
            stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip

    def status(self) -> dict[str, Any]:
        code, body = http("GET", self.url(f"/{self.name}/v1/status"))
        assert code == 200, body
        return dict(body)

    def stop(self) -> None:
        if self.proc is not None:
            stop_process_group(self.proc)

    def log(self) -> str:
        return (self.tmp / f"{self.name}.log").read_text()[-3000:]


class Probe:
    """The probe xApp as a subprocess; its JSON lines are collected by a reader thread."""

    def __init__(self, stack: RicStack, tmp: Path) -> None:
        self.rmr_port, http_port = free_pair(), free_port()
        cfg = tmp / "ho-probe-config.json"
        cfg.write_text(
            json.dumps(descriptor("ho-probe", self.rmr_port, rx=["OCTORIC_HO_EVENT"], tx=[]))
        )
        env = xapp_environment(stack.rt, "ho-probe", self.rmr_port, http_port, cfg)
        self.proc = subprocess.Popen(
            [sys.executable, str(PROBE), str(self.rmr_port), "600"], env=env,
            stdout=subprocess.PIPE, stderr=(tmp / "ho-probe.log").open("wb"),
            start_new_session=True,
        )  # fmt: skip
        self.lines: list[dict[str, Any]] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith(b"{"):
                self.lines.append(json.loads(line))

    def events(self, ue: int | None = None) -> list[dict[str, Any]]:
        out = [ln["body"] for ln in self.lines if ln["event"] == "ho"]
        return [b for b in out if ue is None or b["ue"] == ue]

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)


@dataclass
class Env:
    stack: RicStack
    lt: LoopThread
    node_a: ScriptedNode
    node_b: ScriptedNode
    rc_a: RcFeed
    rc_b: RcFeed
    occ: XappProc
    ho: XappProc
    probe: Probe
    tmp: Path


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    tmp = tmp_path_factory.mktemp("handover")
    with running_ric(tmp) as stack:
        lt = LoopThread()
        kpm_a, rc_a, rc_b = OccIndications(UES), RcFeed(CELL_A), RcFeed(CELL_B)

        def feed_a(sub: NodeSubscription, sn: int) -> tuple[bytes, bytes]:
            return (rc_a if sub.ran_function_id == rc.RAN_FUNCTION_ID else kpm_a)(sub, sn)

        async def make(gnb_id: int, fns: list[RanFunction], feed: Any) -> ScriptedNode:
            node = ScriptedNode("127.0.0.1", stack.rt.ric.e2_port, "tcp", gnb_id=gnb_id,
                                period_s=0.01, ran_functions=fns, indications=feed)  # fmt: skip
            node.start()
            return node

        node_a = lt.call(make(0x19B, [*default_ran_functions(), rc_function()], feed_a))
        node_b = lt.call(make(0x19C, [rc_function()], rc_b))
        occ = XappProc("occ", "octoric.xapps.occ", stack, tmp)
        ho = XappProc("handover", "octoric.xapps.handover", stack, tmp)
        probe: Probe | None = None
        try:
            for n in (node_a, node_b):
                wait_until(n.setup_done.is_set, 20, "E2 setup")
            occ.start()
            ho.start()
            probe = Probe(stack, tmp)
            yield Env(stack, lt, node_a, node_b, rc_a, rc_b, occ, ho, probe, tmp)
        finally:
            for x in (ho, occ, probe):
                if x is not None:
                    x.stop()
            for n in (node_a, node_b):
                lt.call(n.stop())
            lt.stop()


def _route_30501(env: Env) -> str:
    with NO_PROXY.open(env.stack.url("rtmgr_rest_port", "/ric/v1/routes"), timeout=5) as r:
        table = r.read().decode()
    return next((ln for ln in table.splitlines() if ln.startswith("mse|30501|")), "")


def test_subscriptions(env: Env) -> None:
    def rc_active() -> list[dict[str, Any]] | None:
        subs = env.ho.status()["subscriptions"]
        ok = len(subs) == 2 and all(s["state"] == "active" and s["kind"] == "rc" for s in subs)
        return subs if ok else None

    try:
        subs = wait_until(rc_active, 60, "the handover xApp's RC subscriptions on both gNBs")
    except AssertionError:
        raise AssertionError(env.ho.log()) from None
    assert sorted(s["meid"] for s in subs) == sorted([env.node_a.meid, env.node_b.meid])
    # OCC subscribes KPM only (handovers reach it as 30501), on the node that offers KPM
    st = wait_until(
        lambda: (s := env.occ.status())["ues"] and len(s["ues"]) == len(UES) and s,
        60,
        "OCC's UE estimates",
    )
    assert [(s["kind"], s["meid"]) for s in st["subscriptions"]] == [("kpm", env.node_a.meid)]
    # the idle RC entries (no handover phase) are read and counted, no event
    det = wait_until(
        lambda: (d := env.ho.status()["detector"]).get("entries_without_handover", 0) > 20 and d,
        10,
        "RC UE entries",
    )
    assert det.get("starts", 0) == 0 and env.ho.status()["rejected_indications"] == {}


def test_handover_reaches_probe_and_occ(env: Env) -> None:
    # the 30501 route: every xApp whose descriptor lists it (OCC and the probe)
    ends = (f":{env.probe.rmr_port}", f":{env.occ.rmr_port}")
    wait_until(
        lambda: (r := _route_30501(env)) and all(e in r for e in ends), 60, "the 30501 route"
    )
    time.sleep(0.5)  # the route manager's push reaches the handover xApp's RMR
    lst = FeedbackListener()
    flow = {"id": "ho-flow", "ue": 103, "address": f"127.0.0.1:{lst.address[1]}",
            "format": "json"}  # fmt: skip
    assert http("POST", env.occ.url("/occ/v1/flows"), flow)[0] == 201
    try:
        first = lst.get(5)
        assert first is not None and first.fallback is False
        t0 = time.time()
        env.rc_a.handover(103, 1, CELL_B, CELL_A)  # gNB A: UE 103 leaves for gNB B's cell
        fb = wait_until(
            lambda: (f := lst.get(0.05)) is not None and f.fallback and f, 5, "fallback feedback"
        )
        print(f"OCC fallback feedback {1e3 * (fb.received_at - t0):.1f} ms after the RC report")
        (start,) = wait_until(lambda: env.probe.events(103), 5, "the probe's 30501 start")
        assert start["event"] == "start" and start["guami"] == "00f110:1:1:0"
        assert (start["source_cell"], start["target_cell"]) == ("00f110:19b001", "00f110:19c001")
        assert start["source_meid"] == env.node_a.meid and start["t_ms"] >= int(t0 * 1000) - 5
        ue = http("GET", env.occ.url("/occ/v1/ues/103"))[1]
        assert ue["fallback"] is True and ue["handover"] is True
        assert not http("GET", env.occ.url("/occ/v1/ues/101"))[1]["handover"]

        env.rc_b.handover(103, 2, CELL_B, CELL_A)  # gNB B: completed
        wait_until(
            lambda: (f := lst.get(0.05)) is not None and not f.fallback, 5, "fallback cleared"
        )
        evs = wait_until(lambda: len(e := env.probe.events(103)) == 2 and e, 5, "the end")
        end = evs[1]
        assert end["event"] == "complete" and end["path"] == "rc"
        assert (end["source_meid"], end["target_meid"]) == (env.node_a.meid, env.node_b.meid)
        assert (end["source_cell"], end["target_cell"]) == ("00f110:19b001", "00f110:19c001")
        time.sleep(0.5)  # nothing more comes: exactly one start and one end
        assert [e["event"] for e in env.probe.events()] == ["start", "complete"]
        occ = env.occ.status()["counters"]
        assert occ["ho_start"] == 1 and occ["ho_complete"] == 1
        st = env.ho.status()
        assert st["ho_events"] == {"start": 1, "complete": 1} and st["counters"]["events_sent"] == 2
        assert st["in_handover"] == [] and st["latency_ms"]["0.99"] is not None
        _, text = http("GET", env.ho.url("/metrics"))
        assert b'octoric_handover_events_total{kind="start"} 1.0' in text
    finally:
        http("DELETE", env.occ.url("/occ/v1/flows/ho-flow"))
        lst.close()


def test_bad_rc_input_is_counted(env: Env) -> None:
    env.rc_a.garbage()
    st = wait_until(
        lambda: (s := env.ho.status())["rejected_indications"].get("undecodable") and s,
        10,
        "a rejected RC indication",
    )
    assert st["last_errors"][-1]["meid"] == env.node_a.meid
    before = st["detector"]["entries"]
    wait_until(lambda: env.ho.status()["detector"]["entries"] > before + 10, 10, "still reading")


def test_kill_9_restarts_from_sdl(env: Env) -> None:
    """Killed mid-handover, the xApp comes back with its UE tracks from SDL: the handover
    that completes after it is back gives a complete that names the start's source."""
    env.rc_a.handover(102, 1, CELL_B, CELL_A)
    wait_until(lambda: env.probe.events(102), 10, "the start of UE 102")
    wait_until(
        lambda: env.ho.status()["counters"].get("tracks_persisted", 0) > 0, 5, "tracks in SDL"
    )
    time.sleep(0.6)  # one more persist period: the start is in SDL
    assert env.ho.proc is not None
    os.killpg(env.ho.proc.pid, signal.SIGKILL)
    env.ho.proc.wait(10)
    env.ho.start()  # same ports, same SDL

    def subscribed() -> bool:
        subs = env.ho.status()["subscriptions"] if _alive(env.ho) else []
        return len(subs) == 2 and all(s["state"] == "active" for s in subs)

    wait_until(subscribed, 60, "the restarted xApp's subscriptions")
    st = env.ho.status()
    assert st["detector"]["restored"] >= 3, st["detector"]  # UEs 102, 103, 104 (RC-reported)
    assert [t["ue"] for t in st["in_handover"]] == [102]
    env.rc_b.handover(102, 2, CELL_B, CELL_A)
    try:
        evs = wait_until(lambda: len(e := env.probe.events(102)) == 2 and e, 10, "the complete")
    except AssertionError:
        raise AssertionError(
            f"no complete; rc_b sent {env.rc_b.sent}, queued {len(env.rc_b.queue)}; "
            f"node B subs {list(env.node_b.subs)} stats {env.node_b.stats}; "
            f"status {json.dumps(env.ho.status())[:4000]}\nlog {env.ho.log()}"
        ) from None
    assert evs[1]["event"] == "complete" and evs[1]["source_meid"] == env.node_a.meid
    assert evs[1]["started_ms"] == evs[0]["t_ms"]  # the start before the kill
    assert env.ho.status()["detector"].get("ends_without_start", 0) == 0


def test_application_servers_get_signed_webhooks_and_the_stream(env: Env) -> None:
    """As an application server: register a webhook (with the run's token), follow the SSE
    stream, both with the stdlib client library; one handover reaches both, verified."""
    from octoric.contracts import auth
    from octoric.xapps.handover import client

    token = os.environ[auth.TOKEN_ENV]
    hooked: list[dict[str, Any]] = []
    recv = client.WebhookReceiver("w" * 32, hooked.append)
    streamed: list[dict[str, Any]] = []
    sse = client.SseClient(env.ho.url("/handover/v1/events?ue=101"), token=token, timeout_s=15)

    def follow() -> None:
        for e in sse.events(reconnect_s=0.2):
            streamed.append(e)

    threading.Thread(target=follow, daemon=True).start()
    try:
        body = {"url": recv.url, "secret": "w" * 32, "filters": {"ues": [101]}}
        code, made = http("POST", env.ho.url("/handover/v1/subscriptions"), body)
        assert code == 201, made
        wait_until(lambda: env.ho.status()["stream_clients"] == 1, 10, "the stream client")
        env.rc_a.handover(101, 1, CELL_B, CELL_A)
        wait_until(lambda: hooked, 10, "the start's webhook")  # then the target reports the end
        env.rc_b.handover(101, 2, CELL_B, CELL_A)
        wait_until(lambda: len(hooked) == 2 and len(streamed) == 2, 10, "webhook and stream")
        assert [e["event"] for e in hooked] == ["start", "complete"] and recv.rejected == 0
        assert [e["id"] for e in streamed] == [e["id"] for e in hooked]
        st = wait_until(  # the delivery worker reports every half second
            lambda: (s := env.ho.status())["webhook"].get("delivered") == 2 and s, 5, "counts"
        )
        assert st["webhook_subscriptions"] == 1
        assert http("DELETE", env.ho.url(f"/handover/v1/subscriptions/{made['id']}"))[0] == 204
    finally:
        sse.stop()
        recv.close()


def _alive(x: XappProc) -> bool:
    try:
        x.status()
        return True
    except (OSError, AssertionError):
        return False


def test_run_component(env: Env) -> None:
    """The handover xApp under ``octoric run``'s supervisor: status fragment and report."""
    from octoric.config import RunConfig
    from octoric.deploy.xapps_component import KNOWN, XappComponent
    from octoric.supervisor import RunContext

    env.ho.stop()  # SIGTERM: its subscriptions are deleted at submgr
    _, held = http("GET", env.stack.url("submgr_rest_port", "/ric/v1/subscriptions"))
    assert [s["RANFunctionID"] for s in held] == [2], held  # OCC's KPM one stays
    run_dir = env.tmp / "plugin-run"
    run_dir.mkdir()
    env.stack.rt.write(run_dir / "ric.json")
    ctx = RunContext(RunConfig(), run_dir)
    comp = XappComponent(KNOWN["handover"], env.ho.rmr_port, env.ho.http_port)
    env.lt.call(comp.start(ctx))
    try:
        frag = wait_until(
            lambda: "2 subs" in comp.status() and comp.status(), 30, "status fragment"
        )
        assert frag == "handover 0 HO starts, 0 complete, 2 subs", frag  # no failure: not shown
    finally:
        env.lt.call(comp.stop())
    rep = comp.report()
    assert rep["ho_events"] == {} and rep["process"]["exit_code"] is not None
    _, held = http("GET", env.stack.url("submgr_rest_port", "/ric/v1/subscriptions"))
    assert [s["RANFunctionID"] for s in held] == [2], held  # deleted at its stop again
