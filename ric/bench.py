"""``make bench`` for the embedded RIC: the relay under the issue's load.

10 E2 nodes x 100 UEs, KPM format 3 (8 measurements x 10 one-millisecond records per UE) every
10 ms, relayed by e2term to one receiver: indications lost (per-node sequence numbers must be
contiguous), e2term's forwarding latency (E2 PDU in -> RMR message out, p50/p99), e2term's
memory at the start and end of the run. Baseline in the same run: the same indication decoded
whole by the generic E2AP codec, which is what a relay that does not read only the envelope pays.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from octoric.bench import Benchmark, BenchResult
from octoric.contracts import auth
from octoric.redis_server import free_port

RECEIVER = """
import ctypes, json, sys, time
import octoric.rmr  # noqa: F401
from ricxappframe.rmr import rmr
from octoric.e2sm import envelope as env
port, seconds = int(sys.argv[1]), float(sys.argv[2])
ctx = rmr.rmr_init(str(port).encode(), 65536, 0)
last, lost, dup, n = {}, 0, 0, 0
sbuf = None
end = time.time() + seconds
print(json.dumps({"ready": True}), flush=True)
while time.time() < end:
    sbuf = rmr.rmr_torcv_msg(ctx, sbuf, 200)
    if sbuf.contents.state != 0:
        continue
    e = env.parse(ctypes.string_at(sbuf.contents.payload, sbuf.contents.len))
    sn = int.from_bytes(e.ie(27), "big")
    key = (rmr.rmr_get_meid(sbuf), sbuf.contents.sub_id)
    if key in last:
        gap = (sn - last[key]) % 65536
        if gap == 0:
            dup += 1
        else:
            lost += gap - 1
    last[key] = sn
    n += 1
print(json.dumps({"received": n, "lost": lost, "duplicates": dup, "streams": len(last)}),
      flush=True)
