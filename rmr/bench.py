"""``octoric bench ric.rmr``: one-way throughput and latency between two processes.

The driver is ``rmr_bench`` (a bin of the rmr crate) so that the library, not Python,
is measured: one process receives, the other sends through ``rmr_send_msg`` with a static
route table. Our library is always measured; O-RAN SC's RMR too when ``REAL_LIBRMR`` names
its ``librmr_si.so`` (same run, same driver, same payloads), giving the our/real ratio.

Like for like: both libraries run in RMR's low-latency mode (``rmr_set_low_latency`` on
both contexts before any session: TCP_NODELAY; octoric's library has it on always). Real
RMR keeps Nagle's algorithm on by default, which no latency-minded application leaves, so a
default-mode comparison would measure Nagle, not the library. The fast-ack mode
(``rmr_set_fack``, TCP_QUICKACK) and the two mixed pairs (ours -> real, real -> ours) are
measured too.
"""

from __future__ import annotations

import json
import os
import socket
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from octoric.bench import Benchmark, BenchResult
from octoric.errors import OctoricError
from octoric.redis_server import free_port

_CRATE = Path(__file__).resolve().parent
DRIVER = _CRATE / "target" / "release" / "rmr_bench"
SIZES = (100, 1024, 16 * 1024)
LAT_RATE = 10_000  # msg/s for the latency runs (the p99 target is at this rate)
MTYPE = 4242


class BenchDriverError(OctoricError):
    """The bench driver failed or printed something unexpected."""


@dataclass(frozen=True)
class RunResult:
    received: int
    sent: int
    rate: float
    p50_us: float
    p99_us: float


def _wait_listening(port: int, proc: subprocess.Popen[str], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise BenchDriverError(
                f"receiver exited early: {proc.stderr.read() if proc.stderr else ''}"
            )
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.02)
    raise BenchDriverError(f"receiver not listening on {port}")


