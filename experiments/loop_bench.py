"""``octoric bench loop``: the OCC control loop end to end (issue #15, done-when 2).

Scripted gNBs send KPM indications (report style 4, format 3, 8 measurements per UE, 1 ms
granules) over E2 (TCP framing) to the embedded RIC's e2term, which relays them over RMR to
the OCC xApp (its own process, ``python -m octoric.xapps.occ``), which sends UDP feedback to
registered senders (a receiver process here). Each JSON feedback datagram carries ``t_ms``, the
gNB's time stamp of the newest sample behind the estimate, so every datagram is matched to
the indication that produced it: latency is from the gNB's send (just before the socket
write) to the datagram's arrival, both on CLOCK_MONOTONIC.

The configurations (``CASES``):
- 10 nodes x 100 UEs, 10 ms period (10 granules): 1 M UE-samples/s into one OCC xApp;
- 1 node x 100 UEs, 1 ms period (1 granule): the latency case (issue #44: p99 <= 500 us);
- 10 nodes x 100 UEs, 20 ms period (20 granules): the same 1 M UE-samples/s in half as many
  indications, the load ``octoric bench soak`` runs for an hour;
- 10 nodes x 100 UEs at 1 ms and at 2 ms (issue #44: 10 k indications/s, p99 <= 1 ms, p50 <=
  200 us), and the 2 ms load on two OCC replicas sharing the nodes (``xapps/occ/shards.py``);
- the 2 ms load again with the nodes' report phases spread over the period.

The nodes report at the same instant every period (gNBs on one clock do: the worst case for
the queue, ten indications at once); ``spread`` gives node i the phase i/N of the period
instead (gNBs whose KPM report timers started at their subscriptions).

The gNBs' replay and the feedback receiver run natively where ``make setup`` built them
(``experiments/native``): in Python they took 0.25 and 0.17 core at 5 k indications/s and fell
behind, so the measurement was its own bottleneck.

A configuration is **sustained** when nothing was lost or shed and the p99 stays within
``SUSTAINED_P99_US`` (100 ms): the xApp keeps pace without a standing queue. 0 lost with a p99
of seconds means it kept up only by queueing, which a 30 s run survives and an hour does not.

The indications are built before the clock starts (the fast encoder, then only the sequence
number and the time stamp are patched per send), so the generator's CPU stays small on this
2-core machine. Each node cycles through a few message variants, and in every other one the
UEs with flows report no MCS (an outage), so their fallback flag flips and every indication
is due a datagram to every flow: each (indication, flow) pair is one latency sample. (Random
values alone do not move the target: it is a minimum over the last L ms, constant once a
short cycle of variants has passed through it.) ``feedback_min_change`` is 0 and the periodic
refresh is off for the run: a refresh resends the latest target from a timer, a datagram no
indication caused, whose "latency" is the timer's phase (before 2026-11-27 such datagrams
were most of the samples, which put the timer's period into the tail).

e2term and the xApp run SCHED_FIFO ``RT_PRIORITY`` (``OCTORIC_RT_PRIORITY``, as a RAN host
runs its real-time work, and as the handover benchmark runs them) where this process may grant
it; the latency case runs again at normal scheduling beside it. The gNBs and the receiver
run at normal priority either way.

Figures per configuration: p50/p99/p99.9 of indication sent -> feedback received, indications
lost (sent by the gNBs and not processed by the xApp, including any it shed), UE-samples/s
processed, the CPU each process spent per UE-sample, and where the time goes
(``breakdown_ms``: gNB -> e2term -> the xApp's handler -> its datagrams sent -> received).
No baseline runs beside it: the anchors are published figures (FlexRIC < 200 us agent ->
xApp, dApps < 450 us), quoted, not measured here.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import ctypes
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from octoric import realtime
from octoric.bench import Benchmark, BenchResult
from octoric.contracts import kpm as K
from octoric.contracts import latency_trace
from octoric.contracts.latency_trace import LatencyTrace
from octoric.e2sm import envelope, fastenc, kpm
from octoric.e2sm.common import Guami, UeId, ntp_timestamp
from octoric.e2sm.node_session import NodeSubscription, ScriptedNode
from octoric.e2sm.transport import TcpFramedConnection
from octoric.experiments.bench import (
    REPO,
    RT_PRIORITY,
    Proc,
    _env,
    _get,
    _post,
    _spawn,
    _wait,
    stop_all,
)
from octoric.experiments.experiment import percentile
from octoric.redis_server import free_port
from octoric.ric.stack import LoopThread, RicStack, free_pair, running_ric
from octoric.xapps.occ import shards
from octoric.xapps.occ.synthetic import random_batch

# issue #44: p99 (and p50) of indication sent -> feedback received, by case
P99_TARGETS_US = {"1x100@1ms": 500.0, "10x100@1ms": 1000.0}
P50_TARGETS_US = {"10x100@1ms": 200.0}
THROUGHPUT_CASES = ("10x100@10ms", "10x100@1ms")  # 1 M UE-samples/s offered
LATENCY_RUNS = 5  # runs of the latency case per scheduling setting (the median's row)
TARGET_UE_SAMPLES = 1_000_000.0  # 10 nodes x 100 UEs x 10 granules every 10 ms
VARIANTS = 4
GUAMI = Guami(b"\x00\xf1\x10", 2, 1, 1)
ANCHORS = "published anchors: FlexRIC < 200 us agent -> xApp; dApps < 450 us"


@dataclass(frozen=True)
class LoopCase:
    name: str
    n_nodes: int
    n_ues: int  # per node
    period_ms: int  # reporting period; granules of 1 ms, so also the granules per indication
    flows_per_node: int = 10
    # OCC xApp replicas sharing the nodes (xapps/occ/shards.py); 1: one, unsharded
    replicas: int = 1
    # node i reports at phase i / n_nodes of the period, not all nodes at once (the docstring)
    spread: bool = False
    # the flows' UEs alternate outage / no outage (see variant_messages): every indication
    # is due a datagram to every flow; otherwise only the estimates' own moves send (the soak)
    flip: bool = False

    @property
    def ue_samples_per_s(self) -> float:
        return self.n_nodes * self.n_ues * 1000.0


CASES = (
    LoopCase("10x100@10ms", 10, 100, 10, flip=True),
    LoopCase("1x100@1ms", 1, 100, 1, flip=True),
    LoopCase("10x100@20ms", 10, 100, 20, flip=True),
    # issue #44: an operator's RIC at OCC's own granularity, 10 k indications/s, and half that
    LoopCase("10x100@1ms", 10, 100, 1, flip=True),
    LoopCase("10x100@2ms", 10, 100, 2, flip=True),
    # the same load on two OCC replicas (shards.py): on 2 cores, two receive threads
    LoopCase("10x100@2ms/2 replicas", 10, 100, 2, flip=True, replicas=2),
    LoopCase("10x100@2ms spread", 10, 100, 2, flip=True, spread=True),
)
# the periodic refresh (every 50 ms by default) resends the latest target from a timer: a
# datagram no indication caused, whose "latency" is the timer's phase (see the docstring)
REFRESH_OFF_MS = 600_000
SUSTAINED_P99_US = 100_000.0  # no standing queue (see the module's docstring)
# node, t_ms, sent, read by the receiver, arrival at its socket (kernel stamp; monotonic s)
Sample = tuple[int, int, float, float, float | None]


def ue_id(node: int, u: int) -> int:
    return 1000 * (node + 1) + u


def flow_rows(case: LoopCase) -> list[int]:
    """The UEs (row in the node's list) that have a registered flow."""
    return [u * (case.n_ues // case.flows_per_node) for u in range(case.flows_per_node)]


def variant_messages(node: int, case: LoopCase, seed: int) -> list[bytes]:
    """``VARIANTS`` KPM format-3 messages for one node: 100 UEs x 8 measurements x granules,
    plausible values (``synthetic.random_batch``), each variant different. In every other
    variant the UEs with flows report no MCS (an outage): their fallback flag flips on every
    indication, so every indication is due a datagram to each flow. Random values alone do
    not do it: the target is a minimum over the last L ms (Design 3), which a few variants in
    a cycle stop moving after one cycle."""
    out = []
    rng = np.random.default_rng(seed * 1000 + node)
    infos = tuple(kpm.MeasInfo(m) for m in kpm.OCC_MEASUREMENTS)
    for v in range(VARIANTS):
        b = random_batch(rng, case.n_ues, case.period_ms)
        if case.flip and v % 2 == 0:
            b[K.BITS_PER_PRB_DL][flow_rows(case), :] = 0.0
        extra = {K.MCS_DL: rng.integers(0, 28, (case.n_ues, case.period_ms)).astype(float),
                 K.UE_THP_DL: rng.uniform(0, 50_000, (case.n_ues, case.period_ms))}  # fmt: skip
        cols = [np.rint(b[m] if m in b else extra[m]).astype(int) for m in kpm.OCC_MEASUREMENTS]
        reports = tuple(
            kpm.UeReport(
                UeId.gnb(ue_id(node, u), GUAMI, u),
                kpm.IndicationFormat1(
                    tuple(
                        kpm.MeasRecord(tuple(int(c[u, g]) for c in cols))
                        for g in range(case.period_ms)
                    ),
                    infos,
                    1,
                ),
            )
            for u in range(case.n_ues)
        )
        out.append(fastenc.encode_message(kpm.KpmIndicationMessage(kpm.IndicationFormat3(reports))))
    return out


class Template:
    """One variant's RIC indication with the offsets of its SN and its time stamp."""

    def __init__(self, sub: NodeSubscription, message: bytes) -> None:
        rid = sub.request_id

        def pdu(sn: int, t: float) -> bytes:
            hdr = fastenc.encode_indication_header(ntp_timestamp(t))
            return envelope.encode_ric_indication(
                rid.requestor_id, rid.instance_id, kpm.RAN_FUNCTION_ID, sub.action_ids[0],
                hdr, message, sn=sn,
            )  # fmt: skip

        a, b = pdu(0x1234, 1000.0), pdu(0x5678, 2000.0)
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        self.buf = bytearray(a)
        self.sn_at = a.find(b"\x12\x34", 0, diff[0] + 2)
        self.ts_at = a.find(ntp_timestamp(1000.0))
        assert len(a) == len(b) and self.sn_at >= 0 and self.ts_at > self.sn_at

    def fill(self, sn: int, t0_ms: int) -> bytes:
        self.buf[self.sn_at : self.sn_at + 2] = (sn % 65536).to_bytes(2, "big")
        self.buf[self.ts_at : self.ts_at + 8] = ntp_timestamp(t0_ms / 1000.0)
        return bytes(self.buf)


class LoadNode(ScriptedNode):
    """A gNB offering KPM whose indications the benchmark sends (no periodic reports)."""

    def __init__(self, host: str, port: int, node: int) -> None:
        super().__init__(host, port, "tcp", 0x300 + node, period_s=None)
        self.node = node
        self.sent: list[tuple[int, float]] = []  # (t_ms of the newest granule, monotonic send)
        self.keys: dict[int, str] = {}  # t_ms -> the PDU's trace key (when tracing)
        self.trace = LatencyTrace("gnb_out")  # the first point of the breakdown


async def blast(node: LoadNode, messages: list[bytes], case: LoopCase, t0_ms: int,
                start: float, seconds: float) -> None:  # fmt: skip
    """Indication k at ``start + k * period`` (plus the node's phase when the case spreads
    them) with collection start ``t0_ms + k * period``."""
    sub = next(iter(node.subs.values()))
    templates = [Template(sub, m) for m in messages]
    assert node.conn is not None
    period = case.period_ms / 1000.0
    phase = node.node * period / case.n_nodes if case.spread else 0.0
    k = 0
    n = round(seconds / period)
    while k < n:
        await asyncio.sleep(max(0.0, start + phase + k * period - time.monotonic()))
        t_ms = t0_ms + k * case.period_ms
        pdu = templates[k % len(templates)].fill(sub.sn, t_ms)
        sent_ns = time.monotonic_ns()
        await node.conn.send(pdu)
        node.sent.append((t_ms + case.period_ms - 1, sent_ns / 1e9))
        if node.trace.enabled:  # after the send: the CRC costs the span nothing
            node.trace.mark(pdu, sent_ns)
            node.keys[t_ms + case.period_ms - 1] = latency_trace.key_of(pdu)
        sub.sn += 1
        node.stats.indications += 1
        k += 1


RECEIVER = """
import gc, json, socket, struct, sys, time
gc.disable()  # it only appends: no cycles, and no collection pauses that grow with the run
out, seconds = sys.argv[1], float(sys.argv[2])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
# the kernel's arrival time of each datagram (SCM_TIMESTAMPNS, CLOCK_REALTIME), beside the read
TS = getattr(socket, "SO_TIMESTAMPNS", 35)
s.setsockopt(socket.SOL_SOCKET, TS, 1)
# the timeout in the kernel (SO_RCVTIMEO), not Python's: one recvmsg per datagram, no poll
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, struct.pack("ll", 0, 200000))
s.bind(("127.0.0.1", 0))
print(json.dumps({"port": s.getsockname()[1]}), flush=True)
got = []  # parsed after the run: the loop only reads and stamps
end = time.monotonic() + seconds
while time.monotonic() < end:
    try:
        data, anc, _, _ = s.recvmsg(2048, 64)
    except (BlockingIOError, socket.timeout):
        continue
    at = time.monotonic_ns()
    off = time.time_ns() - at  # realtime - monotonic, to put the kernel's stamp on our clock
    if data == b"stop":
        break
    got.append((data, at, anc[0][2] if anc and anc[0][1] == TS else None, off))
first = {}
for data, at, ts, off in got:
    try:
        d = json.loads(data)
        key = (d["ue"], d["t_ms"])
    except (ValueError, KeyError):
        continue
    if key not in first:
        kt = None
        if ts is not None:
            sec, ns = struct.unpack("qq", ts[:16])
            kt = (sec * 1_000_000_000 + ns - off) / 1e9
        first[key] = (at / 1e9, kt)
with open(out, "w") as f:
    json.dump({"datagrams": len(got),
               "first": [[u, t, a, k] for (u, t), (a, k) in first.items()]}, f)
print(json.dumps({"done": True}), flush=True)
"""


LOADGEN_LIB = REPO / "build" / "lib" / "libocto_loadgen.so"
FEEDBACK_SINK = REPO / "build" / "bin" / "feedback_sink"


def _receiver_argv(out_file: Path, seconds: float) -> list[str]:
    """The feedback receiver: the native sink (``experiments/native``, built by make setup),
    else the Python one (it falls behind at ~50 k datagrams/s: the measurement's bottleneck)."""
    if FEEDBACK_SINK.is_file():
        return [str(FEEDBACK_SINK), str(out_file), str(seconds)]
    return [sys.executable, "-c", RECEIVER, str(out_file), str(seconds)]


def _loadgen() -> ctypes.CDLL | None:
    if not LOADGEN_LIB.is_file():
        return None
    lib = ctypes.CDLL(str(LOADGEN_LIB))
    lib.loadgen_blast.restype = ctypes.c_int64
    lib.loadgen_blast.argtypes = [ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t,
                                  ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                  ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                  ctypes.c_size_t, ctypes.c_uint64, ctypes.c_uint64,
                                  ctypes.c_int, ctypes.c_void_p]  # fmt: skip
    return lib


def blast_native(lib: ctypes.CDLL, nodes: list[LoadNode], messages: list[list[bytes]],
                 case: LoopCase, t0_ms: int, start: float, seconds: float) -> None:  # fmt: skip
    """``blast`` for every node at once in native code (``experiments/native``): the same
    schedule, PDUs and records, the socket writes without the interpreter."""
    count = round(seconds / (case.period_ms / 1000.0))
    subs = [next(iter(n.subs.values())) for n in nodes]
    tpls = [[Template(sub, m) for m in msgs] for sub, msgs in zip(subs, messages, strict=True)]
    flat = [t for ts in tpls for t in ts]
    keep = [bytes(t.buf) for t in flat]  # the buffers the native side reads
    ptrs = (ctypes.c_char_p * len(keep))(*keep)
    as_arr = np.asarray
    lens = as_arr([len(b) for b in keep], dtype=np.uintp)
    sn_off = as_arr([t.sn_at for t in flat], dtype=np.uintp)
    ts_off = as_arr([t.ts_at for t in flat], dtype=np.uintp)
    sn0 = as_arr([sub.sn % 65536 for sub in subs], dtype=np.uint16)
    ts = b"".join(ntp_timestamp((t0_ms + k * case.period_ms) / 1000.0) for k in range(count))
    fds = []
    for n in nodes:
        assert isinstance(n.conn, TcpFramedConnection), "the native replay speaks TCP framing"
        fds.append(n.conn.writer.get_extra_info("socket").fileno())
    fd_arr = as_arr(fds, dtype=np.intc)
    sent = np.zeros(len(nodes) * count, dtype=np.uint64)
    start_ns = round(start * 1e9)  # time.monotonic() is CLOCK_MONOTONIC: the same clock
    lib.loadgen_blast(len(nodes), fd_arr.ctypes.data, len(tpls[0]), ptrs, lens.ctypes.data,
                      sn_off.ctypes.data, ts_off.ctypes.data, sn0.ctypes.data, ts, count,
                      start_ns, case.period_ms * 1_000_000, int(case.spread),
                      sent.ctypes.data)  # fmt: skip
    grid = sent.reshape(len(nodes), count)
    for i, (n, sub) in enumerate(zip(nodes, subs, strict=True)):
        for k in np.flatnonzero(grid[i]).tolist():
            t_ms = t0_ms + k * case.period_ms
            sent_ns = int(grid[i, k])
            n.sent.append((t_ms + case.period_ms - 1, sent_ns / 1e9))
            if n.trace.enabled:  # the same PDU, rebuilt for its trace key
                pdu = tpls[i][k % len(tpls[i])].fill(sub.sn + k, t_ms)
                n.trace.mark(pdu, sent_ns)
                n.keys[t_ms + case.period_ms - 1] = latency_trace.key_of(pdu)
            n.stats.indications += 1
        sub.sn += count


def _split_settled(https: list[int], nodes: list[LoadNode], k: int) -> bool:
    """Every node subscribed by the replica that owns it (shards.owner_of), and by no other."""
    names = [f"occ-{i}" for i in range(k)]
    for i, h in enumerate(https):
        st = _get(f"http://127.0.0.1:{h}/occ/v1/status")
        have = {x["meid"] for x in st["subscriptions"] if x["state"] == "active"}
        want = {n.meid for n in nodes if shards.owner_of(n.meid, names) == names[i]}
        if have != want:
            return False
    return True


def _status_all(https: list[int]) -> dict[str, Any]:
    """The OCC xApp's status; of several replicas, their counts summed (the first's others)."""
    sts = [_get(f"http://127.0.0.1:{h}/occ/v1/status") for h in https]
    if len(sts) == 1:
        return sts[0]
    out = dict(sts[0])
    for key in ("counters", "rmr", "rejected_indications", "native_declined"):
        total: Counter[str] = Counter()
        for st in sts:
            total.update({k: int(v) for k, v in (st.get(key) or {}).items()})
        out[key] = dict(total)
    out["overloaded"] = any(st.get("overloaded") for st in sts)
    out["latency_ms"] = {q: max((st.get("latency_ms") or {}).get(q) or 0.0 for st in sts)
                         for q in ("0.5", "0.99")}  # fmt: skip
    return out


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _e2term_pid(stack: RicStack) -> int:
    out = subprocess.run(["pgrep", "-f", f"services e2term --state {stack.rt.run_dir}"],
                         capture_output=True, text=True).stdout.split()  # fmt: skip
    return int(out[0])


def start_occ(stack: RicStack, tmp: Path, case: LoopCase, replica: int | None = None
              ) -> tuple[Proc, int]:  # fmt: skip
    """One OCC xApp process; ``replica``: its index among ``case.replicas``."""
    rmr, http = free_pair(), free_port()
    d = json.loads((REPO / "xapps/occ/config-file.json").read_text())
    by_name = {"http": http, "rmr-data": rmr, "rmr-route": rmr + 1}
    for p in d["messaging"]["ports"]:
        p["port"] = by_name[p["name"]]
    d["controls"].update({"reporting_period_ms": case.period_ms, "granularity_ms": 1,
                          "feedback_min_change": 0.0,
                          "feedback_max_interval_ms": REFRESH_OFF_MS})  # fmt: skip
    argv = [sys.executable, "-m", "octoric.xapps.occ", "--rmr-port", str(rmr),
            "--http-port", str(http)]  # fmt: skip
    if replica is None:
        return _spawn(stack, tmp, "occ", argv, rmr, http, d), http
    with _env(shards.ENV, f"occ-{replica}"):
        return _spawn(stack, tmp, f"occ-{replica}", argv, rmr, http, d), http


def measure(case: LoopCase, seconds: float = 30.0, warmup_s: float = 3.0, seed: int = 5,
            rt_priority: int | None = None) -> dict[str, Any]:  # fmt: skip
    """One configuration, one run: the row ``octoric bench loop --json`` prints for it.
    ``rt_priority``: e2term's and the xApp's SCHED_FIFO priority (None: normal scheduling);
    the gNBs (this process) and the receiver run at normal priority either way."""
    with tempfile.TemporaryDirectory(prefix="octoric-loop-bench-") as d:
        tmp = Path(d)
        traces = tmp / "latency-trace"
        # e2term and the xApp inherit both: each marks the indications it passes
        # (contracts.latency_trace), and runs at the priority asked (octoric/realtime.py)
        with (
            _env(latency_trace.ENV, str(traces)),
            _env(realtime.ENV, str(rt_priority or 0)),
            running_ric(tmp) as stack,
        ):
            row, arrivals = _run_case(stack, tmp, case, seconds, warmup_s, seed)
        row["breakdown_ms"] = _breakdown(traces, arrivals)
        row["rt_priority"] = rt_priority
        return row


Arrival = tuple[str, int, int | None]  # trace key, read by the receiver, socket arrival (ns)


def _breakdown(traces: Path, arrivals: list[Arrival]) -> dict[str, dict[str, float | None]]:
    """Where the time goes, from the marks: the gNB's socket write -> e2term's arrival of the
    indication (TCP hop and e2term's loop), e2term -> the OCC handler's entry (RMR hop and
    queue), the handler until the feedback datagrams are sent, e2term -> sent (the RIC's
    share), sent -> the datagram's read by the receiver (UDP hop and the receiver's wake-up),
    split at its arrival at the receiver's socket (kernel stamp); p50 / p99 / p99.9 in
    ms. The first four are over every indication of the run; the last over the feedback
    samples (``arrivals``) that the end-to-end figures use."""
    points = ("gnb_out", "e2term_in", "occ_in", "occ_out")
    m = {p: latency_trace.read_marks(traces, p) for p in points}
    out = {}
    for name, a, b in (("gnb_to_e2term", "gnb_out", "e2term_in"),
                       ("e2term_to_handler", "e2term_in", "occ_in"),
                       ("handler_to_feedback_sent", "occ_in", "occ_out"),
                       ("e2term_to_feedback_sent", "e2term_in", "occ_out")):  # fmt: skip
        out[name] = _span(np.asarray(latency_trace.spans_ms(m[a], m[b])))
    sent = m["occ_out"]
    one = [(k, at, kt) for k, at, kt in arrivals if len(sent.get(k, ())) == 1]
    out["feedback_sent_to_received"] = _span(np.asarray([(at - sent[k][0]) / 1e6
                                                         for k, at, _ in one]))  # fmt: skip
    out["feedback_sent_to_socket"] = _span(
        np.asarray([(kt - sent[k][0]) / 1e6 for k, _, kt in one if kt is not None])
    )
    out["socket_to_read"] = _span(np.asarray([(at - kt) / 1e6 for _, at, kt in arrivals
                                              if kt is not None]))  # fmt: skip
    return out


def _span(v: np.ndarray) -> dict[str, float | None]:
    return {
        "p50": percentile(v, 50),
        "p99": percentile(v, 99),
        "p999": percentile(v, 99.9),
        "n": len(v),
    }


def _run_case(stack: RicStack, tmp: Path, case: LoopCase, seconds: float, warmup_s: float,
              seed: int) -> tuple[dict[str, Any], list[Arrival]]:  # fmt: skip
    """The row, and each measured feedback sample's trace key and arrival (ns)."""
    loop = LoopThread()
    procs: list[Proc] = []
    nodes = [LoadNode("127.0.0.1", stack.rt.ric.e2_port, g) for g in range(case.n_nodes)]
    out_file = tmp / "feedback.json"
    try:
        for n in nodes:
            loop.call(_start(n))
        occs = ([start_occ(stack, tmp, case)] if case.replicas == 1
                else [start_occ(stack, tmp, case, i) for i in range(case.replicas)])  # fmt: skip
        procs += [o for o, _ in occs]
        https = [h for _, h in occs]
        http = https[0]  # flows go to the first; replicas hand them to their UEs' owners
        _wait(lambda: all(n.subs for n in nodes), 90, "KPM subscriptions from the OCC xApp", procs)
        if case.replicas > 1:  # and each node with the replica that owns it, settled
            _wait(lambda: _split_settled(https, nodes, case.replicas), 60,
                  "the nodes split over the OCC replicas", procs)  # fmt: skip
        messages = [variant_messages(n.node, case, seed) for n in nodes]
        total_s = warmup_s + seconds
        recv = subprocess.Popen(_receiver_argv(out_file, total_s + 15), stdout=subprocess.PIPE,
                                text=True)  # fmt: skip
        assert recv.stdout is not None
        port = json.loads(recv.stdout.readline())["port"]
        base = f"http://127.0.0.1:{http}/occ/v1/flows"
        for n in nodes:
            for u in flow_rows(case):
                ue = ue_id(n.node, u)
                _post(base, {"id": f"f{ue}", "ue": ue, "address": f"127.0.0.1:{port}",
                             "format": "json"}, stack.rt.api_token)  # fmt: skip
        e2t = _e2term_pid(stack)
        pids: dict[str, list[int]] = {"e2term": [e2t], "occ_xapp": [o.proc.pid for o, _ in occs],
                                      "gnbs": [os.getpid()], "receiver": [recv.pid]}  # fmt: skip
        t0_ms = int(time.time() * 1000) - case.period_ms
        start = time.monotonic() + 0.2

        lib = _loadgen()
        if lib is not None:  # the native replay, in its own thread (ctypes drops the GIL)
            fut: Any = concurrent.futures.ThreadPoolExecutor(1).submit(
                blast_native, lib, nodes, messages, case, t0_ms, start, total_s
            )
        else:

            async def all_nodes() -> None:
                await asyncio.gather(*(blast(n, messages[i], case, t0_ms, start, total_s)
                                       for i, n in enumerate(nodes)))  # fmt: skip

            fut = asyncio.run_coroutine_threadsafe(all_nodes(), loop.loop)
        time.sleep(max(0.0, start + warmup_s - time.monotonic()))
        st0 = _status_all(https)
        cpu0 = {k: sum(_cpu_s(p) for p in ps) for k, ps in pids.items()}
        t_meas = time.monotonic()
        fut.result(timeout=total_s + 60)
        cpu1 = {k: sum(_cpu_s(p) for p in ps) for k, ps in pids.items()}
        elapsed = time.monotonic() - t_meas
        sent = sum(len(n.sent) for n in nodes)
        deadline = time.monotonic() + 10
        st1 = _status_all(https)
        while _seen(st1) < sent and time.monotonic() < deadline:
            time.sleep(0.2)
            st1 = _status_all(https)
        time.sleep(0.5)  # the last datagrams
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.sendto(b"stop", ("127.0.0.1", port))
        recv.wait(timeout=30)
        fb = json.loads(out_file.read_text())
    finally:
        stop_all(loop, nodes, procs)
        for n in nodes:
            n.trace.close()
    # the measured indications by their slot in the schedule, not by when the sender got to
    # them: an indication of the warm-up sent late is still the warm-up's
    first = t0_ms + round(warmup_s * 1000 / case.period_ms) * case.period_ms + case.period_ms - 1
    latency = _samples(nodes, fb, first)
    row = _figures(case, nodes, latency, st0, st1, cpu0, cpu1, elapsed, first)
    arrivals = [(nodes[node].keys[t_ms], round(at * 1e9), None if kt is None else round(kt * 1e9))
                for node, t_ms, _, at, kt in latency if t_ms in nodes[node].keys]  # fmt: skip
    return row, arrivals


def _samples(nodes: list[LoadNode], fb: dict[str, Any], first: int) -> list[Sample]:
    """The latency samples (``Sample``) of each datagram that answers a measured indication
    (newest granule ``first`` ms or later: ``LoadNode.sent``'s key; the first arrival per UE
    and t_ms)."""
    sent_at = {(n.node, t_ms): at for n in nodes for t_ms, at in n.sent}
    out = []
    for ue, t_ms, at, kt in fb["first"]:
        node = ue // 1000 - 1
        t = sent_at.get((node, t_ms))
        if t is not None and t_ms >= first:
            out.append((node, t_ms, t, at, kt))
    return out


async def _start(node: LoadNode) -> None:
    node.start()
    while not node.connected:
        await asyncio.sleep(0.02)


def _shed(status: dict[str, Any]) -> int:
    """Messages the xApp shed: its dispatch queue full, or RMR's receive ring full (the
    library drops there when the xApp's receive thread falls behind; issue #43)."""
    rmr = status.get("rmr", {})
    return int(rmr.get("shed_queue_full", 0)) + int(rmr.get("dropped_ring_full", 0))


def _seen(status: dict[str, Any]) -> int:
    """Indications the xApp took off RMR (processed or rejected) and any it shed."""
    c = status.get("counters", {})
    return int(c.get("indications", 0)) + _shed(status)


def _processed(status: dict[str, Any]) -> int:
    c = status.get("counters", {})
    rejected = sum(int(v) for v in status.get("rejected_indications", {}).values())
    return int(c.get("indications", 0)) - rejected


def _figures(case: LoopCase, nodes: list[LoadNode], latency: list[Sample], st0: dict[str, Any],
             st1: dict[str, Any], cpu0: dict[str, float], cpu1: dict[str, float],
             elapsed: float, first: int) -> dict[str, Any]:  # fmt: skip
    sent_total = sum(len(n.sent) for n in nodes)
    lat = [(at - t) * 1e6 for _, _, t, at, _ in latency]
    arr = np.asarray(lat)
    sock = np.asarray([(kt - t) * 1e6 for _, _, t, _, kt in latency if kt is not None])
    flows = case.n_nodes * case.flows_per_node
    measured = sum(1 for n in nodes for t_ms, _ in n.sent if t_ms >= first)
    expected = measured * case.flows_per_node
    processed = _processed(st1)
    lost = sent_total - processed
    shed = _shed(st1)
    samples = (processed - _processed(st0)) * case.n_ues * case.period_ms
    per_sample = {
        k: round((cpu1[k] - cpu0[k]) / samples * 1e6, 3) if samples else None for k in cpu0
    }
    return {
        "config": case.name,
        "p50_us": percentile(arr, 50, 1),
        "p99_us": percentile(arr, 99, 1),
        "p999_us": percentile(arr, 99.9, 1),
        # the same samples at the datagram's arrival at the receiver's socket (kernel stamp):
        # without the receiving process's own wake-up and read
        "socket_p50_us": percentile(sock, 50, 1),
        "socket_p99_us": percentile(sock, 99, 1),
        "socket_p999_us": percentile(sock, 99.9, 1),
        "lost": int(lost),
        "ue_samples_per_s": round(samples / elapsed, 1) if elapsed else None,
        "offered_ue_samples_per_s": case.ue_samples_per_s,
        "indications_sent": sent_total,
        "indications_processed": processed,
        "rejected": st1.get("rejected_indications", {}),
        # the xApp's native path (issue #44): on, and what it left to the Python one, by why
        "native_path": st1.get("native_path"),
        "native_declined": st1.get("native_declined", {}),
        "shed": shed,
        "flows": flows,
        "latency_samples": len(lat),
        "feedback_possible": expected,
        "cpu_us_per_ue_sample": per_sample,
        "cpu_share": {k: round((cpu1[k] - cpu0[k]) / elapsed, 3) for k in cpu0},
        "xapp_inside_ms": st1.get("latency_ms"),
        "overloaded": st1.get("overloaded"),
        "sustained": sustained(int(lost), shed, percentile(arr, 99, 1)),
        "xapp_counters": st1.get("counters", {}),
        "xapp_rmr": st1.get("rmr", {}),
    }


def sustained(lost: int, shed: int, p99_us: float | None) -> bool:
    """Kept pace: nothing lost or shed, and no standing queue (p99 within 100 ms)."""
    return lost == 0 and shed == 0 and p99_us is not None and p99_us <= SUSTAINED_P99_US


NORMAL = " (normal scheduling)"  # the config name's suffix of the comparison row


def cli_json(quick: bool) -> list[dict[str, Any]]:
    """Every case with e2term and the xApp at SCHED_FIFO ``RT_PRIORITY`` where this process
    may grant it (as the handover benchmark runs them: a RAN host's setting for its real-time
    work, ``OCTORIC_RT_PRIORITY``), then the latency case again at normal scheduling. The
    latency case runs ``LATENCY_RUNS`` times at each setting: its row is the run with the
    median p99, and ``p99_runs_us`` lists every run's (one 30 s run's p99 swings by 0.3 ms
    on this 2-core VM)."""
    prio = RT_PRIORITY if realtime.may_grant(RT_PRIORITY) else None
    seconds = 5.0 if quick else 30.0
    runs = 1 if quick else LATENCY_RUNS
    rows = []
    for c in CASES:
        rows.append(_median_run(c, seconds, prio, runs if c is CASES[1] else 1))
    if prio is not None:  # the latency case and issue #44's, at normal scheduling beside
        for c in (CASES[1], CASES[3]):
            row = _median_run(c, seconds, None, runs if c is CASES[1] else 1)
            row["config"] += NORMAL
            rows.append(row)
    return rows


def _median_run(case: LoopCase, seconds: float, prio: int | None, runs: int) -> dict[str, Any]:
    """``runs`` measurements of ``case``: the one with the median p99, with every p99."""
    got = [measure(case, seconds=seconds, rt_priority=prio) for _ in range(runs)]
    by_p99 = sorted(got, key=lambda r: float("inf") if r["p99_us"] is None else r["p99_us"])
    row = by_p99[(len(by_p99) - 1) // 2]
    row["p99_runs_us"] = [r["p99_us"] for r in got]
    row["socket_p99_runs_us"] = [r["socket_p99_us"] for r in got]
    return row


def _scheduling(r: dict[str, Any]) -> str:
    p = r.get("rt_priority")
    return f"e2term and the xApp SCHED_FIFO {p} (OCTORIC_RT_PRIORITY)" if p else "normal scheduling"


def _run(quick: bool) -> list[BenchResult]:
    rows = cli_json(quick)
    out = []
    for r in rows:
        big = r["config"] in THROUGHPUT_CASES  # 1 M UE-samples/s
        p99_target = P99_TARGETS_US.get(r["config"])  # issue #44's latency targets
        p50_target = P50_TARGETS_US.get(r["config"])
        note = (f"{r['indications_sent']} indications sent, {r['indications_processed']} "
                f"processed, {r['shed']} shed; {r['latency_samples']} feedback samples of "
                f"{r['feedback_possible']} possible ({r['flows']} flows); CPU us per UE-sample "
                f"{r['cpu_us_per_ue_sample']}; p50 {r['p50_us']} us, p99.9 {r['p999_us']} us; "
                f"{_runs_note(r)}"
                f"sustained (0 lost, 0 shed, p99 <= {SUSTAINED_P99_US / 1000:.0f} ms): "
                f"{'yes' if r['sustained'] else 'no'}; {_scheduling(r)}; breakdown (ms) "
                f"{_breakdown_note(r['breakdown_ms'])}; {ANCHORS}")  # fmt: skip
        out.append(BenchResult(
            f"loop {r['config']}: indication sent -> feedback received p99", r["p99_us"] or 0.0,
            "us", higher_is_better=False,
            target=f"<= {p99_target:.0f} us" if p99_target else None,
            target_met=(r["p99_us"] is not None and r["p99_us"] <= p99_target)
            if p99_target else None,
            note=note, samples=len(r["p99_runs_us"]),
        ))  # fmt: skip
        if p50_target:
            out.append(BenchResult(
                f"loop {r['config']}: indication sent -> feedback received p50",
                r["p50_us"] or 0.0, "us", higher_is_better=False,
                target=f"<= {p50_target:.0f} us",
                target_met=r["p50_us"] is not None and r["p50_us"] <= p50_target,
                samples=len(r["p99_runs_us"]),
            ))  # fmt: skip
        out.append(BenchResult(
            f"loop {r['config']}: indication sent -> feedback at the receiver's socket p99",
            r["socket_p99_us"] or 0.0, "us", higher_is_better=False,
            samples=len(r["p99_runs_us"]),
            note=(f"the same samples stamped by the kernel on arrival (SO_TIMESTAMPNS): "
                  f"without the receiving process's wake-up and read; p50 "
                  f"{r['socket_p50_us']} us, p99.9 {r['socket_p999_us']} us"),
        ))  # fmt: skip
        out.append(BenchResult(
            f"loop {r['config']}: indications lost", float(r["lost"]), "count",
            higher_is_better=False, target="0", target_met=r["lost"] == 0,
        ))  # fmt: skip
        out.append(BenchResult(
            f"loop {r['config']}: UE-samples/s into the OCC xApp", r["ue_samples_per_s"] or 0.0,
            "UE-samples/s",
            target=f">= {TARGET_UE_SAMPLES:,.0f} UE-samples/s" if big else None,
            target_met=(r["ue_samples_per_s"] or 0) >= 0.99 * TARGET_UE_SAMPLES and r["lost"] == 0
            if big else None,
        ))  # fmt: skip
    return out


def _runs_note(r: dict[str, Any]) -> str:
    runs = r["p99_runs_us"]
    if len(runs) < 2:
        return ""
    return (f"the median of {len(runs)} runs' p99 (every run: {runs} us; at the socket: "
            f"{r['socket_p99_runs_us']} us); ")  # fmt: skip


def _breakdown_note(b: dict[str, dict[str, float | None]]) -> str:
    return "; ".join(f"{k} p50 {v['p50']} p99 {v['p99']}" for k, v in b.items())


BENCHMARKS = [
    Benchmark("loop", "loop", _run,
              "the OCC control loop: gNB indication -> e2term -> OCC xApp -> UDP feedback")
]  # fmt: skip
