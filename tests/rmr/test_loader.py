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


WARM = """
import octoric.rmr
from ricxappframe.rmr.rmrclib import rmrclib
calls = []
real = rmrclib._rmr_get_consts
def counting():
    calls.append(1)
    return real()
rmrclib._rmr_get_consts = counting
rmrclib.get_constants(); rmrclib.get_constants()
before = len(calls)
octoric.rmr.warm_ricxappframe_constants()
for _ in range(100):
    assert rmrclib.get_constants()["RMR_MAX_MEID"] == 32
print(before, len(calls) - before)
"""


def test_ricxappframe_constants_are_read_once_after_warming(our_lib: Path) -> None:
    """ricxappframe's own cache never fills (ricxappframe 3.x reads RMR's JSON on every
    call); after ``warm_ricxappframe_constants`` at most one read serves 100 later calls."""
    env = dict(os.environ, OCTORIC_LIB_DIR=str(our_lib.parent))
    out = subprocess.run(
        [sys.executable, "-c", WARM], env=env, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr[-2000:]
    before, after = map(int, out.stdout.split())
    assert before >= 1 and after <= 1
