"""Issue #44 point 3: OCC replicas split the E2 nodes; a replica killed with -9 has its nodes
taken over within 2 s, no UE left without feedback longer than that.

Ten scripted gNBs (two UEs each) on the embedded RIC, two or three OCC xApp processes with
``OCTORIC_OCC_REPLICA`` set, one flow per UE registered with the first replica only. Which
replica sent a datagram is told by its source address (each process has its own socket)."""

from __future__ import annotations

import itertools
import json
import socket
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest
from ricsdl.syncstorage import SyncStorage
from testkit.occ_xapp import OccProc
from testkit.rest import http, wait_until

from octoric.e2sm.node_session import ScriptedNode
from octoric.redis_server import free_port
from octoric.ric.stack import LoopThread, free_pair, running_ric
from octoric.xapps.base.sdl import SdlStore
from octoric.xapps.occ import shards

from .kpm_source import OccIndications

N_NODES = 10
TAKEOVER_S = 2.0


def test_owner_is_stable_and_moves_only_what_it_must() -> None:
    nodes = [f"gnb_{i:03d}" for i in range(200)]
    three = ("occ-0", "occ-1", "occ-2")
    before = {m: shards.owner_of(m, three) for m in nodes}
    assert before == {m: shards.owner_of(m, reversed(three)) for m in nodes}  # order-free
    counts = {r: sum(1 for o in before.values() if o == r) for r in three}
    assert all(40 <= c <= 90 for c in counts.values()), counts  # spread (200 / 3 = 67)
    after = {m: shards.owner_of(m, ("occ-0", "occ-2")) for m in nodes}
    moved = [m for m in nodes if before[m] != after[m]]
    assert moved and all(before[m] == "occ-1" for m in moved)  # only the leaver's nodes
    joined = {m: shards.owner_of(m, (*three, "occ-3")) for m in nodes}
    assert all(joined[m] in (before[m], "occ-3") for m in nodes)  # only to the joiner
    assert shards.owner_of("x", ()) is None


def test_replica_id_is_checked() -> None:
    assert shards.replica_id({}) is None
    assert shards.replica_id({shards.ENV: "occ-7f9c"}) == "occ-7f9c"
    with pytest.raises(ValueError, match="1-63 characters"):
        shards.replica_id({shards.ENV: "a b"})


def test_membership_sees_joins_and_deaths() -> None:
    store = SyncStorage(fake_db_backend="dict")
    a = shards.Membership(SdlStore("occ", storage=store), "a", {})
    b = shards.Membership(SdlStore("occ", storage=store), "b", {})
    assert a.view is None and a.tick() is None  # it listens before it claims anything
    time.sleep(shards.SETTLE_S)
    change = a.tick()
    assert change is not None and change[1].live == ("a",) and change[0] is None
    b.tick()
    change = a.tick()
    assert change is not None and change[1].live == ("a", "b")
    assert a.tick() is None  # nothing changed
    time.sleep(shards.DEAD_AFTER_S + 0.1)  # b stops beating
    change = a.tick()
    assert change is not None and change[1].live == ("a",)


class _Node:
    def __init__(self, node: ScriptedNode, ues: list[int]) -> None:
        self.node, self.ues = node, ues


@pytest.fixture
def rig(tmp_path: Path) -> Iterator[tuple[object, LoopThread, list[_Node]]]:
    with running_ric(tmp_path) as stack:
        lt = LoopThread()
        nodes: list[_Node] = []
        try:
            for i in range(N_NODES):
                ues = [1000 + 10 * i, 1001 + 10 * i]
                src = OccIndications(ues, pool_periods=4, seed=i)

                async def make(i: int = i, src: OccIndications = src) -> ScriptedNode:
                    n = ScriptedNode("127.0.0.1", stack.rt.ric.e2_port, "tcp", 0x500 + i,
                                     period_s=0.05, indications=src)  # fmt: skip
                    n.start()
                    return n

                nodes.append(_Node(lt.call(make()), ues))
            wait_until(lambda: all(n.node.setup_done.is_set() for n in nodes), 30, "E2 setups")
            yield stack, lt, nodes
        finally:
            for n in nodes:
                lt.call(n.node.stop())
            lt.stop()


def _replicas(stack: object, tmp: Path, k: int) -> list[OccProc]:
    out = []
    for i in range(k):
        d = tmp / f"r{i}"
        d.mkdir()
        p = OccProc(stack, d, free_pair(), free_port(), env={shards.ENV: f"occ-{i}"})
        p.start()
        out.append(p)
    for p in out:
        p.wait_ready()
    return out


def _active_nodes(p: OccProc) -> set[str]:
    try:
        st = p.status()
    except (OSError, AssertionError, ValueError):
        return set()
    return {s["meid"] for s in st["subscriptions"] if s["state"] == "active"}


