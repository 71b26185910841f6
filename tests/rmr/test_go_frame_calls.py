"""The RMR calls the Go xapp-frame and C xApps make (programs/go_frame_calls.c: an epoll loop
on ``rmr_get_rcvfd``, trace data on the wire, string transaction IDs, ``rmr_rcv_specific``,
rx debug counters, low-latency and fast-ack modes), compiled with -Werror and run against
octoric's library, and against O-RAN SC's RMR 4.9 when REAL_LIBRMR names it (docs/rmr.md):
one program, either library."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from .conftest import free_port, rmr_env

pytestmark = pytest.mark.integration
PROGRAM = Path(__file__).resolve().parent / "programs" / "go_frame_calls.c"


@pytest.fixture(scope="module")
def program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.fail("no C compiler (gcc) on this machine")
    out = tmp_path_factory.mktemp("cprog") / "go_frame_calls"
    r = subprocess.run([cc, "-std=c11", "-D_GNU_SOURCE", "-Wall", "-Wextra", "-Werror", "-O1",
                        "-o", str(out), str(PROGRAM), "-ldl"],
                       capture_output=True, text=True, timeout=120)  # fmt: skip
    assert r.returncode == 0, r.stderr
    return out


def _run(program: Path, lib: Path, tmp_path: Path) -> None:
    rx, tx = free_port(), free_port()
    seed = tmp_path / "rt"
    seed.write_text(f"newrt|start\nrte|100|127.0.0.1:{rx}\nnewrt|end\n")
    env = rmr_env(seed)
    env["RMR_LOG_VLEVEL"] = "0"
    r = subprocess.run([str(program), str(lib), str(rx), str(tx)], env=env,
                       capture_output=True, text=True, timeout=60)  # fmt: skip
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stdout + r.stderr[-2000:]


def test_against_our_library(program: Path, our_lib: Path, tmp_path: Path) -> None:
    _run(program, our_lib, tmp_path)


@pytest.mark.skipif(
    not os.environ.get("REAL_LIBRMR"),
    reason="REAL_LIBRMR not set: build O-RAN SC RMR 4.9 outside the repo (docs/rmr.md)",
)
def test_against_real_rmr(program: Path, tmp_path: Path) -> None:
    real = Path(os.environ["REAL_LIBRMR"])
    if not real.is_file():
        pytest.fail(f"REAL_LIBRMR={real} is not a file")
    _run(program, real, tmp_path)


# Every function RMR 4.9.4's public header (src/rmr/common/include/rmr.h) declares.
RMR_H = [
    "rmr_alloc_msg",
    "rmr_bytes2meid",
    "rmr_bytes2payload",
    "rmr_bytes2xact",
    "rmr_call",
    "rmr_close",
    "rmr_free_msg",
    "rmr_get_meid",
    "rmr_get_rcvfd",
    "rmr_get_rx_debug_info",
    "rmr_get_src",
    "rmr_get_srcip",
    "rmr_get_trace",
    "rmr_get_trlen",
    "rmr_get_xact",
    "rmr_init",
    "rmr_init_trace",
    "rmr_mt_call",
    "rmr_mt_rcv",
    "rmr_mtosend_msg",
    "rmr_payload_size",
    "rmr_rcv_msg",
    "rmr_rcv_specific",
    "rmr_rcv_to",
    "rmr_ready",
    "rmr_realloc_msg",
    "rmr_realloc_payload",
    "rmr_reset_rx_debug_count",
    "rmr_rts_msg",
    "rmr_send_msg",
    "rmr_send_to",
    "rmr_set_fack",
    "rmr_set_low_latency",
    "rmr_set_rtimeout",
    "rmr_set_stimeout",
    "rmr_set_trace",
    "rmr_set_vlevel",
    "rmr_str2meid",
    "rmr_str2payload",
    "rmr_str2xact",
    "rmr_torcv_msg",
    "rmr_trace_ref",
    "rmr_tralloc_msg",
    "rmr_wh_call",
    "rmr_wh_close",
    "rmr_wh_open",
    "rmr_wh_send_msg",
    "rmr_wh_state",
]


def test_every_function_of_rmr_h_is_exported(our_lib: Path) -> None:
    import ctypes

    lib = ctypes.CDLL(str(our_lib), mode=ctypes.RTLD_LOCAL)
    missing = [name for name in RMR_H if not hasattr(lib, name)]
    assert not missing, missing