def run_pair(
    lib: Path, count: int, size: int, rate: int, mode: str = "low-latency",
    tx_lib: Path | None = None,
) -> RunResult:  # fmt: skip
    """One receiver (``lib``) and one sender (``tx_lib``, default ``lib``) process over
    loopback, both in RMR_BENCH_MODE ``mode``; returns the receiver's view."""
    if not DRIVER.is_file():
        raise BenchDriverError(f"{DRIVER} missing: run `make native`")
    rport, sport = free_port(), free_port()
    with tempfile.TemporaryDirectory(prefix="rmr-bench-") as td:
        seed = Path(td) / "rt"
        seed.write_text(f"newrt|start\nrte|{MTYPE}|127.0.0.1:{rport}\nnewrt|end\n")
        env = dict(os.environ)
        env.update(
            RMR_RTG_SVC="-1", RMR_BIND_IF="127.0.0.1", RMR_SEED_RT=str(seed), RMR_LOG_VLEVEL="0",
            RMR_BENCH_MODE=mode,
        )  # fmt: skip
        env.pop("RMR_SRC_ID", None)
        rx = subprocess.Popen(
            [str(DRIVER), "recv", str(lib), str(rport), str(count)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            _wait_listening(rport, rx)
            tx = subprocess.run(
                [str(DRIVER), "send", str(tx_lib or lib), str(sport), str(count), str(size),
                 str(rate)],
                env=env,
                capture_output=True,
                text=True,
                timeout=300,
            )  # fmt: skip
            if tx.returncode != 0:
                raise BenchDriverError(f"sender failed: {tx.stderr[-500:]}")
            out, err = rx.communicate(timeout=120)
        finally:
            if rx.poll() is None:
                rx.kill()
                rx.wait()
    try:
        r = json.loads(out.strip().splitlines()[-1])
        s = json.loads(tx.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError) as e:
        raise BenchDriverError(f"bad driver output: {out!r} {err[-300:]!r}") from e
    return RunResult(
        received=int(r["received"]),
        sent=int(s["sent"]),
        rate=float(r["rate"]),
        p50_us=float(r["p50_us"]),
        p99_us=float(r["p99_us"]),
    )


def _label(size: int) -> str:
    return f"{size // 1024} KB" if size >= 1024 else f"{size} B"


def _libs() -> list[tuple[str, Path]]:
    from octoric.rmr import lib_path

    libs = [("ours", lib_path())]
    real = os.environ.get("REAL_LIBRMR")
    if real:
        if not Path(real).is_file():
            raise BenchDriverError(f"REAL_LIBRMR={real} is not a file")
        libs.append(("real", Path(real)))
    return libs


def run(quick: bool) -> list[BenchResult]:
    libs = _libs()
    repeats = 1 if quick else 3
    rows: list[BenchResult] = []
    baseline_name = "O-RAN SC RMR 4.9 (REAL_LIBRMR), low-latency" if len(libs) > 1 else None
    no_base = "" if len(libs) > 1 else "no baseline: set REAL_LIBRMR to measure real RMR"
    for size in SIZES:
        n_tput = (
            (20_000 if size > 4096 else 50_000) if quick else (50_000 if size > 4096 else 200_000)
        )
        n_lat = 3_000 if quick else 20_000
        tput: dict[str, list[RunResult]] = {}
        lat: dict[str, list[RunResult]] = {}
        for _ in range(repeats):
            for name, lib in libs:
                tput.setdefault(name, []).append(run_pair(lib, n_tput, size, 0))
                lat.setdefault(name, []).append(run_pair(lib, n_lat, size, LAT_RATE))

        def med(rs: list[RunResult], attr: str) -> float:
            return float(statistics.median(getattr(r, attr) for r in rs))

        def base(d: dict[str, list[RunResult]], attr: str) -> float | None:
            return med(d["real"], attr) if "real" in d else None

        lost = sum(r.sent - r.received for r in tput["ours"])
        v = med(tput["ours"], "rate")
        is_1k = size == 1024
        note = f"{lost} of {n_tput * repeats} dropped by the bounded receive queue" if lost else ""
        rows.append(
            BenchResult(
                name=f"rmr one-way throughput, {_label(size)}",
                value=v,
                unit="msg/s",
                baseline_name=baseline_name,
                baseline_value=base(tput, "rate"),
                target=">= 100000 msg/s" if is_1k else None,
                target_met=(v >= 100_000) if is_1k else None,
                samples=repeats,
                note="; ".join(x for x in (note, no_base) if x),
            )
        )
        for attr, label in (("p50_us", "p50"), ("p99_us", "p99")):
            v = med(lat["ours"], attr)
            target = "<= 200 us" if (is_1k and label == "p99") else None
            rows.append(
                BenchResult(
                    name=f"rmr one-way latency {label} @ {LAT_RATE} msg/s, {_label(size)}",
                    value=v,
                    unit="us",
                    higher_is_better=False,
                    baseline_name=baseline_name,
                    baseline_value=base(lat, attr),
                    target=target,
                    target_met=(v <= 200.0) if target else None,
                    samples=repeats,
                    note=no_base,
                )
            )
    if len(libs) > 1:
        rows += _fast_ack_and_mixed(dict(libs), 3_000 if quick else 20_000, repeats)
    return rows


def _fast_ack_and_mixed(libs: dict[str, Path], n_lat: int, repeats: int) -> list[BenchResult]:
    """1 KB at LAT_RATE: both libraries in fast-ack mode, and each direction of a mixed pair
    (ours sending to real RMR and back) in low-latency mode."""
    size = 1024
    out: list[BenchResult] = []
    fack = {n: [run_pair(lib, n_lat, size, LAT_RATE, "fast-ack") for _ in range(repeats)]
            for n, lib in libs.items()}  # fmt: skip
    for attr, label in (("p50_us", "p50"), ("p99_us", "p99")):
        out.append(BenchResult(
            name=f"rmr one-way latency {label} @ {LAT_RATE} msg/s, 1 KB, fast-ack mode",
            value=float(statistics.median(getattr(r, attr) for r in fack["ours"])), unit="us",
            higher_is_better=False, baseline_name="O-RAN SC RMR 4.9 (REAL_LIBRMR), fast-ack",
            baseline_value=float(statistics.median(getattr(r, attr) for r in fack["real"])),
            samples=repeats,
        ))  # fmt: skip
    for rx, tx in (("real", "ours"), ("ours", "real")):
        rs = [run_pair(libs[rx], n_lat, size, LAT_RATE, "low-latency", libs[tx])
              for _ in range(repeats)]  # fmt: skip
        lost = sum(r.sent - r.received for r in rs)
        out.append(BenchResult(
            name=f"rmr mixed pair {tx} -> {rx}: one-way latency p99 @ {LAT_RATE} msg/s, 1 KB",
            value=float(statistics.median(r.p99_us for r in rs)), unit="us",
            higher_is_better=False, samples=repeats,
            note=f"p50 {statistics.median(r.p50_us for r in rs):.1f} us; {lost} lost "
                 "(interop: each library's frames read by the other)",
        ))  # fmt: skip
    return out


def _skip() -> str | None:
    from octoric.rmr import RmrLibraryError, lib_path

    try:
        lib_path()
    except RmrLibraryError as e:
        return str(e)
    if not DRIVER.is_file():
        return f"{DRIVER} missing: run `make native`"
    return None


BENCHMARKS = [
    Benchmark(
        name="rmr",
        area="ric.rmr",
        run=run,
        description="octoric librmr_si.so: one-way throughput and latency, two processes",
        skip_reason=_skip,
    )
]
