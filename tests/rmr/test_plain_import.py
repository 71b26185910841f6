"""After `make setup`, an unmodified program's plain `import ricxappframe` binds our library:
no LD_LIBRARY_PATH, no octoric import in the program (a .pth file in the venv preloads it)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.integration

PROGRAM = """
import sys
from ricxappframe.rmr import rmr
ctx = rmr.rmr_init(b"0", 1024, 0)
print("ctx" if ctx else "no ctx")
rmr.rmr_close(ctx)
import octoric.rmr as ours
print(ours.lib_path())
"""


def test_plain_import_ricxappframe_uses_our_library(tmp_path: object) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "PYTHONPATH")}
    r = subprocess.run(
        [sys.executable, "-c", PROGRAM],
        capture_output=True,
        text=True,
        env=env,
        cwd=str(tmp_path),
        timeout=60,
    )
    assert r.returncode == 0, (
        f"{r.stderr}\n(does the venv have octoric_rmr_preload.pth? `make setup`)"
    )
    lines = r.stdout.split()
    assert lines[0] == "ctx" and lines[1].endswith("build/lib/librmr_si.so")
