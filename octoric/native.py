"""Where octoric's native RMR library (``librmr_si.so``) is looked for, first hit wins.

One search order for the loader (``octoric.rmr``) and ``octoric doctor``:
``$OCTORIC_RMR_LIB`` (a file), ``$OCTORIC_LIB_DIR/librmr_si.so``, ``<repo>/build/lib`` (a
development tree, ``make native``), then inside the installed package (``octoric/rmr/``, where
the wheel puts it).
"""

from __future__ import annotations

import os
from pathlib import Path

LIB_NAME = "librmr_si.so"
_PACKAGE = Path(__file__).resolve().parent  # octoric/


def rmr_candidates() -> list[Path]:
    out: list[Path] = []
    explicit = os.environ.get("OCTORIC_RMR_LIB")
    if explicit:
        out.append(Path(explicit))
    libdir = os.environ.get("OCTORIC_LIB_DIR")
    if libdir:
        out.append(Path(libdir) / LIB_NAME)
    out.append(_PACKAGE.parent / "build" / "lib" / LIB_NAME)
    out.append(_PACKAGE / "rmr" / LIB_NAME)
    return out


def rmr_library() -> Path | None:
    """The first candidate that exists, or None."""
    return next((p for p in rmr_candidates() if p.is_file()), None)
