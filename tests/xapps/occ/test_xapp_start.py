"""Starting the OCC xApp with a descriptor that does not validate: a clear error, exit 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from octoric.redis_server import RedisServer, free_port

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize(
    ("controls", "says"),
    [
        ({"engine": {"beta": 3}}, "controls.engine.beta"),
        ({"reporting_period_ms": "ten"}, "controls.reporting_period_ms"),
        ({"granularity_ms": 5}, "controls.granularity_ms"),
    ],
)
def test_bad_descriptor_at_start(
    redis_server: RedisServer, tmp_path: Path, controls: dict[str, object], says: str
) -> None:
    d = json.loads((REPO / "xapps/occ/config-file.json").read_text())
    d["controls"] = controls
    cfg = tmp_path / "config-file.json"
    cfg.write_text(json.dumps(d))
    env = dict(
        os.environ,
        CONFIG_FILE=str(cfg),
        DBAAS_SERVICE_HOST="127.0.0.1",
        DBAAS_SERVICE_PORT=str(redis_server.port),
    )
    out = subprocess.run(
        [sys.executable, "-m", "octoric.xapps.occ", "--rmr-port", str(free_port()),
         "--http-port", str(free_port())],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert out.returncode == 2, out.stderr[-2000:]
    assert says in out.stderr
