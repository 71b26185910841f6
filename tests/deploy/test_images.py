"""Issue #41: each xApp image (``make images``) runs here as the charts run it, against the
embedded RIC.

The RIC and a simulated gNB run (``octoric run`` without xApps) in a network namespace of the
test's own; each image runs in a podman container that joins that namespace, configured as the
chart configures the pod: its descriptor mounted at /opt/ric/config, the API token as a file
(the chart's Secret), ``--rmr-port``/``--http-port`` from the descriptor, user 10001 from the
image, a read-only root filesystem with /tmp writable (the chart's emptyDir), every capability
dropped, no privilege escalation. What ``octoric run`` gives an xApp process (the appmgr's
address, the route table, Redis) it gets through the same environment
(``octoric.deploy.xapp_env``), with the files it names copied where the container can read them.
One difference from a cluster: the three share one network namespace, so handover's and
octopus's route ports are the embedded RIC's (data port + 1), not the charts' 4561 (which is
occ's here; in a cluster each pod has its own address).

Checked per image: it registers with appmgr, subscribes (occ and handover: an E2 subscription
with the container as client; occ also counts the indications that reach it), answers
``/ric/v1/health/alive`` and ``/ready`` and ``/metrics``, runs as uid 10001 on a read-only root,
and stops on SIGTERM with exit code 0 inside the chart's grace period (Kubernetes' default 30 s;
the charts set none).

Needs root, podman and the images (``make images``, a slow build): skips, saying which is
missing, otherwise. Runs in ``make test-all`` (marker ``slow``).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from testkit import podman

from octoric.contracts import auth, ports
from octoric.deploy.xapp_env import xapp_environment
from octoric.ric.services import RicRuntime

REPO = Path(__file__).resolve().parents[2]
REGISTRY, TAG = "registry.local:5000", "1.0.0"
GRACE_S = 30.0  # Kubernetes' default terminationGracePeriodSeconds; the charts set none
UID = 10001  # the charts' runAsUser / runAsGroup
XAPPS = ("occ", "handover", "octopus")
SUBSCRIBES = {"occ", "handover"}  # octopus subscribes to nothing until an A1 policy

pytestmark = [pytest.mark.slow, pytest.mark.e2e]


def _skip_reason() -> str | None:
    if os.geteuid() != 0:
        return "needs root (a network namespace, rootful podman)"
    why = podman.unavailable()
    if why:
        return why
    missing = [x for x in XAPPS if not podman.image_exists(f"{REGISTRY}/octoric-{x}:{TAG}")]
    if missing:
        return f"images not built ({', '.join(missing)}): run `make images`"
    return None


@dataclass
class Ric:
    netns: str
    run_dir: Path
    rt: RicRuntime

    def sh(self, *argv: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["ip", "netns", "exec", self.netns, *argv],
                              capture_output=True, text=True, timeout=timeout)  # fmt: skip

    def http(self, port: int, path: str) -> tuple[int, str]:
        r = self.sh(
            "curl", "-s", "-m", "5", "-w", "\n%{http_code}", f"http://127.0.0.1:{port}{path}"
        )
        body, _, code = r.stdout.rpartition("\n")
        return int(code or 0), body

    def status(self) -> dict[str, Any]:
        code = (
            "import asyncio, json, sys; from pathlib import Path; "
            "from octoric.ric.launcher import ric_status; "
            "from octoric.ric.services import RicRuntime; "
            "rt = RicRuntime.read(Path(sys.argv[1])); "
            "print(json.dumps(asyncio.run(ric_status(rt))))"
        )
        r = self.sh(sys.executable, "-c", code, str(self.run_dir / "ric.json"))
        assert r.returncode == 0, r.stderr[-2000:]
        data: dict[str, Any] = json.loads(r.stdout)
        return data


@pytest.fixture(scope="module")
def ric(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Ric]:
    why = _skip_reason()
    if why:
        pytest.skip(why)
    ns = f"octo-img-{uuid.uuid4().hex[:6]}"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    subprocess.run(["ip", "-n", ns, "link", "set", "lo", "up"], check=True)
    out = tmp_path_factory.mktemp("images-run")
    argv = ["ip", "netns", "exec", ns, sys.executable, "-m", "octoric.cli", "run", "--no-live",
            "--duration", "900", "--set", f"report_dir={out}", "--set", "xapps.enabled=[]",
            "--set", "dashboard.enabled=false"]  # fmt: skip
    log = (out / "run.log").open("w")
    # the containers share the RIC's network namespace, so its RMR ports see them as local peers
    # of uid 10001, which a run admits only when told (docs/rmr.md, OCTORIC_RMR_PEER_UIDS)
    env = {**os.environ, "OCTORIC_RMR_PEER_UIDS": f"{os.geteuid()},{UID}"}
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, cwd=REPO, env=env)
    try:
        deadline = time.monotonic() + 90
        state: list[Path] = []
        while time.monotonic() < deadline and not state:
            assert proc.poll() is None, (out / "run.log").read_text()[-3000:]
            state = [p for p in out.glob("*/ric.json") if p.stat().st_size]
            time.sleep(0.5)
        assert state, "the RIC wrote no ric.json in 90 s:\n" + (out / "run.log").read_text()[-3000:]
        run_dir = state[0].parent
        r = Ric(ns, run_dir, RicRuntime.read(state[0]))
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not [
            n for n in r.status()["nodes"] if n["connected"]
        ]:
            time.sleep(1.0)
        yield r
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
        subprocess.run(["ip", "netns", "del", ns], check=False)


def _container_env(ric: Ric, name: str, rmr: int, http: int, files: Path) -> dict[str, str]:
    """The environment ``octoric run`` gives this xApp, with every file it names copied into
    ``files`` (mounted at /opt/ric/run) and the chart's config path and token file."""
    env = xapp_environment(ric.rt, name, rmr, http, Path("/opt/ric/config/config-file.json"))
    env = {k: v for k, v in env.items() if os.environ.get(k) != v}
    env.pop(auth.TOKEN_ENV, None)  # the chart mounts the token as a file
    for k, v in list(env.items()):
        if v.startswith("/") and Path(v).is_file() and k != "CONFIG_FILE":
            shutil.copy(v, files / Path(v).name)
            env[k] = f"/opt/ric/run/{Path(v).name}"
    env[auth.TOKEN_FILE_ENV] = "/opt/ric/secrets/token"
    env["OCTORIC_LOG_FORMAT"] = "json"
    return env