"""


def _rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def _metric(url: str, name: str) -> float:
    with urllib.request.urlopen(url, timeout=5) as r:
        for line in r.read().decode().splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
    return float("nan")


def _indication_pdu(instance: int) -> tuple[bytes, int]:
    """A 100-UE KPM indication and the offset of its 2-byte RICindicationSN."""
    from octoric.e2sm import e2ap, kpm
    from octoric.e2sm.common import Guami, UeId, ntp_timestamp
    from octoric.e2sm.e2ap_ies import RicRequestId

    infos = kpm._meas_infos(list(kpm.OCC_MEASUREMENTS))
    ues = []
    for u in range(100):
        recs = tuple(kpm.MeasRecord(tuple((u * i + k) % 1000 for k in range(8))) for i in range(10))
        guami = Guami(bytes.fromhex("00f110"), 1, 1, 0)
        ues.append(kpm.UeReport(UeId.gnb(1000 + u, guami), kpm.IndicationFormat1(recs, infos, 1)))
    msg = kpm.encode_kpm(kpm.KpmIndicationMessage(kpm.IndicationFormat3(tuple(ues))))
    hdr = kpm.encode_kpm(kpm.KpmIndicationHeader(ntp_timestamp(time.time())))

    def pdu(sn: int) -> bytes:
        return e2ap.encode_e2ap(
            e2ap.RicIndication(RicRequestId(123, instance), 2, 1, hdr, msg, sn=sn)
        )

    a, b = pdu(0x1234), pdu(0x5678)
    diff = [i for i in range(len(a)) if a[i] != b[i]]
    assert len(a) == len(b) and diff and diff[-1] - diff[0] <= 1
    return a, diff[0] if a[diff[0]] == 0x12 else diff[0] - 1


def _baseline_decode_us(pdu: bytes, repeats: int) -> tuple[float, float]:
    from octoric.e2sm import e2ap
    from octoric.e2sm import envelope as env

    def per_call(fn: object, n: int) -> float:
        t = time.perf_counter()
        for _ in range(n):
            fn(pdu)  # type: ignore[operator]
        return (time.perf_counter() - t) / n * 1e6

    full = statistics.median(per_call(e2ap.decode_e2ap, 50) for _ in range(repeats))
    ours = statistics.median(per_call(env.parse, 500) for _ in range(repeats))
    return ours, full


def run(quick: bool) -> list[BenchResult]:
    from octoric.e2sm.node_session import ScriptedNode

    seconds = 20.0 if quick else 300.0
    n_nodes, period = 10, 0.010
    tmp = Path(tempfile.mkdtemp(prefix="octoric-ricbench-"))
    from octoric.ric.stack import running_ric

    with running_ric(tmp) as stack:
        e2t_pid = int(
            subprocess.run(
                ["pgrep", "-f", f"services e2term --state {stack.rt.run_dir}"],
                capture_output=True,
                text=True,
            ).stdout.split()[0]
        )
        rport = free_port()
        recv = subprocess.Popen(
            [sys.executable, "-c", RECEIVER, str(rport), str(seconds + 15)],
            stdout=subprocess.PIPE,
            text=True,
            env=dict(os.environ, RMR_RTG_SVC="-1"),
        )
        assert recv.stdout is not None
        recv.stdout.readline()

        async def drive() -> tuple[int, float, float]:
            nodes = []
            for i in range(n_nodes):
                node = ScriptedNode(
                    "127.0.0.1", stack.rt.ric.e2_port, "tcp", gnb_id=500 + i, period_s=period
                )
                node.start()
                nodes.append(node)
            for node in nodes:
                await asyncio.wait_for(node.setup_done.wait(), 20)
            # subscribe the receiver to every node through submgr's REST API
            url = stack.url("submgr_rest_port", "/ric/v1/subscriptions")
            for node in nodes:
                body = {
                    "ClientEndpoint": {"Host": "127.0.0.1", "HTTPPort": 1, "RMRPort": rport},
                    "Meid": node.meid,
                    "RANFunctionID": 2,
                    "SubscriptionDetails": [
                        {
                            "XappEventInstanceId": 1,
                            "EventTriggers": [1],
                            "ActionToBeSetupList": [{"ActionID": 1, "ActionType": "report"}],
                        }
                    ],
                }
                req = urllib.request.Request(
                    url, json.dumps(body).encode(), auth.bearer(stack.rt.api_token), method="POST"
                )
                urllib.request.urlopen(req, timeout=5).close()
            while sum(len(n.subs) for n in nodes) < n_nodes:
                await asyncio.sleep(0.05)
            await asyncio.sleep(1.0)  # routes pushed
            for node in nodes:  # replace the default indications with the 100-UE ones
                for sub in node.subs.values():
                    if sub.task:
                        sub.task.cancel()
                    sub.task = asyncio.create_task(_blast(node, sub, period, seconds))
            await asyncio.sleep(3.0)
            rss0 = _rss_kb(e2t_pid)
            await asyncio.sleep(seconds - 3.0)
            rss1 = _rss_kb(e2t_pid)
            sent = sum(n.stats.indications for n in nodes)
            for node in nodes:
                await node.stop()
            return sent, rss0, rss1

        sent, rss0, rss1 = asyncio.run(drive())
        metrics_url = stack.url("e2term_http_port", "/metrics")
        lat = "octoric_e2term_forward_latency_seconds_quantile"
        p50 = _metric(metrics_url, lat + '{quantile="0.5"}') * 1e6  # us, as the table says
        p99 = _metric(metrics_url, lat + '{quantile="0.99"}') * 1e6
        out, _ = recv.communicate(timeout=seconds + 60)
        result = json.loads(out.strip().splitlines()[-1])
    pdu, _ = _indication_pdu(1)
    ours, full = _baseline_decode_us(pdu, 5)
    lost = result["lost"] + max(0, sent - result["received"] - result["lost"])
    note = (
        f"{seconds:.0f} s, {n_nodes} nodes x 100 UEs every {period * 1e3:.0f} ms, "
        f"{len(pdu) / 1024:.0f} KiB per indication; sent {sent}, received "
        f"{result['received']}"
    )
    return [
        BenchResult(
            "indications lost",
            float(lost),
            "count",
            higher_is_better=False,
            target="0",
            target_met=lost == 0,
            note=note,
        ),
        BenchResult("e2term forwarding latency p50", p50, "us", higher_is_better=False),
        BenchResult(
            "e2term forwarding latency p99",
            p99,
            "us",
            higher_is_better=False,
            target="<= 1000 us",
            target_met=p99 <= 1000,
        ),
        BenchResult(
            "e2term RSS growth over the run",
            float(rss1 - rss0),
            "KiB",
            higher_is_better=False,
            note=f"RSS {rss0} -> {rss1} KiB",
        ),
        BenchResult(
            "read one indication's envelope",
            ours,
            "us",
            higher_is_better=False,
            baseline_name="whole-PDU decode (octoric.e2sm codec)",
            baseline_value=full,
            samples=5,
        ),
    ]


async def _blast(node: object, sub: object, period: float, seconds: float) -> None:
    """Send the prebuilt 100-UE indication with a patched sequence number every period."""
    from octoric.e2sm.node_session import NodeSubscription, ScriptedNode

    assert isinstance(node, ScriptedNode) and isinstance(sub, NodeSubscription)
    pdu, off = _indication_pdu(sub.request_id.instance_id)
    buf = bytearray(pdu)
    t_next = time.monotonic()
    assert node.conn is not None
    while True:
        t_next += period
        buf[off : off + 2] = (sub.sn % 65536).to_bytes(2, "big")
        await node.conn.send(bytes(buf))
        sub.sn += 1
        node.stats.indications += 1
        await asyncio.sleep(max(0.0, t_next - time.monotonic()))


BENCHMARKS = [
    Benchmark(
        name="ric relay (10 nodes x 100 UEs)",
        area="ric",
        run=run,
        description="e2term relay under load: loss, latency, memory",
    )
]
