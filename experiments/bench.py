"""``octoric bench handover``: the handover xApp's detection latency and exactness under a
high-speed-rail load (issue #12, done-when 2).

The setup is a real one: a private Redis and the embedded RIC (``ric.stack.running_ric``),
``n_gnbs`` scripted gNBs connected over E2 (TCP framing) offering E2SM-RC, the handover xApp
as its own process (``python -m octoric.xapps.handover``), and a receiver xApp on unmodified
ricxappframe (``experiments.ho_probe``) that the RIC routes 30501 to. Each of ``n_ues`` UEs
hands over from gNB g to gNB g+1 at exponential intervals (mean 6.65 s, ToN'22's HSR
figure): the source gNB reports the start (RC REPORT style 4, phase 1), the target gNB the
completion after a log-normal interruption (mean 92.8 ms).

Detection latency is the issue's span: from the indication's arrival at e2term to the 30501
leaving the xApp. Both processes mark the PDU they pass (``contracts.latency_trace``: CRC-32
of the unchanged E2AP bytes, CLOCK_MONOTONIC, on only in this benchmark) and the marks are
joined here. The end-to-end figure beside it, from the gNB's send to the receiver xApp's
arrival, adds the E2 hop (loopback TCP) and the RMR hop to the receiver.
There is no baseline to run beside it (no other RAN-side handover detector exists here);
the target is the issue's, from ToN'22 (1.6 ms measured at the RAN).
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import numpy as np

from octoric import realtime
from octoric.bench import Benchmark, BenchResult
from octoric.contracts import auth, latency_trace
from octoric.contracts.rc import (
    PARAM_HO_PHASE,
    PARAM_INTERRUPTION_MS,
    PARAM_NR_CELL,
    PARAM_RRC_STATE,
    PARAM_SOURCE_CELL,
)
from octoric.deploy.xapp_env import descriptor, xapp_environment
from octoric.e2sm import rc
from octoric.e2sm.common import Guami, UeId
from octoric.e2sm.e2ap_ies import RanFunction
from octoric.e2sm.node_session import E2NodeSession, ScriptedNode
from octoric.experiments.experiment import percentile
from octoric.redis_server import free_port
from octoric.ric.stack import LoopThread, RicStack, free_pair, running_ric
from octoric.supervisor import stop_process_group

REPO = Path(__file__).resolve().parents[1]
GUAMI = Guami(bytes.fromhex("00f110"), 1, 1, 0)
TARGET_DETECT_P99_MS = 2.0
# e2term and the xApp run SCHED_FIFO at this priority, as a RAN host runs its real-time work
# (octoric/realtime.py), where this process may grant it; the bench also measures without
RT_PRIORITY = 10
TARGET_WEBHOOK_P99_MS = 10.0
MEAN_INTERVAL_S = 6.65  # ToN'22, HSR
MEAN_INTERRUPTION_MS = 92.8


def nci(gnb: int) -> int:
    return (0x100 + gnb) << 12 | 1


class RcNode(ScriptedNode):
    """A gNB that sends an RC indication when told (no periodic reports)."""

    def __init__(self, host: str, port: int, gnb: int) -> None:
        fn = RanFunction(
            rc.RAN_FUNCTION_ID, rc.encode_rc(rc.octoric_ran_function_definition()), 1, rc.OID
        )
        super().__init__(host, port, "tcp", 0x100 + gnb, period_s=None, ran_functions=[fn])
        self.gnb = gnb
        self.header = rc.encode_rc(rc.RcIndicationHeader(1, 1))

    async def report(self, ue: int, phase: int, cell: int, source: int, gap_ms: int) -> float:
        """One RC indication to every subscriber; the wall-clock time it was sent."""
        return await self.send_message(rc_message(ue, phase, cell, source, gap_ms))

    async def send_message(self, msg: bytes) -> float:
        """An encoded RC indication message to every subscriber; the wall-clock send time."""
        pdus = [
            self.indication_pdu(s, s.action_ids[0], self.header, msg) for s in self.subs.values()
        ]
        t = time.time()
        for pdu in pdus:
            await self.send_pdu(pdu)
        return t


def rc_message(ue: int, phase: int, cell: int, source: int, gap_ms: int) -> bytes:
    """RC REPORT style 4 for one UE: phase 1 (start, at the source) or 2 (complete)."""
    params = [
        rc.RanParam(PARAM_RRC_STATE, rc.Element(0)),
        rc.RanParam(PARAM_NR_CELL, rc.Element(rc.Bits(cell, 36))),
        rc.RanParam(PARAM_HO_PHASE, rc.Element(phase)),
        rc.RanParam(PARAM_SOURCE_CELL, rc.Element(rc.Bits(source, 36))),
    ]
    if phase != 1:
        params.append(rc.RanParam(PARAM_INTERRUPTION_MS, rc.Element(gap_ms)))
    return rc.encode_rc(rc.RcIndicationMessage(ue_params=((UeId.gnb(ue, GUAMI), tuple(params)),)))


@dataclass
class Workload:
    n_gnbs: int = 10
    n_ues: int = 100  # per gNB
    duration_s: float = 30.0
    seed: int = 7
    sent: dict[tuple[int, str, int], float] = field(default_factory=dict)  # (ue, kind, k) -> t

    def plan(self) -> list[tuple[float, int, bytes, tuple[int, str, int]]]:
        """Every report in order: (time from the start, node, encoded message, key). Encoded
        ahead, so the load generator's own CPU (pycrate, ~250 us a message) does not compete
        with the system under test on this 2-core machine while the clock runs."""
        rng = random.Random(self.seed)
        n = self.n_gnbs * self.n_ues
        where = [u % self.n_gnbs for u in range(n)]
        count = [0] * n
        heap: list[tuple[float, int, int, int]] = []  # (t, ue, phase, gap ms)
        for u in range(n):
            heapq.heappush(heap, (rng.expovariate(1 / MEAN_INTERVAL_S), u, 1, 0))
        sigma = 0.3
        mu = np.log(MEAN_INTERRUPTION_MS) - sigma**2 / 2
        out = []
        while heap:
            t, u, phase, gap = heapq.heappop(heap)
            if phase == 1 and t > self.duration_s:
                continue  # no new handovers after the end; ends still come
            src = where[u]
            dst = (src + 1) % self.n_gnbs
            ue = u + 1
            if phase == 1:
                msg = rc_message(ue, 1, nci(dst), nci(src), 0)
                out.append((t, src, msg, (ue, "start", count[u])))
                gap = max(20, int(rng.lognormvariate(mu, sigma)))
                heapq.heappush(heap, (t + gap / 1000, u, 2, gap))
            else:
                msg = rc_message(ue, 2, nci(dst), nci(src), gap)
                out.append((t, dst, msg, (ue, "complete", count[u])))
                where[u], count[u] = dst, count[u] + 1
                heapq.heappush(heap, (t + rng.expovariate(1 / MEAN_INTERVAL_S), u, 1, 0))
        return out

    async def run(self, nodes: list[RcNode],
                  steps: list[tuple[float, int, bytes, tuple[int, str, int]]]) -> None:  # fmt: skip
        t0 = time.monotonic()
        for t, node, msg, key in steps:
            await asyncio.sleep(max(0.0, t0 + t - time.monotonic()))
            self.sent[key] = await nodes[node].send_message(msg)


@dataclass
class Proc:
    name: str
    proc: subprocess.Popen[bytes]
    out: Path

    def stop(self) -> None:
        stop_process_group(self.proc)

    def lines(self) -> list[dict[str, Any]]:
        out = []
        for line in self.out.read_text().splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                continue  # log lines
        return out


def _spawn(stack: RicStack, tmp: Path, name: str, argv: list[str], rmr: int, http: int,
           cfg: dict[str, Any]) -> Proc:  # fmt: skip
    path = tmp / f"{name}-config.json"
    path.write_text(json.dumps(cfg))
    env = xapp_environment(stack.rt, name, rmr, http, path)
    env["OCTORIC_LOG_FORMAT"] = "json"
    out = tmp / f"{name}.out"
    f: IO[bytes] = out.open("wb")
    p = subprocess.Popen(argv, env=env, stdout=f, stderr=subprocess.STDOUT, start_new_session=True)
    return Proc(name, p, out)


def start_handover_xapp(stack: RicStack, tmp: Path, controls: dict[str, Any]) -> tuple[Proc, int]:
    rmr, http = free_pair(), free_port()
    d = json.loads((REPO / "xapps/handover/config-file.json").read_text())
    by_name = {"http": http, "rmr-data": rmr, "rmr-route": rmr + 1}
    for p in d["messaging"]["ports"]:
        p["port"] = by_name[p["name"]]
    d["controls"].update(controls)
    argv = [sys.executable, "-m", "octoric.xapps.handover", "--rmr-port", str(rmr),
            "--http-port", str(http)]  # fmt: skip
    return _spawn(stack, tmp, "handover", argv, rmr, http, d), http


def start_webhook_receiver(tmp: Path, secret: str, timeout_s: float) -> Proc:
    out = tmp / "webhook.out"
    argv = [sys.executable, "-m", "octoric.experiments.ho_probe", "webhook", secret,
            str(timeout_s)]  # fmt: skip
    f: IO[bytes] = out.open("wb")
    p = subprocess.Popen(argv, stdout=f, stderr=subprocess.STDOUT, start_new_session=True)
    return Proc("webhook-receiver", p, out)


def start_probe(stack: RicStack, tmp: Path, timeout_s: float) -> Proc:
    rmr = free_pair()
    d = descriptor("ho-probe", rmr, ["OCTORIC_HO_EVENT"], [])
    argv = [sys.executable, "-m", "octoric.experiments.ho_probe", str(rmr), str(timeout_s)]
    return _spawn(stack, tmp, "ho-probe", argv, rmr, free_port(), d)


def _wait(cond: Any, timeout: float, what: str, procs: list[Proc]) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        for p in procs:
            if p.proc.poll() is not None:
                raise RuntimeError(f"{p.name} exited: {p.out.read_text()[-2000:]}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"bench handover: timed out waiting for {what}")
        time.sleep(0.1)


def measure(
    n_gnbs: int = 10, n_ues: int = 100, duration_s: float = 30.0, rt_priority: int | None = None
) -> dict[str, Any]:
    """One run; the figures of ``octoric bench handover --json``. ``rt_priority``: e2term's and
    the xApp's SCHED_FIFO priority (None: normal scheduling)."""
    wl = Workload(n_gnbs, n_ues, duration_s)
    with tempfile.TemporaryDirectory(prefix="octoric-ho-bench-") as d:
        tmp = Path(d)
        traces = tmp / "latency-trace"
        # e2term and the xApp inherit both: each marks the PDUs it passes
        # (contracts.latency_trace), and runs at the priority asked (octoric/realtime.py)
        with (
            _env(latency_trace.ENV, str(traces)),
            _env(realtime.ENV, str(rt_priority or 0)),
        ):
            out = _measure_in(tmp, wl, n_gnbs, duration_s)
        marks = {
            p: latency_trace.read_marks(traces, p)
            for p in ("e2term_in", "handover_in", "handover_out")
        }
    spans = latency_trace.spans_ms(marks["e2term_in"], marks["handover_out"])
    hop = latency_trace.spans_ms(marks["e2term_in"], marks["handover_in"])
    got, hooked, elapsed = out["got"], out["hooked"], out["elapsed"]
    inside, e2t = out["inside"], out["e2t"]
    f = _figures(wl.sent, got, elapsed)
    # the span: the indication's arrival at e2term -> the 30501 leaving the xApp
    f["detect_p50_ms"], f["detect_p99_ms"] = percentile(spans, 50), percentile(spans, 99)
    f["detect_p999_ms"], f["detect_spans"] = percentile(spans, 99.9), len(spans)
    # its first part: e2term -> RMR -> ricxappframe's receive thread and queue -> the handler
    f["to_handler_p50_ms"], f["to_handler_p99_ms"] = percentile(hop, 50), percentile(hop, 99)
    f["webhook_p99_ms"], f["webhook_p50_ms"], f["webhook_events"] = _webhook(wl.sent, hooked)
    f["xapp_p50_ms"], f["xapp_p99_ms"] = inside.get("0.5"), inside.get("0.99")
    f["e2term_p50_ms"], f["e2term_p99_ms"] = e2t
    return f