@pytest.fixture(scope="module")
def containers(ric: Ric, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """The three images started as the charts start them; their names."""
    # what the platform's A1 holds before octopus starts (inside the RIC's namespace)
    code = (
        "import sys; from pathlib import Path; "
        "from octoric.deploy.xapps_component import ensure_octopus_policy_type; "
        "from octoric.ric.services import RicRuntime; "
        "ensure_octopus_policy_type(RicRuntime.read(Path(sys.argv[1])))"
    )
    r = ric.sh(sys.executable, "-c", code, str(ric.run_dir / "ric.json"))
    assert r.returncode == 0, r.stderr[-2000:]
    names: dict[str, str] = {}
    try:
        for x in XAPPS:
            rmr, http = ports.XAPP_PORTS[x]
            base = tmp_path_factory.mktemp(f"pod-{x}")
            for sub in ("config", "run", "secrets"):
                (base / sub).mkdir()
            shutil.copy(REPO / "charts" / x / "config-file.json", base / "config/config-file.json")
            (base / "secrets/token").write_text(ric.rt.api_token)
            env = _container_env(ric, x, rmr, http, base / "run")
            for p in base.rglob("*"):  # the chart's fsGroup makes mounted files the pod's
                os.chown(p, UID, UID)
            name = f"octoric-test-{x}-{uuid.uuid4().hex[:4]}"
            argv = ["run", "-d", "--name", name, "--hostname", x, *podman.RUN_FLAGS,
                    "--network", f"ns:/run/netns/{ric.netns}",
                    "--read-only", "--tmpfs", "/tmp:rw,size=64m",
                    "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
                    "-v", f"{base / 'config'}:/opt/ric/config:ro",
                    "-v", f"{base / 'run'}:/opt/ric/run:ro",
                    "-v", f"{base / 'secrets'}:/opt/ric/secrets:ro"]  # fmt: skip
            for k, v in sorted(env.items()):
                argv += ["-e", f"{k}={v}"]
            argv += [f"{REGISTRY}/octoric-{x}:{TAG}", "--rmr-port", str(rmr), "--http-port",
                     str(http), "--host", "127.0.0.1"]  # fmt: skip
            podman.podman(*argv)
            names[x] = name
        yield names
    finally:
        for name in names.values():
            podman.podman("rm", "-f", "-t", "0", name, check=False)


def _wait(check: Any, what: str, timeout: float = 60.0) -> Any:
    deadline, last = time.monotonic() + timeout, None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(1.0)
    raise AssertionError(f"{what}: not within {timeout:.0f} s (last: {last!r})")


def _logs(name: str) -> str:
    """The container's output (podman logs gives its stderr, where the xApps log, on stderr)."""
    r = subprocess.run(podman.argv("logs", name), capture_output=True, text=True, timeout=30)
    return (r.stdout + r.stderr)[-4000:]


@pytest.mark.parametrize("xapp", XAPPS)
def test_image_registers_subscribes_and_serves_health_and_metrics(
    ric: Ric, containers: dict[str, str], xapp: str
) -> None:
    name = containers[xapp]
    rmr, http = ports.XAPP_PORTS[xapp]
    assert podman.inspect(name)["State"]["Running"], _logs(name)
    _wait(lambda: [x for x in ric.status()["xapps"] if x["name"] == xapp],
          f"{xapp} registered with appmgr\n{_logs(name)}")  # fmt: skip
    if xapp in SUBSCRIBES:
        client = f"127.0.0.1:{rmr}"
        _wait(lambda: [s for s in ric.status()["subscriptions"]
                       if client in s["clients"] and s["state"] == "active"],
              f"{xapp}: an active E2 subscription for {client}\n{_logs(name)}")  # fmt: skip
    for path in ("/ric/v1/health/alive", "/ric/v1/health/ready"):
        _wait(lambda p=path: ric.http(http, p)[0] == 200, f"{xapp} {path} 200\n{_logs(name)}")
    code, body = ric.http(http, "/metrics")
    assert code == 200 and "# TYPE" in body, body[:500]
    if xapp == "occ":  # the simulated gNB's indications reach the container over RMR
        _wait(lambda: json.loads(ric.http(http, "/occ/v1/status")[1] or "{}")
              .get("counters", {}).get("indications", 0) > 0,
              f"indications at the occ container\n{_logs(name)}")  # fmt: skip


@pytest.mark.parametrize("xapp", XAPPS)
def test_image_runs_unprivileged_on_a_read_only_root(
    ric: Ric, containers: dict[str, str], xapp: str
) -> None:
    info = podman.inspect(containers[xapp])
    pid = int(info["State"]["Pid"])
    uids = next(ln for ln in Path(f"/proc/{pid}/status").read_text().splitlines()
                if ln.startswith("Uid:"))  # fmt: skip
    assert uids.split()[1:] == [str(UID)] * 4, uids  # real, effective, saved, filesystem
    root = next(ln.split() for ln in Path(f"/proc/{pid}/mountinfo").read_text().splitlines()
                if ln.split()[4] == "/")  # fmt: skip
    assert "ro" in root[5].split(","), root
    caps = next(ln for ln in Path(f"/proc/{pid}/status").read_text().splitlines()
                if ln.startswith("CapEff:"))  # fmt: skip
    assert int(caps.split()[1], 16) == 0, caps


@pytest.mark.parametrize("xapp", XAPPS)
def test_image_stops_cleanly_on_sigterm_within_the_grace_period(
    ric: Ric, containers: dict[str, str], xapp: str
) -> None:
    name = containers[xapp]
    t0 = time.monotonic()
    podman.podman("stop", "-t", str(int(GRACE_S)), name, timeout=GRACE_S + 30)
    took = time.monotonic() - t0
    state = podman.inspect(name)["State"]
    assert state["ExitCode"] == 0 and took < GRACE_S, (state, took, _logs(name))
    _wait(lambda: not [x for x in ric.status()["xapps"] if x["name"] == xapp],
          f"{xapp} deregistered after SIGTERM")  # fmt: skip
