"""octoric's wheel carries its native libraries: ``octoric/rmr/librmr_si.so`` (RMR) and
``octoric/e2sm/libocto_e2sm.so`` (the native KPM decoder; without it the Python one runs) and
``octoric/sim/realue/libocto_realue.so`` (the real-UE path's release thread) and
``octoric/xapps/occ/libocto_occ.so`` (the OCC xApp's native indication path; without it the
Python one runs) and ``octoric/ric/libocto_e2relay.so`` (e2term's native relay, likewise).

Everything else is in pyproject.toml. The wheel is a platform wheel (the library is x86-64
Linux code), built from ``$OCTORIC_RMR_LIB`` when set (a library already built, e.g.
``build/lib/librmr_si.so``), else with ``cargo build --release``. Editable installs (``make
setup``) skip it: the loader finds ``build/lib/librmr_si.so`` in the tree.

The wheel also carries ``octoric_rmr_preload.pth`` and ``octoric_redis_login.pth`` at its root
(``octoric/site_hooks.py``): installed into site-packages, they make a plain ``import
ricxappframe`` bind the wheel's ``librmr_si.so`` (which ricxappframe's bare
``CDLL("librmr_si.so")`` could not find in a venv) and let its ricsdl log in to a Redis that
wants a password. ``make setup`` writes the same files into the development venv.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

ROOT = Path(__file__).resolve().parent


def _native(env: str, crate: str, lib: str) -> Path:
    """``$env`` when set (a library already built), else ``cargo build`` of ``crate``."""
    given = os.environ.get(env)
    if given:
        return Path(given)
    manifest = ROOT / crate / "Cargo.toml"
    subprocess.run(["cargo", "build", "--release", "--manifest-path", str(manifest)], check=True)
    return ROOT / crate / "target" / "release" / lib


# (environment variable, crate, library, where it goes in the wheel)
NATIVE = (
    ("OCTORIC_RMR_LIB", "rmr", "librmr_si.so", "octoric/rmr"),
    ("OCTORIC_E2SM_LIB", "e2sm/native", "libocto_e2sm.so", "octoric/e2sm"),
    ("OCTORIC_REALUE_LIB", "sim/realue/native", "libocto_realue.so", "octoric/sim/realue"),
    ("OCTORIC_OCC_LIB", "xapps/occ/native", "libocto_occ.so", "octoric/xapps/occ"),
    ("OCTORIC_E2RELAY_LIB", "ric/native", "libocto_e2relay.so", "octoric/ric"),
)


def _write_site_hooks(root: Path) -> None:
    # by file: the build backend does not put this folder on sys.path
    spec = importlib.util.spec_from_file_location("_hooks", ROOT / "octoric" / "site_hooks.py")
    assert spec is not None and spec.loader is not None
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)
    hooks.write(root)


class BuildPyWithRmr(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        for env, crate, lib, where in NATIVE:
            shutil.copy2(_native(env, crate, lib), Path(self.build_lib) / where / lib)
        _write_site_hooks(Path(self.build_lib))  # beside the packages: site-packages' root


class PlatformDistribution(Distribution):
    def has_ext_modules(self) -> bool:
        return True  # a native library inside: tag the wheel for this platform


setup(distclass=PlatformDistribution, cmdclass={"build_py": BuildPyWithRmr})