@contextlib.contextmanager
def _env(name: str, value: str) -> Iterator[None]:
    """``name=value`` in this process's environment (children inherit it), then as it was."""
    saved = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if saved is None:
            del os.environ[name]
        else:
            os.environ[name] = saved


def _measure_in(tmp: Path, wl: Workload, n_gnbs: int, duration_s: float) -> dict[str, Any]:
    """The run itself: the RIC, the gNBs, the xApp, the probe and the webhook receiver."""
    got: list[dict[str, Any]] = []
    hooked: list[tuple[float, dict[str, Any]]] = []  # (received, event) at the webhook
    elapsed = 0.0
    inside: dict[str, Any] = {}
    e2t: tuple[float | None, float | None] = (None, None)
    with running_ric(tmp) as stack:
        loop = LoopThread()
        procs: list[Proc] = []
        nodes = [RcNode("127.0.0.1", stack.rt.ric.e2_port, g) for g in range(n_gnbs)]
        try:
            for n in nodes:
                loop.call(_start(n))
            probe = start_probe(stack, tmp, duration_s + 120)
            procs.append(probe)
            _wait(lambda: any("ready" in x for x in probe.lines()), 60, "the probe", procs)
            # the webhook receiver listens on loopback: allow-listed (#43)
            controls = {"detection": "rc", "webhook_allow": ["127.0.0.1"]}
            ho, http = start_handover_xapp(stack, tmp, controls)
            procs.append(ho)
            _wait(lambda: all(n.subs for n in nodes), 60, "RC subscriptions", procs)
            hook = start_webhook_receiver(tmp, "b" * 32, duration_s + 120)
            procs.append(hook)
            _wait(lambda: any("url" in x for x in hook.lines()), 30, "the receiver", procs)
            url = next(x["url"] for x in hook.lines() if "url" in x)
            base = f"http://127.0.0.1:{http}/handover/v1/subscriptions"
            _post(base, {"url": url, "secret": "b" * 32}, stack.rt.api_token)
            # the probe's route: one handover goes through before the clock starts
            loop.call(_warm_up(nodes))
            _wait(lambda: len(probe.lines()) >= 3, 30, "the first 30501s", procs)
            skip = len(probe.lines())
            steps = wl.plan()
            t0 = time.monotonic()
            loop.call(wl.run(nodes, steps), timeout=duration_s + 60)
            elapsed = time.monotonic() - t0
            deadline = time.monotonic() + 10  # the last ones in flight
            while len(probe.lines()) - skip < len(wl.sent) and time.monotonic() < deadline:
                time.sleep(0.1)
            got = probe.lines()[skip:]
            time.sleep(1.0)  # the last deliveries
            hooked = [(x["at"], x["hook"]) for x in hook.lines() if "hook" in x]
            hooked = [h for h in hooked if h[1]["ue"] != WARM_UE]
            inside = _get(f"http://127.0.0.1:{http}/handover/v1/status").get("latency_ms", {})
            e2t = _e2term_forward(stack)
        finally:
            stop_all(loop, nodes, procs)
    return {"got": got, "hooked": hooked, "elapsed": elapsed, "inside": inside, "e2t": e2t}