@pytest.mark.parametrize("k", [2, 3])
def test_replicas_split_the_nodes_and_take_over_after_kill9(
    rig: tuple[object, LoopThread, list[_Node]], tmp_path: Path, k: int
) -> None:
    stack, _, nodes = rig
    meids = {n.node.meid for n in nodes}
    ues = [u for n in nodes for u in n.ues]
    reps = _replicas(stack, tmp_path, k)
    rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    rx.bind(("127.0.0.1", 0))
    rx.settimeout(0.05)
    try:
        # every node subscribed by exactly the replica that ranks highest for it
        names = [f"occ-{i}" for i in range(k)]
        want = [{m for m in meids if shards.owner_of(m, names) == r} for r in names]
        assert all(want), want  # each replica has some (these 10 node IDs over 2 or 3)

        def split() -> list[set[str]] | None:
            owned = [_active_nodes(p) for p in reps]
            return owned if owned == want else None

        owned = wait_until(split, 60, f"{N_NODES} nodes split over {k} replicas")
        for u in ues:  # all registered with the first replica: the owner picks them up
            body = {"id": f"f{u}", "ue": u, "address": f"127.0.0.1:{rx.getsockname()[1]}",
                    "format": "json"}  # fmt: skip
            code, _ = http("POST", reps[0].url("/occ/v1/flows"), body)
            assert code == 201

        t_ms: dict[tuple[float, int], int] = {}  # (arrival, UE) -> the estimate's time stamp

        def received(seconds: float) -> list[tuple[float, int, int]]:
            out, end = [], time.monotonic() + seconds
            while time.monotonic() < end:
                try:
                    data, (_, port) = rx.recvfrom(2048)
                except TimeoutError:
                    continue
                d, now = json.loads(data), time.monotonic()
                out.append((now, port, d["ue"]))
                t_ms[(now, d["ue"])] = d["t_ms"]
            return out

        received(1.5)  # the flows spread to their owners
        steady = received(2.0)
        senders: dict[int, set[int]] = defaultdict(set)
        for _, port, u in steady:
            senders[u].add(port)
        assert sorted(senders) == sorted(ues), "a UE without feedback"
        assert all(len(p) == 1 for p in senders.values()), dict(senders)  # exactly one replica

        # kill -9 the replica that owns the most nodes
        victim = max(range(k), key=lambda i: len(owned[i]))
        lost_nodes = owned[victim]
        lost_ues = [u for n in nodes if n.node.meid in lost_nodes for u in n.ues]
        dead_port = next(iter(senders[lost_ues[0]]))
        t_kill = time.monotonic()
        reps[victim].kill9()
        after = received(TAKEOVER_S + 2.0)
        survivors = [p for i, p in enumerate(reps) if i != victim]
        again = [_active_nodes(p) for p in survivors]
        assert set().union(*again) == meids, again  # every node subscribed again
        moved_in, fresh_in = [], []
        for u in lost_ues:
            # fresh estimates too: the node's indications reach the new owner
            last_ms = max(t_ms[(t, uu)] for t, _, uu in steady if uu == u)
            news = [t for t, port, uu in after if uu == u and port != dead_port]
            fresh = next((t for t in news if t_ms[(t, u)] > last_ms), None)
            assert fresh is not None and fresh - t_kill <= TAKEOVER_S, (u, fresh, t_kill)
            fresh_in.append(fresh - t_kill)
            first = next((t for t, port, uu in after if uu == u and port != dead_port), None)
            assert first is not None, f"UE {u} got no feedback after the kill"
            assert first - t_kill <= TAKEOVER_S, f"UE {u}: {first - t_kill:.2f} s without feedback"
            moved_in.append(first - t_kill)
        # the survivors' own UEs never stopped, and still from one replica each
        tail = [(port, u) for t, port, u in after if t - t_kill > TAKEOVER_S]
        by_ue: dict[int, set[int]] = defaultdict(set)
        for port, u in tail:
            by_ue[u].add(port)
        assert sorted(by_ue) == sorted(ues) and all(len(p) == 1 for p in by_ue.values()), by_ue
        gaps = {u: max(b - a for a, b in itertools.pairwise(ts)) for u in ues
                if len(ts := sorted(t for t, _, uu in steady + after if uu == u)) > 1}  # fmt: skip
        worst = max(gaps.values())
        print(f"{k} replicas: killed {reps[victim].env}, {len(lost_nodes)} nodes / "
              f"{len(lost_ues)} UEs moved; their feedback again {min(moved_in):.2f}-"
              f"{max(moved_in):.2f} s after the kill, fresh estimates {min(fresh_in):.2f}-"
              f"{max(fresh_in):.2f} s; longest feedback gap of any UE "
              f"{worst:.2f} s")  # fmt: skip
        assert worst <= TAKEOVER_S
    finally:
        rx.close()
        for p in reps:
            p.stop()


def test_run_config_starts_replicas(tmp_path: Path) -> None:
    """``octoric run --set xapps.replicas.occ=3``: three OCC processes, each with its replica
    ID and its own ports; only OCC shards, and 1..16 of it."""
    from octoric.config import RunConfig
    from octoric.deploy.xapps_component import components
    from octoric.errors import OctoricError
    from octoric.supervisor import RunContext

    cfg = RunConfig()
    cfg.xapps.replicas = {"occ": 3}
    comps = components(RunContext(cfg, tmp_path))
    occ = [c for c in comps if c.spec.name == "occ"]
    assert [c.name for c in occ] == ["xapp-occ", "xapp-occ-1", "xapp-occ-2"]
    assert [c.replica for c in occ] == [0, 1, 2]
    ports = [p for c in occ for p in (c.rmr_port, c.rmr_port + 1, c.http_port)]
    assert len(set(ports)) == len(ports)
    for bad, why in (({"handover": 2}, "only occ runs as replicas"), ({"occ": 0}, "1..16")):
        cfg.xapps.replicas = bad
        with pytest.raises(OctoricError, match=why):
            components(RunContext(cfg, tmp_path))
