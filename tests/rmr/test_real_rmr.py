"""Interop with O-RAN SC's real RMR 4.9 (needs REAL_LIBRMR=/path/librmr_si.so; see
docs/rmr.md for building it outside the repository). Both directions: our client against
their echo, their client against our echo."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import free_port, rmr_env, wait_listening

PEER = Path(__file__).resolve().parent / "ctypes_peer.py"
REAL = os.environ.get("REAL_LIBRMR")

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        not REAL,
        reason="REAL_LIBRMR not set: build O-RAN SC RMR 4.9 outside the repo (docs/rmr.md)",
    ),
]


@pytest.mark.parametrize("direction", ["ours->real", "real->ours"])
def test_interop(direction: str, tmp_path: Path, our_lib: Path) -> None:
    assert REAL is not None
    if not Path(REAL).is_file():
        pytest.fail(f"REAL_LIBRMR={REAL} is not a file")
    client_lib, echo_lib = (our_lib, REAL) if direction == "ours->real" else (REAL, our_lib)
    n = 5
    pe, pc = free_port(), free_port()
    seed = tmp_path / "rt"
    seed.write_text(f"newrt|start\nrte|1000|127.0.0.1:{pe}\nnewrt|end\n")
    env = rmr_env(seed)
    env["RMR_SRC_ID"] = "127.0.0.1"
    # the venv preloads our library with RTLD_GLOBAL (octoric_rmr_preload.pth); its symbols
    # would then interpose on real RMR's calls into itself in the peer that loads it by path
    env["OCTORIC_RMR_NO_PRELOAD"] = "1"
    echo = subprocess.Popen(
        [sys.executable, str(PEER), "echo", str(echo_lib), str(pe), str(n)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_listening(pe)
        cl = subprocess.run(
            [sys.executable, str(PEER), "client", str(client_lib), str(pc), str(n)],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert cl.returncode == 0, cl.stderr[-2000:]
        res = json.loads(cl.stdout.strip().splitlines()[-1])
    finally:
        echo.kill()
        echo.wait()
    assert res["send_states"] == [0] * n
    replies = sorted(res["replies"], key=lambda r: r["payload"])
    assert len(replies) == n, replies
    for i, r in enumerate(replies):
        assert r["mtype"] == 1001
        assert r["payload"] == f"re:hello-{i}"
        assert r["sub_id"] == 77
        assert r["xid"] == f"xid-{i:028d}"
        assert r["meid"] == "gnb_001_001_00019b"
        assert r["src"] == f"127.0.0.1:{pe}"
