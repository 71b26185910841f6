"""Issue #13, done-when 1 and 5, on `octoric run` itself: the embedded RIC, a simulated gNB
carrying temporal-SVC video flows marked with the Octopus header, and the three xApps; an
A1-P v2 client (plain HTTP) creates, breaks and deletes policies; a researcher's xApp on
unmodified ricxappframe receives OCTORIC_OCTOPUS_STATUS (30502). The octopus xApp is then
killed and restarted by the supervisor and must put the same state back."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from testkit.octoric_run import run_argv
from testkit.rest import NO_PROXY

from octoric.deploy.xapp_env import descriptor, xapp_environment
from octoric.redis_server import free_port
from octoric.ric.services import RicRuntime
from octoric.ric.stack import free_pair

pytestmark = [pytest.mark.integration, pytest.mark.e2e]
PROBE = Path(__file__).parents[1] / "handover" / "programs" / "ho_probe.py"
POLICY_URL = "http://127.0.0.1:{port}/A1-P/v2/policytypes/30500/policies/{pid}"


def wait_until(fn: Any, timeout: float) -> bool:
    """Poll ``fn()`` every 50 ms until truthy (errors count as not yet); False at the end."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if fn():
                return True
        except (OSError, ValueError, KeyError, TypeError):
            pass
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)


def _req(method: str, url: str, token: str, body: Any = None) -> tuple[int, Any]:
    import urllib.error
    import urllib.request

    data = None if body is None else json.dumps(body).encode()
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {token}"}
    req = urllib.request.Request(url, data=data, headers=headers, method=method)
    try:
        with NO_PROXY.open(req, timeout=5) as r:
            raw = r.read()
            return r.status, json.loads(raw) if raw else None
    except urllib.error.HTTPError as e:
        raw = e.read()
        return e.code, json.loads(raw) if raw else None


def _sim_droppers(run_dir: Path) -> dict[int, Any]:
    try:
        st = json.loads((run_dir / "sim-status.json").read_text())
    except (OSError, ValueError):
        return {}
    return {u["ue"]: u.get("dropper") for u in st.get("ue_rates") or []}


def _octopus(run_dir: Path) -> dict[str, Any]:
    x = json.loads((run_dir / "xapps.json").read_text())["octopus"]
    with NO_PROXY.open(x["status_url"], timeout=2) as r:
        return dict(json.loads(r.read()))


