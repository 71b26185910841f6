"""Issue #11, done-when 4: a production install (no dev extras) imports every product module.

Builds octoric from a copy of the working tree into a fresh venv with only the runtime
dependencies of pyproject.toml, pinned by requirements.lock (``-c``), then imports every module
under ``octoric``. Test helpers (pytest, hypothesis) must not be needed, nor installed.

Needs the package index (PyPI) the first time; pip's cache makes later runs quick. The wheel is
built with this tree's ``build/lib/librmr_si.so`` (``OCTORIC_RMR_LIB`` at build time, so the test
need not compile the crate again); after that the installed package finds the library inside
itself, which ``octoric doctor`` confirms (issue #16, done-when 4).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LIB = REPO / "build" / "lib" / "librmr_si.so"

pytestmark = pytest.mark.integration

IMPORT_ALL = r"""
import importlib, json, pkgutil, sys
import octoric
names, failed = [], {}
for m in pkgutil.walk_packages(octoric.__path__, "octoric."):
    native = ("octoric.rmr.librmr_si", "octoric.e2sm.libocto_e2sm",
              "octoric.sim.realue.libocto_realue")
    if m.name.endswith("__main__") or m.name in native:
        continue  # a program, and the native libraries (C ABI, not Python modules)
    names.append(m.name)
    try:
        importlib.import_module(m.name)
    except Exception as e:  # report every one, not the first
        failed[m.name] = f"{type(e).__name__}: {e}"
dev = [p for p in ("pytest", "hypothesis", "mypy", "ruff") if importlib.util.find_spec(p)]
from octoric.e2sm import native
from octoric.sim.realue import release
print(json.dumps({"modules": names, "failed": failed, "dev_installed": dev,
                  "file": octoric.__file__, "e2sm_lib": str(native.library_path()),
                  "realue_lib": str(release.library_path())}))
"""


def _tracked_copy(dst: Path) -> None:
    files = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=REPO, capture_output=True, check=True,
    ).stdout.decode().split("\0")  # fmt: skip
    for rel in filter(None, files):
        src = REPO / rel
        if not src.exists() and not src.is_symlink():
            continue  # deleted in the working tree
        out = dst / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():
            out.symlink_to(os.readlink(src))
        else:
            shutil.copy2(src, out)


def test_production_install_imports_every_module(tmp_path: Path) -> None:
    if not LIB.is_file():
        pytest.skip("build/lib/librmr_si.so is not built (make native)")
    src, venv = tmp_path / "src", tmp_path / "venv"
    _tracked_copy(src)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = venv / "bin" / "python"
    pip = [str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    build_env = {**os.environ, "OCTORIC_RMR_LIB": str(LIB),
                 "OCTORIC_E2SM_LIB": str(LIB.with_name("libocto_e2sm.so")),
                 "OCTORIC_REALUE_LIB": str(LIB.with_name("libocto_realue.so"))}  # fmt: skip
    r = subprocess.run(
        [*pip, str(src), "-c", str(REPO / "requirements.lock")],
        capture_output=True, text=True, timeout=900, env=build_env,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    # the license travels with the package (PEP 639 license-files)
    licenses = list(venv.glob("lib/python3.11/site-packages/octoric-*.dist-info/licenses/LICENSE"))
    assert licenses and "Apache License" in licenses[0].read_text(), licenses
    env = {k: v for k, v in os.environ.items() if not k.startswith("OCTORIC_")}
    env["PYTHONPATH"] = ""
    r = subprocess.run(
        [str(py), "-c", IMPORT_ALL], cwd=tmp_path, env=env,
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    out = __import__("json").loads(r.stdout.strip().splitlines()[-1])
    assert str(venv) in out["file"], f"imported the wrong octoric: {out['file']}"
    assert str(venv) in out["e2sm_lib"], out  # the wheel's native KPM decoder is the one found
    assert str(venv) in out["realue_lib"], out  # and the real-UE path's release thread
    assert out["failed"] == {}, out["failed"]
    assert out["dev_installed"] == []
    mods = set(out["modules"])
    for must in ("octoric.contracts.feedback", "octoric.e2sm.transport", "octoric.ric.e2term",
                 "octoric.sim.engine", "octoric.xapps.occ.xapp", "octoric.experiments.occ_eval",
                 "octoric.deploy.embedded", "octoric.rmr"):  # fmt: skip
        assert must in mods, f"{must} is not in the installed package"
    assert not any(m.startswith("octoric.testing") for m in mods)
    # the native library travels inside the package and the installed doctor finds it there
    r = subprocess.run(
        [str(venv / "bin" / "octoric"), "doctor", "--json"], cwd=tmp_path, env=env,
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    checks = {c["name"]: c for c in __import__("json").loads(r.stdout)}
    assert checks["librmr"]["status"] == "ok", checks["librmr"]
    assert str(venv) in checks["librmr"]["detail"], checks["librmr"]


def test_first_setup_editable_install_is_quiet(tmp_path: Path) -> None:
    """issue #16: `make setup` printed setuptools' warning box on first use. Its editable
    install, run as the Makefile runs it (same pins, same flags) in a fresh venv, prints
    nothing, and the install imports from anywhere."""
    make = (REPO / "Makefile").read_text()
    pins = next(ln for ln in make.splitlines() if "setuptools==" in ln).split("install", 1)[1]
    editable = next(ln for ln in make.splitlines() if " -e . " in ln).strip()
    src, venv = tmp_path / "src", tmp_path / "venv"
    _tracked_copy(src)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = str(venv / "bin" / "python")
    subprocess.run([py, "-m", "pip", "install", *pins.split()], check=True, capture_output=True)
    argv = editable.replace("$(PY)", py).split()
    r = subprocess.run(argv, cwd=src, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.strip() == "" and r.stderr.strip() == "", r.stdout + r.stderr
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    r = subprocess.run([py, "-c", "import octoric; print(octoric.__file__)"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=60, env=env)  # fmt: skip
    assert r.returncode == 0 and r.stdout.strip() == str(src / "octoric" / "__init__.py"), r
