"""`octoric doctor` must tell the truth about this machine."""

from __future__ import annotations

import json
import socket
import subprocess
import sys

import pytest

from octoric import doctor

pytestmark = pytest.mark.unit


def _kernel_has_sctp() -> bool:
    try:
        socket.socket(socket.AF_INET, socket.SOCK_STREAM, doctor.IPPROTO_SCTP).close()
    except OSError:
        return False
    return True


def test_sctp_check_matches_the_kernel() -> None:
    c = doctor.check_sctp()
    if _kernel_has_sctp():
        assert c.status == "ok"
    else:
        assert c.status == "warn"
        assert "TCP-framed transport" in c.detail and "modprobe sctp" in c.fix


def test_redis_check_finds_debian_redis() -> None:
    c = doctor.check_redis()
    assert c.status == "ok" and "Redis server v=" in c.detail


def test_librmr_check_reports_missing_library(
    monkeypatch: pytest.MonkeyPatch, tmp_path: object
) -> None:
    from pathlib import Path

    from octoric import native

    # nothing at any place of the search order: env, the tree's build/lib, the package
    monkeypatch.delenv("OCTORIC_RMR_LIB", raising=False)
    monkeypatch.setenv("OCTORIC_LIB_DIR", str(tmp_path))
    monkeypatch.setattr(native, "_PACKAGE", Path(str(tmp_path)) / "octoric")
    c = doctor.check_librmr()
    assert c.status == "fail" and "make setup" in c.fix
    assert str(Path(str(tmp_path)) / "octoric" / "rmr" / "librmr_si.so") in c.detail


def test_json_output_and_exit_code() -> None:
    r = subprocess.run(
        [sys.executable, "-m", "octoric.cli", "doctor", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    checks = json.loads(r.stdout)
    names = {c["name"] for c in checks}
    assert {"python", "redis", "librmr", "sctp", "helm"} <= names
    failed = any(c["status"] == "fail" for c in checks)
    assert r.returncode == (1 if failed else 0)
    for c in checks:
        if c["status"] != "ok":
            assert c["fix"], f"{c['name']} is not ok but gives no fix hint"
