"""Issue #42, done-when 4: docs/ric.md's "A KPM xApp in one file" works as written.

The commands are read from the doc's shell block and run in its order: ``octoric ric up``, a
live simulated gNB (``octoric sim run --live``), ``octoric ric nodes`` (which must name the gNB
the doc names), then ``examples/kpm_subscriber.py ... --embedded``, an unmodified ricxappframe
xApp. Only ports move (free ones, so the test runs beside ``make run``): ``--set ric.*`` for
the RIC, ``--ric-e2`` for the gNB, ``--rmr-port``/``--http-port`` for the xApp, plus ``--count``
so it stops. Real Redis, RIC, E2 over TCP, RMR and submgr; the xApp must print the
subscription's outcome and decoded per-UE indications, and leave no subscription behind. The
doc's payload arrays must be what octoric's encoders produce for the example's measurements.
About 28 s on a shared 2-core machine (load 5), the RIC's start the largest part.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from octoric.e2sm import kpm
from octoric.ric.services import RicRuntime
from octoric.ric.stack import RIC_PORTS, distinct_pairs, terminate

pytestmark = [pytest.mark.integration, pytest.mark.e2e]
REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "ric.md"
EXAMPLE = REPO / "examples" / "kpm_subscriber.py"
SECTION = "### A KPM xApp in one file"


def _section() -> str:
    text = DOC.read_text()
    assert SECTION in text, f"{DOC} has no section {SECTION!r}"
    return text.split(SECTION, 1)[1].split("\n## ", 1)[0]


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", _section(), re.S)


def doc_commands() -> list[list[str]]:
    """The shell block's commands, comments left out, split into words."""
    lines = [ln.strip() for ln in _blocks("sh")[0].splitlines()]
    return [ln.split() for ln in lines if ln and not ln.startswith("#")]


def _argv(words: list[str]) -> list[str]:
    """A documented command with this venv's interpreter (the doc's .venv/bin/...)."""
    program = words[0].rsplit("/", 1)[-1]
    if program == "octoric":
        return [sys.executable, "-m", "octoric.cli", *words[1:]]
    assert program == "python", words
    return [sys.executable, *words[1:]]


def test_doc_payloads_are_the_encoders_output() -> None:
    """The doc spells the subscription's bytes out; they are what the example sends."""
    body = _blocks("json")[0].split("\n", 1)[1]  # after the POST line
    sub = json.loads(body)
    from octoric.contracts import kpm as names

    ns: dict[str, object] = {"K": names}  # the example's measurement names
    src = EXAMPLE.read_text()
    exec(re.search(r"^MEASUREMENTS = .*$", src, re.M).group(0), ns)  # type: ignore[union-attr]
    measurements = ns["MEASUREMENTS"]
    assert isinstance(measurements, list)
    detail = sub["SubscriptionDetails"][0]
    action = detail["ActionToBeSetupList"][0]
    assert detail["EventTriggers"] == list(kpm.encode_kpm(kpm.KpmEventTrigger(1000)))
    want = kpm.action_definition_style4(measurements, granularity_ms=100)
    assert action["ActionDefinition"] == list(kpm.encode_kpm(want))
    assert "KpmEventTrigger(1000)" in src and "granularity_ms=100" in src
    assert sub["RANFunctionID"] == kpm.RAN_FUNCTION_ID
    assert sub["ClientEndpoint"] == {"Host": "127.0.0.1", "HTTPPort": 8120, "RMRPort": 4620}
    assert "default=4620" in src and "default=8120" in src  # the doc's ports are the example's