def stop_all(loop: LoopThread, nodes: Sequence[E2NodeSession[Any, Any]], procs: list[Proc]) -> None:
    """A benchmark's teardown: its E2 nodes (on their loop), the loop, its processes."""
    for n in nodes:
        loop.call(n.stop())
    loop.stop()
    for p in procs:
        p.stop()


def _webhook(
    sent: dict[tuple[int, str, int], float], hooked: list[tuple[float, dict[str, Any]]]
) -> tuple[float | None, float | None, int]:
    """p99, p50 (ms) from the gNB's send to the webhook's delivery at a local receiver, and
    how many deliveries were matched to a handover the gNBs reported."""
    seen: dict[tuple[int, str], int] = {}
    lat = []
    for at, ev in hooked:
        key = (int(ev["ue"]), str(ev["event"]))
        k = seen.get(key, 0)
        seen[key] = k + 1
        t = sent.get((key[0], key[1], k))
        if t is not None:
            lat.append((at - t) * 1000)
    return percentile(lat, 99), percentile(lat, 50), len(lat)


def _post(url: str, body: dict[str, Any], token: str) -> None:
    import urllib.request

    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    headers = {"Content-Type": "application/json", **auth.bearer(token)}
    req = urllib.request.Request(url, json.dumps(body).encode(), headers, method="POST")
    with opener.open(req, timeout=5) as r:
        if r.status != 201:
            raise RuntimeError(f"webhook subscription refused: {r.status}")


