"""``make test`` / ``make test-all``: native suites, then pytest, then one summary.

Prints a closing line ``summary: N passed, N failed, N skipped`` and exits non-zero when
anything failed or when no test ran at all (pytest's exit code 5 is an error here).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# Native crates whose `cargo test` is part of `make test` (skipped until they exist).
CARGO_CRATES = ["rmr", "e2sm/native", "sim/realue/native"]
# CMake projects whose ctest suite is part of `make test`.
CMAKE_PROJECTS = ["srsran_agent/liboctopus"]
# Native suites that only `make test-all` runs (sanitizers, long fuzz smoke runs).
SLOW_SCRIPTS: list[str] = [
    "rmr/scripts/test-sanitizers.sh",
    "srsran_agent/liboctopus/scripts/test-sanitizers.sh",
]


@dataclass
class SuiteResult:
    name: str
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    seconds: float = 0.0
    exit_code: int = 0
    note: str = ""

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and self.failed == 0


def _count(pattern: str, text: str) -> int:
    return sum(int(m) for m in re.findall(pattern, text))


def _run(name: str, cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> SuiteResult:
    print(f"\n=== {name}: {' '.join(cmd)}", flush=True)
    t0 = time.monotonic()
    proc = subprocess.Popen(
        cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
    )
    assert proc.stdout is not None
    out = []
    for line in proc.stdout:
        sys.stdout.write(line)
        out.append(line)
    rc = proc.wait()
    return SuiteResult(name, exit_code=rc, seconds=time.monotonic() - t0, note="".join(out[-200:]))


def run_cargo(crate: str) -> SuiteResult | None:
    path = REPO / crate
    if not (path / "Cargo.toml").exists():
        return None
    if not shutil.which("cargo"):
        return SuiteResult(f"cargo test ({crate})", failed=1, exit_code=1, note="cargo missing")
    r = _run(f"cargo test ({crate})", ["cargo", "test", "--release", "-q"], path)
    text = r.note
    r.passed = _count(r"test result: \w+\. (\d+) passed", text)
    r.failed = _count(r"; (\d+) failed", text)
    r.skipped = _count(r"; (\d+) ignored", text)
    if r.exit_code != 0 and r.failed == 0:
        r.failed = 1  # a build failure counts as a failure
    r.note = ""
    return r


def run_ctest(project: str) -> SuiteResult | None:
    """Build with CMake (octoric.liboctopus) and run ctest."""
    from octoric import liboctopus

    if not (REPO / project / "CMakeLists.txt").exists():
        return None
    name = f"ctest ({project.rsplit('/', 1)[-1]})"
    print(f"\n=== {name}: build", flush=True)
    t0 = time.monotonic()
    try:
        out = liboctopus.build()
    except liboctopus.BuildError as e:
        print(e, file=sys.stderr)
        return SuiteResult(name, failed=1, exit_code=1, seconds=time.monotonic() - t0)
    r = _run(name, ["ctest", "--output-on-failure", "-j2"], out)
    r.seconds = time.monotonic() - t0
    m = re.search(r"(\d+)% tests passed, (\d+) tests failed out of (\d+)", r.note)
    if m:
        r.failed, total = int(m.group(2)), int(m.group(3))
        r.passed = total - r.failed
    if r.exit_code != 0 and r.failed == 0:
        r.failed = 1
    if r.passed == 0 and r.failed == 0:
        r.failed, r.exit_code = 1, 1  # no tests found is an error
    r.note = ""
    return r


def run_script(script: str) -> SuiteResult | None:
    path = REPO / script
    if not path.exists():
        return None
    r = _run(script, ["bash", str(path)], REPO)
    r.passed, r.failed = (1, 0) if r.exit_code == 0 else (0, 1)
    r.note = ""
    return r


def run_pytest(all_tests: bool, extra: list[str]) -> SuiteResult:
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider"]
    if not all_tests:
        cmd += ["-m", "not slow"]
    cmd += extra
    env = dict(os.environ)
    lib = REPO / "build" / "lib"
    env["OCTORIC_LIB_DIR"] = str(lib)
    r = _run("pytest", cmd, REPO, env)
    tail = r.note.strip().splitlines()[-1] if r.note.strip() else ""
    r.passed = _count(r"(\d+) passed", tail)
    r.failed = _count(r"(\d+) failed", tail) + _count(r"(\d+) errors?", tail)
    r.skipped = _count(r"(\d+) skipped", tail)
    if r.exit_code == 5:
        r.failed += 1
        print("pytest collected no tests: that is an error, not a pass", file=sys.stderr)
    elif r.exit_code != 0 and r.failed == 0:
        r.failed = 1
    r.note = ""
    return r


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m octoric.testrun")
    ap.add_argument("--all", action="store_true", help="slow suites too (make test-all)")
    ap.add_argument("--no-native", action="store_true", help="pytest only (skip cargo suites)")
    args, extra = ap.parse_known_args(argv)
    results: list[SuiteResult] = []
    for crate in [] if args.no_native else CARGO_CRATES:
        r = run_cargo(crate)
        if r:
            results.append(r)
    for project in [] if args.no_native else CMAKE_PROJECTS:
        r = run_ctest(project)
        if r:
            results.append(r)
    if args.all and not args.no_native:
        for script in SLOW_SCRIPTS:
            r = run_script(script)
            if r:
                results.append(r)
    results.append(run_pytest(args.all, extra))

    print("\n=== octoric test summary")
    for r in results:
        status = "ok" if r.ok else "FAILED"
        print(
            f"  {r.name:<28} {status:<7} {r.passed:>5} passed {r.failed:>4} failed "
            f"{r.skipped:>4} skipped  {r.seconds:7.1f} s"
        )
    passed = sum(r.passed for r in results)
    failed = sum(r.failed for r in results)
    skipped = sum(r.skipped for r in results)
    print(f"summary: {passed} passed, {failed} failed, {skipped} skipped")
    return 0 if failed == 0 and passed > 0 and all(r.ok for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
