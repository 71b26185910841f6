"""Issue #43, replayed as a hostile local process (user ``nobody``) against a running RIC stack
and the OCC xApp: every attack fails and is counted.

Before: RMR trusted whoever connected and the sender field of what they sent. A frame claiming
to come from submgr made e2term delete a subscription at the node; a RIC control claiming a
registered xApp was forwarded and the node's answer came back to the attacker; an indication
sent straight to the OCC xApp's RMR port was taken; an old signed route table (routes.rt was
0644) re-admitted a deregistered endpoint; 1000 idle connections gave the xApp 1000 threads and
four half-sent 60 MB frames 185 MB. Now the library admits local peers of the run's user only
(the kernel's sock_diag says whose a socket is), checks each frame's sender against its
connection, refuses route tables that are not newer, and bounds connections, frame time and
frame size; each refusal is counted (e2term's ``octoric_e2term_rmr_refused_total{kind=...}``,
the xApp's ``rmr.refused_<kind>``).

Needs root (it drops to nobody in the attacker's process); skipped otherwise."""

from __future__ import annotations

import json
import os
import pwd
import stat
import struct
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from testkit.occ_xapp import OccProc
from testkit.rest import wait_until

from octoric.contracts import message_types as mt
from octoric.e2sm import e2ap
from octoric.e2sm.e2ap_ies import RicRequestId
from octoric.e2sm.node_session import ScriptedNode
from octoric.redis_server import free_port
from octoric.ric.stack import LoopThread, RicStack, free_pair, running_ric

from .test_a1 import http
from .test_ric_bad_input import metrics
from .test_rmr_senders import _control

# nobody cannot run the venv's interpreter (under /root): the system one runs the attacker
PYTHON = "/usr/bin/python3"
pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        os.geteuid() != 0, reason="runs the attacker as user nobody: needs root to drop to it"
    ),
    pytest.mark.skipif(
        not os.access(PYTHON, os.X_OK), reason=f"{PYTHON} (the attacker's interpreter) missing"
    ),
]

# The attacker: stdlib only (nobody may not read the venv), as a separate process.
ATTACKER = r"""
import json, os, resource, socket, sys, time
mode, args = sys.argv[1], sys.argv[2:]
out = {}
if mode == "send":  # send frames (hex on stdin, one a line); what comes back
    port, wait = int(args[0]), float(args[1])
    frames = [bytes.fromhex(l) for l in sys.stdin.read().split()]
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=2)
        for f in frames:
            s.sendall(f)
        out["sent"] = True
        s.settimeout(wait)
        got = b""
        t = time.time()
        while time.time() - t < wait:
            try:
                b = s.recv(65536)
            except socket.timeout:
                break
            if not b:
                break
            got += b
        out["got"] = len(got)
        out["text"] = got[50 + 284:].split(b"\0")[0].decode(errors="replace") if got else ""
    except OSError as e:
        out["error"] = repr(e)
elif mode == "idle":  # n idle connections held for a while
    port, n, hold = int(args[0]), int(args[1]), float(args[2])
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    socks = []
    for _ in range(n):
        try:
            socks.append(socket.create_connection(("127.0.0.1", port), timeout=2))
        except OSError:
            pass
    out["connected"] = len(socks)
    print(json.dumps(out), flush=True)
    time.sleep(hold)
    sys.exit(0)
elif mode == "huge":  # k connections each sending half of a frame declaring `mb` MB
    port, k, mb, hold = int(args[0]), int(args[1]), int(args[2]), float(args[3])
    total = mb << 20
    prefix = total.to_bytes(4, "little") + total.to_bytes(4, "big") + b"$" + bytes(41)
    socks, sent = [], 0
    chunk = bytes(1 << 20)
    for _ in range(k):
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=2)
            s.settimeout(5)
            s.sendall(prefix)
            for _ in range(mb // 2):
                s.sendall(chunk)
                sent += len(chunk)
            socks.append(s)
        except OSError:
            pass
    out["sent_mb"] = sent >> 20
    print(json.dumps(out), flush=True)
    time.sleep(hold)
    sys.exit(0)
elif mode == "read":
    try:
        open(args[0]).read()
        out["read"] = True
    except OSError as e:
        out["read"] = False
        out["error"] = repr(e)
print(json.dumps(out), flush=True)
"""

NOBODY = pwd.getpwnam("nobody")


def _drop() -> None:
    os.setgroups([])
    os.setgid(NOBODY.pw_gid)
    os.setuid(NOBODY.pw_uid)


