"""Builds liboctopus (``srsran_agent/liboctopus``, C++17, CMake) for the tests, the benchmark
and the differential check against the simulator's dropper.

One place for the build so ``make test``, ``octoric bench octopus`` and the tests agree on the
directory and flags: ``build/liboctopus`` (Release) and ``build/liboctopus-asan`` (sanitizers).
Needs cmake, a C++17 compiler, and for the tests GoogleTest and nlohmann-json (Debian:
``libgtest-dev nlohmann-json3-dev``; ``make test`` installs them on first use).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SOURCE = REPO / "srsran_agent" / "liboctopus"


class BuildError(RuntimeError):
    """cmake or the compiler is missing, or the build failed (the message says which)."""


def build_dir(sanitize: bool = False) -> Path:
    return REPO / "build" / ("liboctopus-asan" if sanitize else "liboctopus")


def build(sanitize: bool = False, tests: bool = True, quiet: bool = True) -> Path:
    """Configure (once) and build; returns the build directory. Raises BuildError."""
    for tool in ("cmake", "c++"):
        if shutil.which(tool) is None:
            raise BuildError(f"{tool} not found: install cmake and g++ (Debian: cmake g++)")
    out = build_dir(sanitize)
    out.mkdir(parents=True, exist_ok=True)
    gen = ["-G", "Ninja"] if shutil.which("ninja") else []
    cfg = [
        "cmake", *gen, "-S", str(SOURCE), "-B", str(out),
        f"-DOCTOPUS_TESTS={'ON' if tests else 'OFF'}",
        f"-DOCTOPUS_SANITIZE={'ON' if sanitize else 'OFF'}",
        f"-DCMAKE_BUILD_TYPE={'RelWithDebInfo' if sanitize else 'Release'}",
    ]  # fmt: skip
    _run(cfg, quiet)
    _run(["cmake", "--build", str(out), "-j2"], quiet)
    return out


def _run(cmd: list[str], quiet: bool = True) -> None:
    """One cmake step; BuildError with the output's last lines if it fails."""
    r = subprocess.run(cmd, capture_output=quiet, text=True)
    if r.returncode != 0:
        tail = "\n".join(((r.stdout or "") + (r.stderr or "")).strip().splitlines()[-25:])
        raise BuildError(f"liboctopus: {' '.join(cmd[:2])} failed:\n{tail}")


def tool(name: str, sanitize: bool = False) -> Path:
    """Path of a built tool (``octopus_replay``, ``octopus_bench``), configured first if needed
    and always brought up to date (an incremental build: a tool older than the sources would
    measure or replay the old code)."""
    out = build_dir(sanitize)
    if not (out / "CMakeCache.txt").exists():
        build(sanitize=sanitize, tests=False)
    else:
        _run(["cmake", "--build", str(out), "-j2", "--target", name])
    return out / name