def test_a1_policy_to_gnb_dropper_and_back(tmp_path: Path) -> None:
    argv, _ = run_argv(tmp_path, 75, "dashboard.enabled=false", "sim.svc=temporal", "sim.ues=4")
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    probe = None
    try:
        assert wait_until(lambda: any(d.is_dir() for d in tmp_path.iterdir()), 30)
        (run_dir,) = [d for d in tmp_path.iterdir() if d.is_dir()]

        def up() -> bool:
            try:
                return bool(_sim_droppers(run_dir)) and "policies" in _octopus(run_dir)
            except (OSError, ValueError, KeyError):
                return False

        assert wait_until(up, 60), proc.stderr.read() if proc.poll() is not None else "not up"
        rt = RicRuntime.read(run_dir / "ric.json")
        a1, token = rt.ric.a1_rest_port, rt.api_token

        # a researcher's xApp listening to 30502
        rmr_port = free_pair()
        cfg = tmp_path / "probe.json"
        cfg.write_text(json.dumps(descriptor("octopus-probe", rmr_port,
                                             rx=["OCTORIC_OCTOPUS_STATUS"], tx=[])))  # fmt: skip
        env = xapp_environment(rt, "octopus-probe", rmr_port, free_port(), cfg)
        probe = subprocess.Popen(
            [sys.executable, str(PROBE), str(rmr_port), "120", "OCTORIC_OCTOPUS_STATUS"], env=env,
            stdout=subprocess.PIPE, stderr=(tmp_path / "probe.log").open("wb"), text=True,
            start_new_session=True,
        )  # fmt: skip
        got: list[dict[str, Any]] = []
        threading.Thread(
            target=lambda: [got.append(json.loads(ln)) for ln in probe.stdout or []], daemon=True
        ).start()
        assert wait_until(lambda: any(g["event"] == "ready" for g in got), 30)
        time.sleep(3)  # the route manager adds the probe to the 30502 route

        # 1. create: within 1 s the sim's droppers are on for the two UEs, a1 says enforced
        url = POLICY_URL.format(port=a1, pid="rtc")
        t0 = time.monotonic()
        code, _ = _req("PUT", url, token, {"scope": {"ues": [1000, 1001]}, "enable": True})
        assert code == 202
        on = lambda: all(_sim_droppers(run_dir).get(u) for u in (1000, 1001))  # noqa: E731
        assert wait_until(on, 5)
        took = time.monotonic() - t0
        assert took <= 1.5, f"dropper on after {took:.2f} s"  # 1 s + the status file's 0.5 s
        assert _sim_droppers(run_dir)[1002] is None  # not targeted
        status = lambda: _req("GET", url + "/status", token)[1]  # noqa: E731
        assert wait_until(lambda: status()["enforceStatus"] == "ENFORCED", 3), status()

        # 30502 reaches the probe, with the gNB's drop counters; the temporal-SVC flows
        # under the simulated channel get some frames dropped within a while
        def drops() -> int:
            return max(
                (g["body"].get("drops", {}).get("packets", 0) for g in got
                 if g["event"] == "message" and g["body"]["state"] == "enforced"), default=-1,
            )  # fmt: skip

        assert wait_until(lambda: drops() >= 0, 5), got[-5:]
        assert wait_until(lambda: drops() > 0, 30), got[-5:]  # the gNB dropped and said so
        reported = drops()
        time.sleep(1.5)  # the simulator's status file is written twice a second
        sim_dropped = sum((_sim_droppers(run_dir)[u] or {}).get("dropped_packets", 0)
                          for u in (1000, 1001))  # fmt: skip
        assert 0 < reported <= sim_dropped  # the counters are the gNB's own

        # 5. bad policies: schema -> 400 from a1; conflict and unknown UE -> not enforced
        bad = POLICY_URL.format(port=a1, pid="bad")
        code, body = _req("PUT", bad, token, {"enable": "yes"})
        assert code == 400 and "enable" in body["error"], body
        clash = POLICY_URL.format(port=a1, pid="clash")
        assert _req("PUT", clash, token, {"scope": {"ues": [1001]}, "enable": False})[0] == 202
        st = lambda u: _req("GET", u + "/status", token)[1]  # noqa: E731
        assert wait_until(lambda: "conflicts with policy 'rtc'" in json.dumps(st(clash)), 3)
        ghost = POLICY_URL.format(port=a1, pid="ghost")
        assert _req("PUT", ghost, token, {"scope": {"ues": [4242]}, "enable": True})[0] == 202
        assert wait_until(lambda: "gNB refused" in json.dumps(st(ghost)), 5), st(ghost)
        assert st(ghost)["enforceStatus"] == "NOT_ENFORCED"
        rejected = _octopus(run_dir)["rejected"]
        assert rejected.get("conflict") == 1, rejected

        # restart the xApp (kill -9; the supervisor restarts it): the same state comes back
        pid_file = json.loads((run_dir / "xapps.json").read_text())
        before = {p["id"]: p["state"] for p in _octopus(run_dir)["policies"]}
        # the live process (the supervisor names it; its warm spare has the same command line)
        live = run_dir / "xapp-octopus.pid"
        xpid = int(live.read_text())
        os.kill(xpid, signal.SIGKILL)
        assert pid_file  # (the ports stay: the supervisor reuses them)
        assert wait_until(lambda: int(live.read_text()) != xpid, 10), "not restarted"

        def back() -> bool:
            try:
                s = _octopus(run_dir)
            except (OSError, ValueError):
                return False
            return {p["id"]: p["state"] for p in s["policies"]} == before

        assert wait_until(back, 30), before
        assert all(_sim_droppers(run_dir).get(u) for u in (1000, 1001))

        # delete: the droppers go off, the instance is gone
        for pid in ("clash", "ghost", "rtc"):
            assert _req("DELETE", POLICY_URL.format(port=a1, pid=pid), token)[0] == 202
        off = lambda: not any(_sim_droppers(run_dir).get(u) for u in (1000, 1001))  # noqa: E731
        assert wait_until(off, 5), _sim_droppers(run_dir)
        assert wait_until(lambda: _req("GET", url, token)[0] == 404, 5)
    finally:
        if probe is not None:
            probe.kill()
        proc.send_signal(signal.SIGINT)
        try:
            proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
