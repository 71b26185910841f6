"""The mypyc-compiled copy of the simulator's hot modules (``sim/compiled.py``) gives the same
summaries as the interpreted sources, faster."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from octoric.sim import compiled

# slow: mypyc compiles 11 modules, then both copies run (55-130 s on 2 cores): make test-all
pytestmark = [pytest.mark.integration, pytest.mark.slow]

RUN = """
import json, sys, time
from octoric.sim.engine import Engine
from octoric.sim.scenario import ChannelSpec, FlowSpec, RanSpec, Scenario, UeSpec
from octoric.sim.summary import build_summary
import octoric.sim.transport as t
out = {}
for scheme, traffic in (("bbr", "bulk"), ("rocc+dumbo", "video"), ("gcc", "video")):
    ue = UeSpec(count=4, channel=ChannelSpec("fading", mean_snr_db=15.0),
                flows=[FlowSpec(traffic=traffic, scheme=scheme)])
    sc = Scenario(name="c", duration_s=5.0, ran=RanSpec(n_prb=106), ues=[ue])
    eng = Engine(sc, seed=3)
    t0 = time.perf_counter()
    wall = eng.run()
    s = build_summary(eng, wall)
    s.pop("wall_seconds")
    out[scheme] = {"summary": s, "seconds": time.perf_counter() - t0}
print(json.dumps({"transport": t.__file__, "runs": out}))
"""


def _run(env: dict[str, str] | None) -> dict[str, object]:
    res = subprocess.run([sys.executable, "-c", RUN], capture_output=True, text=True, env=env,
                         check=True, timeout=600)  # fmt: skip
    doc: dict[str, object] = json.loads(res.stdout)
    return doc


def test_compiled_copy_gives_the_interpreted_results(tmp_path: Path) -> None:
    out = compiled.build(tmp_path / "native")
    assert (out / compiled.STAMP).is_file()
    assert compiled.build(out) == out  # current: not rebuilt
    native = _run(compiled.env(out))
    interp = _run(None)
    assert str(native["transport"]).endswith(".so")  # the extension, not the .py
    assert str(interp["transport"]).endswith(".py")
    n_runs, i_runs = native["runs"], interp["runs"]
    assert isinstance(n_runs, dict) and isinstance(i_runs, dict)
    for scheme in ("bbr", "rocc+dumbo", "gcc"):
        assert n_runs[scheme]["summary"] == i_runs[scheme]["summary"], scheme
