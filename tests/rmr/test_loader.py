"""`import octoric.rmr` makes ricxappframe's dlopen("librmr_si.so") find our library,
with no LD_LIBRARY_PATH."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

PROBE = """
import ctypes
import octoric.rmr
from ricxappframe.rmr.rmrclib import rmrclib
assert hasattr(rmrclib.rmr_c_lib, "octoric_rmr_stats"), "ricxappframe bound another library"
maps = open("/proc/self/maps").read()
print([l.split()[-1] for l in maps.splitlines() if "librmr_si" in l][0])
"""


def test_plain_ricxappframe_import_binds_our_library(our_lib: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    env["OCTORIC_LIB_DIR"] = str(our_lib.parent)
    out = subprocess.run(
        [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert Path(out.stdout.strip()).resolve() == our_lib.resolve()
