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


PAYLOAD = """
import os, sys
import octoric.rmr
from ricxappframe.rmr import rmr
octoric.rmr.warm_ricxappframe_constants()
ctx = rmr.rmr_init(sys.argv[1].encode(), 65536, 0x02)  # RMRFL_NOTHREAD: no route table needed
data = os.urandom(40_000) + b"\\0end"  # a NUL inside: string_at with a length keeps it
m = rmr.rmr_alloc_msg(ctx, len(data), payload=data, mtype=12050)
slow = rmr.get_payload(m)
octoric.rmr.fast_ricxappframe_payloads()
octoric.rmr.fast_ricxappframe_payloads()  # idempotent
assert rmr.get_payload.octoric_fast
fast = rmr.get_payload(m)
summary = rmr.message_summary(m)
assert slow == fast == data and summary[rmr.RMR_MS_PAYLOAD] == data
print("ok")
"""


def test_fast_payload_reads_the_same_bytes(our_lib: Path) -> None:
    """``fast_ricxappframe_payloads`` replaces ricxappframe's per-byte payload copy; what
    ``message_summary`` hands a handler is byte for byte the same."""
    from octoric.redis_server import free_port

    env = dict(os.environ, OCTORIC_LIB_DIR=str(our_lib.parent))
    out = subprocess.run(
        [sys.executable, "-c", PAYLOAD, str(free_port())], env=env, capture_output=True,
        text=True, timeout=60,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "ok"
