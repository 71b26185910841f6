"""Start-up hooks of a Python environment that has octoric: ``.pth`` lines that make an
unmodified ricxappframe program work there as it is.

- ``octoric_rmr_preload.pth``: a plain ``import ricxappframe`` binds octoric's
  ``librmr_si.so``. ricxappframe loads RMR with ``ctypes.CDLL("librmr_si.so")``, a bare name
  the dynamic loader looks for only on the system's library paths (never in a venv) unless an
  object with that soname is already loaded. ``octoric.rmr`` loads its library so
  (``RTLD_GLOBAL``); the hook imports it the moment a program first imports ricxappframe, so
  every other program pays nothing at start (importing ``octoric.rmr`` costs ~30 ms) and the
  library is the one ``octoric.native`` finds: the wheel's own copy, or ``build/lib`` in a
  development tree. ``OCTORIC_RMR_NO_PRELOAD=1`` turns it off (e.g. to bind O-RAN SC's RMR).
- ``octoric_redis_login.pth``: when ``OCTORIC_REDIS_PASSWORD_FILE`` is set (a run whose Redis
  wants a login), ricsdl's Redis clients log in
  (``octoric.xapps.base.sdl.use_redis_credentials``).

The wheel installs both beside its packages (setup.py); ``make setup`` writes them into the
development venv (``python -m octoric.site_hooks``). Standard library only: it runs in every
interpreter start.
"""

from __future__ import annotations

import importlib
import site
import sys
from pathlib import Path
from types import ModuleType

PTH_FILES: dict[str, str] = {
    "octoric_rmr_preload.pth": (
        'import os; os.environ.get("OCTORIC_RMR_NO_PRELOAD") == "1" or '
        "__import__('octoric.site_hooks').site_hooks.preload_rmr_for_ricxappframe()\n"
    ),
    "octoric_redis_login.pth": (
        'import os; os.environ.get("OCTORIC_REDIS_PASSWORD_FILE") and '
        '__import__("octoric.xapps.base.sdl", fromlist=["sdl"]).use_redis_credentials()\n'
    ),
}


class _RmrBeforeRicxappframe:
    """A meta path finder that finds nothing: on the first import of ``ricxappframe`` it loads
    octoric's RMR library (``octoric.rmr``, by name: the core imports no area) and steps
    aside, so ricxappframe's ``CDLL("librmr_si.so")`` gets that library."""

    def find_spec(self, name: str, path: object = None, target: ModuleType | None = None) -> None:
        if name == "ricxappframe":
            uninstall()
            importlib.import_module("octoric.rmr")


def preload_rmr_for_ricxappframe() -> None:
    """Install the hook (idempotent); at once if ricxappframe is already imported."""
    if "ricxappframe" in sys.modules:
        importlib.import_module("octoric.rmr")
    elif not any(isinstance(f, _RmrBeforeRicxappframe) for f in sys.meta_path):
        sys.meta_path.insert(0, _RmrBeforeRicxappframe())


def uninstall() -> None:
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _RmrBeforeRicxappframe)]


def write(site_dir: Path) -> list[Path]:
    """Write the ``.pth`` files into ``site_dir`` (a site-packages folder or a wheel's root)."""
    out = []
    for name, line in PTH_FILES.items():
        path = site_dir / name
        path.write_text(line)
        out.append(path)
    return out


if __name__ == "__main__":  # make setup: this interpreter's (the venv's) site-packages
    write(Path(site.getsitepackages()[0]))
