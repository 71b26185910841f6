"""Unmodified ricxappframe 3.2.2 xApps (RMRXapp and Xapp) talking through our library."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from .conftest import Procs, free_port, rmr_env, wait_listening

pytestmark = pytest.mark.integration


def read_records(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def wait_for(pred: Any, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.1)
    return bool(pred())


def test_rmrxapp_and_xapp_exchange(tmp_path: Path, procs: Procs, our_lib: Path) -> None:
    pa, pb, pc1, pc2 = (free_port() for _ in range(4))
    seed = tmp_path / "rt.txt"
    seed.write_text(
        "newrt|start|itest\n"
        f"rte|1000|127.0.0.1:{pa}\n"
        # fan-out: group 1 = the responder, group 2 = two recorders used round robin
        f"rte|2000|127.0.0.1:{pa};127.0.0.1:{pc1},127.0.0.1:{pc2}\n"
        "newrt|end|2\n"
    )
    env = rmr_env(seed)
    out = {n: tmp_path / f"{n}.jsonl" for n in ("a", "b", "c1", "c2")}
    procs.peer("responder", out["a"], pa, env)
    procs.peer("responder", out["c1"], pc1, env)
    procs.peer("responder", out["c2"], pc2, env)
    for p in (pa, pc1, pc2):
        wait_listening(p)
    sender = procs.peer("sender", out["b"], pb, env)
    assert wait_for(lambda: any(r["kind"] == "done" for r in read_records(out["b"])), 60), (
        out["b"].with_suffix(".log").read_text()[-3000:]
    )
    sender.wait(timeout=20)

    def fan_count(name: str) -> int:
        return sum(1 for r in read_records(out[name]) if r.get("mtype") == 2000)

    assert wait_for(lambda: fan_count("a") == 10 and fan_count("c1") + fan_count("c2") == 10, 10)

    b = read_records(out["b"])
    assert [r["state"] for r in b if r["kind"] == "sent"] == [0] * 5
    assert all(r["ok"] for r in b if r["kind"] == "fan")

    # The responder saw the requests with sub_id, meid and transaction id intact.
    reqs = [r for r in read_records(out["a"]) if r["kind"] == "req"]
    assert len(reqs) == 5
    for i, r in enumerate(sorted(reqs, key=lambda r: r["payload"])):
        assert r["mtype"] == 1000
        assert r["payload"] == f"req-{i}"
        assert r["sub_id"] == 77
        assert r["meid"] == "gnb_001_001_00019b"
        assert r["xid"] == f"xid-{i:028d}"
        assert r["src"].endswith(f":{pb}")
    assert all(r["ok"] for r in read_records(out["a"]) if r["kind"] == "rts")

    # rmr_rts came back to the sender with the same ids and the new mtype/payload.
    replies = sorted((r for r in b if r["kind"] == "reply"), key=lambda r: r["payload"])
    assert len(replies) == 5
    for i, r in enumerate(replies):
        assert r["mtype"] == 1001
        assert r["payload"] == f"ack:req-{i}"
        assert r["sub_id"] == 77
        assert r["meid"] == "gnb_001_001_00019b"
        assert r["xid"] == f"xid-{i:028d}"
        assert r["src"].endswith(f":{pa}")

    # Fan-out: every message to both groups; round robin splits group 2 evenly.
    assert fan_count("a") == 10
    assert (fan_count("c1"), fan_count("c2")) == (5, 5)
    c_payloads = sorted(
        r["payload"] for n in ("c1", "c2") for r in read_records(out[n]) if r.get("mtype") == 2000
    )
    assert c_payloads == sorted(f"fan-{i}" for i in range(10))