def _e2term_forward(stack: RicStack) -> tuple[float | None, float | None]:
    """e2term's own E2 PDU in -> RMR message out, p50 and p99 in ms (its /metrics)."""
    import urllib.request

    url = f"http://127.0.0.1:{stack.rt.ric.e2term_http_port}/metrics"
    try:
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(url, timeout=5) as r:
            text = r.read().decode()
    except OSError:
        return None, None
    out: dict[str, float] = {}
    for line in text.splitlines():
        for q, key in (("0.5", "p50"), ("0.99", "p99")):
            if line.startswith(
                f'octoric_e2term_forward_latency_seconds_quantile{{quantile="{q}"}}'
            ):
                out[key] = round(float(line.split()[-1]) * 1000, 3)
    return out.get("p50"), out.get("p99")


def _get(url: str) -> dict[str, Any]:
    import urllib.request

    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(url, timeout=5) as r:
            body: dict[str, Any] = json.loads(r.read())
            return body
    except (OSError, ValueError):
        return {}


async def _start(node: RcNode) -> None:
    node.start()
    while not node.connected:
        await asyncio.sleep(0.02)


WARM_UE = 999_999


async def _warm_up(nodes: list[RcNode]) -> None:
    await nodes[0].report(WARM_UE, 1, nci(1), nci(0), 0)
    await asyncio.sleep(0.05)
    await nodes[1].report(WARM_UE, 2, nci(1), nci(0), 50)