@pytest.fixture
def procs() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Processes the test starts; stopped in reverse order, whatever happens."""
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for p in reversed(started):
        terminate(p)


def _wait(
    what: str, ok: Callable[[], bool], proc: subprocess.Popen[bytes], log: Path, every: float = 0.2
) -> None:
    deadline = time.monotonic() + 60
    while not ok():
        if proc.poll() is not None or time.monotonic() > deadline:
            pytest.fail(f"{what}:\n{log.read_text(errors='replace')[-3000:]}")
        time.sleep(every)


def test_kpm_example_as_the_doc_runs_it(
    tmp_path: Path, procs: list[subprocess.Popen[bytes]]
) -> None:
    cmds = doc_commands()
    kinds = [" ".join(c[1:3]) for c in cmds]
    assert kinds == ["ric up", "sim run", "ric nodes", "examples/kpm_subscriber.py " + cmds[3][2]]
    ric_up, sim, nodes, xapp = cmds
    env = {**os.environ, "OCTORIC_STATE_DIR": str(tmp_path / "state")}
    env.pop("OCTORIC_RMR_NO_PRELOAD", None)  # the xApp is plain ricxappframe: the hook loads RMR

    # 1: the RIC, on free ports
    sets = [f"report_dir={tmp_path}/run", "redis.port=0"]
    sets += [f"ric.{k}={v}" for k, v in distinct_pairs(RIC_PORTS).items()]
    ric_log = tmp_path / "ric.log"
    ric = subprocess.Popen(
        [*_argv(ric_up), *[a for s in sets for a in ("--set", s)]],
        stdout=ric_log.open("wb"), stderr=subprocess.STDOUT, env=env,
    )  # fmt: skip
    procs.append(ric)
    current = tmp_path / "state" / "current.json"
    _wait("the RIC did not start", current.exists, ric, ric_log)
    rt = RicRuntime.read(Path(json.loads(current.read_text())["state"]))
    _wait("the RIC is not healthy", lambda: _alive(rt.ric.a1_rest_port), ric, ric_log)

    # 2: the gNB, connected to that RIC's E2 port
    sim_log = tmp_path / "sim.log"
    gnb = subprocess.Popen(
        [*_argv(sim), "--ric-e2", f"127.0.0.1:{rt.ric.e2_port}"],
        stdout=sim_log.open("wb"), stderr=subprocess.STDOUT, env=env,
    )  # fmt: skip
    procs.append(gnb)

    # 3: `octoric ric nodes` names the gNB the doc's next command subscribes to
    meid = xapp[2]

    def listed() -> bool:
        r = subprocess.run(_argv(nodes), env=env, capture_output=True, text=True, timeout=30)
        return r.returncode == 0 and re.search(rf"^{meid}\s+connected", r.stdout, re.M) is not None

    _wait(f"{meid} never connected", listed, gnb, sim_log, every=1.0)  # a CLI start each

    # 4: the xApp, until it has printed 3 indications
    rmr_port, http_port = distinct_pairs(["rmr", "http"]).values()
    r = subprocess.run(
        [*_argv(xapp), "--count", "3", "--rmr-port", str(rmr_port), "--http-port", str(http_port)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=90,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    out = r.stdout.splitlines()
    assert out[0].startswith("subscribed: "), out
    (instance,) = json.loads(out[0].removeprefix("subscribed: "))
    assert instance["ErrorCause"] == "" and instance["E2EventInstanceId"] > 0, instance
    row = re.compile(
        rf"^{meid} sn=(\d+) ue=(\d+) prb=(\d+\.\d) mcs=(\d+) thp=(\d+\.\d\d)Mbit/s buffer=(\d+)B$"
    )
    rows = [m.groups() for ln in out[1:] if (m := row.match(ln))]
    assert len(rows) == len(out) - 1, out  # nothing else, no Python reprs
    ues = {int(u) for _, u, *_ in rows}
    assert len(ues) == 4, rows  # the doc's --ues 4, every one in each report
    assert len({sn for sn, *_ in rows}) == 3, rows  # one line per UE per indication
    assert any(float(thp) > 0 for *_, thp, _ in rows), rows  # real traffic, decoded
    assert all(0 <= int(mcs) <= 28 for *_, mcs, _, _ in rows), rows

    # on the way out the example deleted its subscription and deregistered
    r = subprocess.run(_argv(["octoric", "ric", "status", "--json"]), env=env,
                       capture_output=True, text=True, timeout=30)  # fmt: skip
    status = json.loads(r.stdout)
    assert status["subscriptions"] == [] and status["xapps"] == [], status


def _alive(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/ric/v1/health/alive", timeout=0.5):
            return True
    except OSError:
        return False
