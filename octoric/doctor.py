"""``octoric doctor``: what this machine has, what octoric needs, and how to fix what is missing."""

from __future__ import annotations

import errno
import json
import os
import shutil
import socket
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

from octoric import __version__
from octoric.native import rmr_candidates, rmr_library

REPO = Path(__file__).resolve().parent.parent
Status = Literal["ok", "warn", "fail"]
IPPROTO_SCTP = 132


@dataclass
class Check:
    name: str
    status: Status
    detail: str
    fix: str = ""


def _version_of(cmd: list[str]) -> str | None:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (out.stdout or out.stderr).strip().splitlines()
    return text[0] if out.returncode == 0 and text else None


def check_python() -> Check:
    v = sys.version_info
    if (v.major, v.minor) == (3, 11):
        return Check("python", "ok", f"Python {sys.version.split()[0]} at {sys.executable}")
    return Check(
        "python",
        "fail",
        f"Python {v.major}.{v.minor}; octoric needs 3.11",
        "install Python 3.11 and run `make setup`",
    )


def check_octoric() -> Check:
    return Check("octoric", "ok", f"octoric {__version__} from {REPO}")


def check_redis() -> Check:
    path = shutil.which("redis-server")
    if not path:
        return Check(
            "redis",
            "fail",
            "redis-server not found",
            "`make setup`, or: apt-get update && apt-get install -y redis-server",
        )
    return Check("redis", "ok", _version_of([path, "--version"]) or path)


# What an unmodified xApp runs: ricxappframe's own ``CDLL("librmr_si.so")``, in a fresh
# interpreter of this environment. A bare name the loader finds only if octoric's start-up hook
# (octoric_rmr_preload.pth, octoric/site_hooks.py) loaded the library first; prints the file bound.
_PLAIN_IMPORT = (
    "from ricxappframe.rmr import rmr\n"
    "print(next((ln.split()[-1] for ln in open('/proc/self/maps') if 'librmr_si' in ln), '?'))"
)


def check_librmr() -> Check:
    path = rmr_library()
    if path is None:
        tried = ", ".join(str(p) for p in rmr_candidates())
        return Check(
            "librmr",
            "fail",
            f"librmr_si.so not found (tried {tried})",
            "`make setup` builds it (needs cargo: rustup or `apt-get install cargo`)",
        )
    try:
        r = subprocess.run(
            [sys.executable, "-c", _PLAIN_IMPORT], capture_output=True, text=True, timeout=60
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        return Check("librmr", "fail", f"`import ricxappframe` did not finish: {e}", "rerun")
    if r.returncode != 0:
        why = (r.stderr.strip().splitlines() or ["no error output"])[-1]
        if os.environ.get("OCTORIC_RMR_NO_PRELOAD") == "1":
            fix = "unset OCTORIC_RMR_NO_PRELOAD (it turns octoric's start-up hook off)"
        else:
            fix = (
                f"`make setup` in a development tree, or reinstall octoric's wheel into "
                f"{sys.prefix} (its octoric_rmr_preload.pth makes ricxappframe find {path}; "
                "docs/rmr.md)"
            )
        return Check("librmr", "fail", f"a plain `import ricxappframe` fails: {why}", fix)
    bound = r.stdout.strip()
    if Path(bound) != path:
        return Check(
            "librmr",
            "warn",
            f"a plain `import ricxappframe` binds {bound}, not octoric's {path}",
            "unset OCTORIC_RMR_NO_PRELOAD unless you mean to use another RMR",
        )
    return Check("librmr", "ok", f"a plain `import ricxappframe` binds {path}")


def check_sctp() -> Check:
    try:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, IPPROTO_SCTP)
    except OSError as e:
        why = "EPROTONOSUPPORT" if e.errno == errno.EPROTONOSUPPORT else (e.strerror or str(e))
        return Check(
            "sctp",
            "warn",
            f"kernel has no SCTP ({why}); E2 uses octoric's TCP-framed transport on port 36421",
            "on a host you control: `modprobe sctp` (and load it in the host kernel for "
            "containers); production E2 nodes (srsRAN) need SCTP",
        )
    s.close()
    return Check("sctp", "ok", "kernel SCTP available: E2 can use SCTP on 36421")


def check_helm() -> Check:
    path = shutil.which("helm") or next(
        (str(p) for p in [Path.home() / "go" / "bin" / "helm"] if p.exists()), None
    )
    if not path:
        return Check(
            "helm",
            "warn",
            "helm not found (needed only for charts/ and their tests)",
            "go install helm.sh/helm/v3/cmd/helm@v3.16.4; export PATH=$PATH:~/go/bin",
        )
    return Check("helm", "ok", _version_of([path, "version", "--short"]) or path)


def check_cargo() -> Check:
    path = shutil.which("cargo") or (
        str(Path.home() / ".cargo" / "bin" / "cargo")
        if (Path.home() / ".cargo" / "bin" / "cargo").exists()
        else None
    )
    if not path:
        return Check(
            "cargo",
            "warn",
            "cargo not found (needed to build librmr_si.so)",
            "install Rust with rustup, or apt-get install cargo",
        )
    return Check("cargo", "ok", _version_of([path, "--version"]) or path)


def check_netns() -> Check:
    if os.geteuid() != 0:
        return Check(
            "netns",
            "warn",
            "not root: network-namespace tests will skip",
            "run the tests as root (CI does)",
        )
    if not shutil.which("ip"):
        return Check(
            "netns",
            "warn",
            "`ip` not found: network-namespace tests will skip",
            "apt-get install -y iproute2",
        )
    return Check("netns", "ok", "root with iproute2: network-namespace tests can run")


CHECKS = [
    check_python,
    check_octoric,
    check_redis,
    check_librmr,
    check_sctp,
    check_helm,
    check_cargo,
    check_netns,
]


def run_checks() -> list[Check]:
    return [c() for c in CHECKS]


def main(as_json: bool = False) -> int:
    checks = run_checks()
    if as_json:
        print(json.dumps([asdict(c) for c in checks], indent=2))
    else:
        mark = {"ok": "ok  ", "warn": "WARN", "fail": "FAIL"}
        for c in checks:
            print(f"[{mark[c.status]}] {c.name:<8} {c.detail}")
            if c.fix and c.status != "ok":
                print(f"{'':16}fix: {c.fix}")
    return 1 if any(c.status == "fail" for c in checks) else 0