def _figures(sent: dict[tuple[int, str, int], float], got: list[dict[str, Any]],
             elapsed: float) -> dict[str, Any]:  # fmt: skip
    seen: dict[tuple[int, str], int] = {}
    lat: list[float] = []
    spurious = 0
    for g in got:
        b = g.get("body") or {}
        kind = b.get("event")
        if kind == "ping_pong":
            continue
        key = (int(b.get("ue", -1)), str(kind))
        k = seen.get(key, 0)
        seen[key] = k + 1
        t = sent.get((key[0], key[1], k))
        if t is None:
            spurious += 1
            continue
        lat.append((g["at"] - t) * 1000)
    return {
        "events": len(lat),
        "missed": len(sent) - len(lat),
        "spurious": spurious,
        "e2e_p50_ms": percentile(lat, 50),
        "e2e_p99_ms": percentile(lat, 99),
        "events_per_s": round(len(lat) / elapsed, 1) if elapsed else None,
    }


def cli_json(quick: bool) -> dict[str, Any]:
    prio = RT_PRIORITY if realtime.may_grant(RT_PRIORITY) else None
    f = measure(duration_s=10.0 if quick else 30.0, rt_priority=prio)
    f["rt_priority"] = prio
    return f


def _run(quick: bool) -> list[BenchResult]:
    f = cli_json(quick)
    p99 = f["detect_p99_ms"]
    rt = (
        f"e2term and the xApp SCHED_FIFO {f['rt_priority']} (OCTORIC_RT_PRIORITY)"
        if f["rt_priority"]
        else "normal scheduling (SCHED_FIFO not permitted here)"
    )
    note = (f"10 gNBs x 100 UEs, HSR handovers ({f['events']} events, {f['missed']} missed, "
            f"{f['spurious']} spurious, {f['events_per_s']} events/s); e2term's arrival of the "
            f"indication -> the 30501 leaving the xApp, {f['detect_spans']} spans joined from "
            f"both processes' marks; p99.9 {f['detect_p999_ms']} ms; {rt}")  # fmt: skip
    rows = []
    if f["rt_priority"]:  # the same load at normal priority, for a reader to compare
        n = measure(duration_s=10.0 if quick else 30.0)
        rows.append(BenchResult(
            name="handover detection latency p99, normal scheduling", unit="ms",
            value=n["detect_p99_ms"] or 0.0, higher_is_better=False,
            note=(f"the run above with every process at normal priority: p50 "
                  f"{n['detect_p50_ms']} ms, p99.9 {n['detect_p999_ms']} ms, {n['missed']} "
                  f"missed, {n['spurious']} spurious"),
        ))  # fmt: skip
    return [
        BenchResult(
            name="handover detection latency p99", value=p99 or 0.0, unit="ms",
            higher_is_better=False, target=f"<= {TARGET_DETECT_P99_MS} ms",
            target_met=p99 is not None and p99 <= TARGET_DETECT_P99_MS and not f["missed"]
            and not f["spurious"],
            note=note,
        ),
        BenchResult(
            name="handover detection latency p50", value=f["detect_p50_ms"] or 0.0, unit="ms",
            higher_is_better=False,
        ),
        BenchResult(
            name="handover end to end p99 (gNB send -> 30501 at a receiver xApp)",
            value=f["e2e_p99_ms"] or 0.0, unit="ms", higher_is_better=False,
            note=f"p50 {f['e2e_p50_ms']} ms; adds the E2 (TCP) and RMR hops to the span above",
        ),
        BenchResult(
            name="handover xApp inside (indication in -> 30501 out) p99",
            value=f["xapp_p99_ms"] or 0.0, unit="ms", higher_is_better=False,
            note="the xApp's own histogram (its handler: decode, detect, notify, send)",
        ),
        BenchResult(
            name="e2term (E2 PDU in -> RMR out) p99", value=f["e2term_p99_ms"] or 0.0,
            unit="ms", higher_is_better=False, note="e2term's own figure",
        ),
        BenchResult(
            name="webhook latency p99 (gNB event -> delivered at a local receiver)",
            value=f["webhook_p99_ms"] or 0.0, unit="ms", higher_is_better=False,
            target=f"<= {TARGET_WEBHOOK_P99_MS} ms",
            target_met=f["webhook_p99_ms"] is not None
            and f["webhook_p99_ms"] <= TARGET_WEBHOOK_P99_MS,
            note=f"{f['webhook_events']} deliveries, signed, one subscription for every event",
        ),
        *rows,
    ]  # fmt: skip


BENCHMARKS = [
    Benchmark("handover", "handover", _run, "handover detection under HSR load, 10 gNBs x 100 UEs")
]
