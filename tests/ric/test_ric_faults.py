"""Faults the RIC must ride out without any xApp action (issue: node loss, submgr restart)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from octoric.deploy.xapp_env import descriptor, xapp_environment
from octoric.redis_server import free_port

from .conftest import LoopThread, RicStack, free_pair
from .test_ric_e2e import PROBE, start_node

pytestmark = [pytest.mark.integration, pytest.mark.e2e]


class ProbeStream:
    """The probe xApp in --keep mode; its events, each stamped with the time it arrived."""

    def __init__(self, stack: RicStack, tmp: Path, meid: str) -> None:
        rmr_port, http_port = free_pair(), free_port()
        cfg = tmp / "probe-config.json"
        cfg.write_text(json.dumps(descriptor("probe", rmr_port, ["RIC_INDICATION"], [])))
        env = xapp_environment(stack.rt, "probe", rmr_port, http_port, cfg)
        self.proc = subprocess.Popen(
            [
                sys.executable,
                str(PROBE),
                str(rmr_port),
                str(http_port),
                meid,
                "--keep",
                "--indications",
                "10",
            ],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self.events: list[tuple[float, dict[str, Any]]] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith("{"):
                self.events.append((time.monotonic(), json.loads(line)))

    def indications_since(self, t: float) -> list[dict[str, Any]]:
        return [e for ts, e in self.events if ts >= t and e["event"] == "indication"]

    def wait_indications(self, since: float, n: int, timeout: float) -> float:
        """Time (monotonic) when the n-th indication after ``since`` arrived."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            got = [ts for ts, e in self.events if ts >= since and e["event"] == "indication"]
            if len(got) >= n:
                return got[n - 1]
            time.sleep(0.02)
        raise AssertionError(f"fewer than {n} indications in {timeout} s after the fault")

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()


def _submgr_pid(stack: RicStack) -> int:
    state = str(Path(stack.rt.run_dir) / "ric.json")
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"octoric.ric.services" in cmd and b"submgr" in cmd and state.encode() in cmd:
            return int(pid)
    raise AssertionError("submgr process not found")


def test_node_reconnect_and_submgr_restart(
    ric_stack: RicStack, loop_thread: LoopThread, tmp_path: Path
) -> None:
    node = start_node(ric_stack, loop_thread)
    probe = ProbeStream(ric_stack, tmp_path, node.meid)
    try:
        probe.wait_indications(0, 20, timeout=60)
        sub_ids = {e["sub_id"] for e in probe.indications_since(0)}
        assert len(sub_ids) == 1

        # 1. the node loses its E2 link: it reconnects, the RIC re-subscribes by itself
        t_fault = time.monotonic()
        loop_thread.loop.call_soon_threadsafe(node.drop_connection)
        t_back = probe.wait_indications(t_fault + 0.05, 5, timeout=10)
        assert t_back - t_fault < 2.0, f"indications resumed after {t_back - t_fault:.2f} s"
        assert node.stats.setups == 2 and node.stats.subscriptions == 2
        assert {e["sub_id"] for e in probe.indications_since(t_fault)} == sub_ids

        # 2. submgr is killed: it restarts and restores its subscriptions from Redis
        old = _submgr_pid(ric_stack)
        os.kill(old, signal.SIGKILL)
        t_kill = time.monotonic()
        probe.wait_indications(t_kill, 20, timeout=10)  # the relay never depended on submgr
        url = ric_stack.url("submgr_rest_port", "/ric/v1/subscriptions")
        deadline = time.monotonic() + 15
        subs: list[dict[str, Any]] = []
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(url, timeout=1) as r:
                    subs = json.loads(r.read())
                break
            except OSError:
                time.sleep(0.1)
        assert _submgr_pid(ric_stack) != old
        assert [s["E2EventInstanceId"] for s in subs] == list(sub_ids)
        assert subs[0]["State"] == "active"

        # ...and a node drop after the restart is still healed by the new submgr
        t_fault2 = time.monotonic()
        loop_thread.loop.call_soon_threadsafe(node.drop_connection)
        t_back2 = probe.wait_indications(t_fault2 + 0.05, 5, timeout=10)
        assert t_back2 - t_fault2 < 2.0
    finally:
        probe.stop()
        loop_thread.call(node.stop())