def attack(mode: str, *args: object, stdin: str = "", as_nobody: bool = True) -> dict[str, Any]:
    """Run the attacker (as nobody unless told) until it prints its result."""
    p = subprocess.Popen(
        [PYTHON, "-I", "-c", ATTACKER, mode, *map(str, args)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        preexec_fn=_drop if as_nobody else None,
        cwd="/",
        text=True,
    )
    assert p.stdin is not None and p.stdout is not None
    p.stdin.write(stdin)
    p.stdin.close()
    line = p.stdout.readline()
    attack.procs.append(p)  # type: ignore[attr-defined]
    return dict(json.loads(line))


attack.procs = []  # type: ignore[attr-defined]


def reap() -> None:
    for p in attack.procs:  # type: ignore[attr-defined]
        p.kill()
        p.wait()
    attack.procs.clear()  # type: ignore[attr-defined]


def frame(mtype: int, payload: bytes, src: str, *, meid: str = "", sub_id: int = -1) -> bytes:
    """An SI95 frame built by hand, naming ``src`` (and its srcip) as its sender."""
    hdr = bytearray(280)
    struct.pack_into(">iII", hdr, 0, mtype, len(payload), 3)
    hdr[12:44] = b"X" * 32
    hdr[76 : 76 + len(src)] = src.encode()
    hdr[140 : 140 + len(meid)] = meid.encode()
    struct.pack_into(">IIIIIi", hdr, 192, 0, 280, 0, 4, 0, sub_id)
    hdr[216 : 216 + len(src)] = src.encode()
    body = bytes(hdr) + b"\0\0\0\0" + payload
    total = 50 + len(body)
    return struct.pack("<I", total) + struct.pack(">I", total) + b"$" + bytes(41) + body


@dataclass
class Env:
    stack: RicStack
    lt: LoopThread
    node: ScriptedNode
    occ: OccProc
    tmp: Path


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    tmp = tmp_path_factory.mktemp("hostile")
    with running_ric(tmp) as stack:
        lt = LoopThread()
        occ = OccProc(stack, tmp, free_pair(), free_port())
        node = None
        try:

            async def make() -> ScriptedNode:
                # no indications of its own (at most one): the xApp's receive counts then
                # show only what the attacker gets through
                n = ScriptedNode("127.0.0.1", stack.rt.ric.e2_port, "tcp", period_s=3600)
                n.start()
                return n

            node = lt.call(make())
            wait_until(node.setup_done.is_set, 20, "E2 setup")
            occ.start()
            occ.wait_ready(60)
            yield Env(stack, lt, node, occ, tmp)
        finally:
            reap()
            occ.stop()
            if node is not None:
                lt.call(node.stop())
            lt.stop()


def e2term_refused(e: Env, kind: str) -> float:
    text = metrics(e.stack, "e2term_http_port")
    for line in text.splitlines():
        if line.startswith(f'octoric_e2term_rmr_refused_total{{kind="{kind}"}}'):
            return float(line.split()[-1])
    return 0.0


def e2term_pdus_out(e: Env, mtype: int) -> float:
    """E2AP PDUs e2term sent to nodes for RMR messages of ``mtype``."""
    text = metrics(e.stack, "e2term_http_port")
    want = f'octoric_e2term_pdus_out_total{{kind="{mt.name(mtype)}"}}'
    return sum(float(line.split()[-1]) for line in text.splitlines() if line.startswith(want))


def occ_rmr(e: Env) -> dict[str, int]:
    assert not e.occ.alive(), e.occ.alive()
    return dict(e.occ.status()["rmr"])


def _wait(cond: Any, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.1)
    return bool(cond())


def proc_status(pid: int) -> dict[str, int]:
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        k, _, v = line.partition(":")
        if k in ("Threads", "VmRSS"):
            out[k] = int(v.split()[0])
    return out


def test_forged_subscription_delete(env: Env) -> None:
    """A subscription delete naming submgr as its sender, from nobody: e2term never sees it."""
    submgr = env.stack.rt.platform_endpoints().submgr
    e2t_port = env.stack.rt.ric.e2term_rmr_port
    pdu = e2ap.encode_e2ap(e2ap.RicSubscriptionDeleteRequest(RicRequestId(1, 1), 2))
    before = e2term_pdus_out(env, mt.RIC_SUB_DEL_REQ)
    rej0 = e2term_refused(env, "peers_rejected")
    f = frame(mt.RIC_SUB_DEL_REQ, pdu, submgr, meid=env.node.meid).hex()
    r = attack("send", e2t_port, 2, stdin=f)
    time.sleep(1.0)
    assert e2term_pdus_out(env, mt.RIC_SUB_DEL_REQ) == before, f"forwarded to the node: {r}"
    assert _wait(lambda: e2term_refused(env, "peers_rejected") > rej0), r


def test_forged_ric_control(env: Env, tmp_path: Path) -> None:
    """A RIC control naming a registered controller, from nobody: not forwarded, and nothing
    comes back to the attacker. The same forgery from another process of the run's user
    (not the controller) is dropped as a forged sender."""
    import socket

    ctl = socket.socket()  # the real controller's RMR port (this process)
    ctl.bind(("127.0.0.1", 0))
    ctl.listen()
    ctl_ep = f"127.0.0.1:{ctl.getsockname()[1]}"
    desc = {"name": "ctl", "messaging": {"ports": [
        {"name": "rmr-data", "container": "ctl", "port": ctl.getsockname()[1],
         "rxMessages": ["RIC_CONTROL_ACK"], "txMessages": ["RIC_CONTROL_REQ"],
         "policies": []}]}}  # fmt: skip
    body = {"appName": "ctl", "appInstanceName": "ctl", "appVersion": "1",
            "httpEndpoint": "127.0.0.1:8999", "rmrEndpoint": ctl_ep,
            "config": json.dumps(desc)}  # fmt: skip
    assert http("POST", env.stack.url("appmgr_port", "/ric/v1/register"), body)[0] == 201
    try:
        e2t_port = env.stack.rt.ric.e2term_rmr_port
        f = frame(mt.RIC_CONTROL_REQ, _control(7), ctl_ep, meid=env.node.meid).hex()
        n0 = len(env.node.stats.controls)
        rej0 = e2term_refused(env, "peers_rejected")
        r = attack("send", e2t_port, 3, stdin=f)
        assert r.get("got", 0) == 0, f"the node's answer went to the attacker: {r}"
        assert _wait(lambda: e2term_refused(env, "peers_rejected") > rej0)
        assert len(env.node.stats.controls) == n0, "the forged control reached the node"
        # the run's own user, another process than the controller: a forged sender
        forged0 = e2term_refused(env, "forged_senders")
        r = attack("send", e2t_port, 3, stdin=f, as_nobody=False)
        assert r.get("got", 0) == 0, r
        assert _wait(lambda: e2term_refused(env, "forged_senders") > forged0)
        assert len(env.node.stats.controls) == n0
    finally:
        ctl.close()
        http("POST", env.stack.url("appmgr_port", "/ric/v1/deregister"), {"appName": "ctl"})


def test_forged_indication_to_an_xapp(env: Env) -> None:
    """An indication sent straight to the OCC xApp's RMR port by nobody is never received."""
    e2t = f"127.0.0.1:{env.stack.rt.ric.e2term_rmr_port}"
    before = occ_rmr(env)
    attack("send", env.occ.rmr_port, 1,
           stdin=frame(mt.RIC_INDICATION, b"\x00" * 64, e2t, sub_id=1).hex())  # fmt: skip
    assert _wait(
        lambda: (
            occ_rmr(env).get("refused_peers_rejected", 0) > before.get("refused_peers_rejected", 0)
        )
    ), occ_rmr(env)
    after = occ_rmr(env)
    for k in ("rx_unexpected", f"rx_{mt.RIC_INDICATION}"):
        assert after.get(k, 0) == before.get(k, 0), (k, before, after)


def test_replayed_route_table(env: Env) -> None:
    """routes.rt is the user's only; an old (signed) table that still routes to a deregistered
    xApp, replayed to e2term's route port, is refused: nobody cannot even connect, and the
    run's own user gets 'replayed'."""
    seed = env.stack.rt.seed_file
    assert stat.S_IMODE(seed.stat().st_mode) == 0o600
    assert attack("read", str(seed))["read"] is False
    gone = "127.0.0.1:4998"
    desc = {"name": "gone", "messaging": {"ports": [
        {"name": "rmr-data", "container": "gone", "port": 4998,
         "rxMessages": ["OCTORIC_ABW_REPORT"], "txMessages": [], "policies": []}]}}  # fmt: skip
    body = {"appName": "gone", "appInstanceName": "gone", "appVersion": "1",
            "httpEndpoint": "127.0.0.1:8998", "rmrEndpoint": gone,
            "config": json.dumps(desc)}  # fmt: skip
    assert http("POST", env.stack.url("appmgr_port", "/ric/v1/register"), body)[0] == 201
    assert _wait(lambda: gone in seed.read_text())
    old = seed.read_text()  # what a reader of routes.rt could have kept
    time.sleep(1.0)  # pushed to every platform endpoint
    http("POST", env.stack.url("appmgr_port", "/ric/v1/deregister"), {"appName": "gone"})
    assert _wait(lambda: gone not in seed.read_text())
    time.sleep(1.0)  # the newer table pushed
    route_port = env.stack.rt.ric.e2term_rmr_port + 1
    src = f"127.0.0.1:{env.stack.rt.ric.submgr_rmr_port}"  # any name: nobody's is refused
    rej0 = e2term_refused(env, "peers_rejected")
    r = attack("send", route_port, 2, stdin=frame(mt.RMRRM_TABLE_DATA, old.encode(), src).hex())
    assert not r.get("text", "").startswith("OK"), f"nobody's replay was installed: {r}"
    assert _wait(lambda: e2term_refused(env, "peers_rejected") > rej0)
    # the same replay from the run's user (it may connect): refused as a replay, counted
    from octoric.ric.rmr_endpoint import RmrEndpoint

    async def replay() -> str:
        import asyncio

        e = RmrEndpoint("replayer", free_pair())
        e.start()
        try:
            assert e.wh_send_to(f"127.0.0.1:{route_port}", mt.RMRRM_TABLE_DATA, old.encode())
            msg = await asyncio.wait_for(e.receive(), 5)
            return msg.payload.rstrip(b"\0").decode()
        finally:
            e.close()

    replayed0 = e2term_refused(env, "rt_replayed")
    ack = env.lt.call(replay())
    assert ack.startswith("ERR") and "replayed" in ack, ack
    assert _wait(lambda: e2term_refused(env, "rt_replayed") > replayed0)


def test_idle_connection_flood(env: Env) -> None:
    """1000 idle connections: nobody's are refused (no threads); the run's user's stop at the
    listener's cap (RMR_MAX_CONNS, 256)."""
    assert not env.occ.alive(), env.occ.alive()
    pid = env.occ.proc.pid if env.occ.proc else 0
    base = proc_status(pid)["Threads"]
    before = occ_rmr(env)
    r = attack("idle", env.occ.rmr_port, 1000, 30)
    assert r["connected"] >= 900, r
    time.sleep(2.0)
    peak = proc_status(pid)["Threads"]
    print(f"threads: {base} before, {peak} with nobody's 1000 connections")
    assert peak < base + 20, f"{base} -> {peak} threads"
    assert _wait(
        lambda: (
            occ_rmr(env).get("refused_peers_rejected", 0)
            >= before.get("refused_peers_rejected", 0) + 900
        )
    )
    reap()
    r = attack("idle", env.occ.rmr_port, 1000, 30, as_nobody=False)
    time.sleep(2.0)
    peak = proc_status(pid)["Threads"]
    print(f"threads: {peak} with the run's user's 1000 connections (cap 256)")
    assert peak <= base + 256 + 20, f"{base} -> {peak} threads"
    assert _wait(lambda: occ_rmr(env).get("refused_conns_over_cap", 0) >= 700)
    reap()


def test_half_sent_huge_frames(env: Env) -> None:
    """Four half-sent 60 MB frames: nobody's connections are refused, the run's user's over the
    per-connection bound (RMR_MAX_CONN_BYTES, 16 MiB) are closed; memory stays put."""
    assert not env.occ.alive(), env.occ.alive()
    pid = env.occ.proc.pid if env.occ.proc else 0
    rss0 = proc_status(pid)["VmRSS"]
    before = occ_rmr(env)
    attack("huge", env.occ.rmr_port, 4, 60, 10)
    time.sleep(1.0)
    print(f"RSS: {rss0} kB before, {proc_status(pid)['VmRSS']} kB after nobody's frames")
    assert proc_status(pid)["VmRSS"] < rss0 + 30_000, (rss0, proc_status(pid))
    assert occ_rmr(env).get("refused_peers_rejected", 0) > before.get("refused_peers_rejected", 0)
    reap()
    attack("huge", env.occ.rmr_port, 4, 60, 10, as_nobody=False)
    time.sleep(1.0)
    print(f"RSS: {proc_status(pid)['VmRSS']} kB after the run's user's frames")
    assert proc_status(pid)["VmRSS"] < rss0 + 30_000, (rss0, proc_status(pid))
    assert _wait(
        lambda: (
            occ_rmr(env).get("refused_frames_too_big", 0)
            >= before.get("refused_frames_too_big", 0) + 4
        )
    )
    reap()
