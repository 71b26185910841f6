"""Where octoric's native libraries are (``make setup`` builds them into ``<repo>/build/lib``; the
wheel carries each beside its package's modules)."""

from __future__ import annotations

import ctypes
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def find(name: str, beside: str, env: str | None = None) -> Path | None:
    """Library ``name``: ``$env`` (a file), ``$OCTORIC_LIB_DIR/name``, ``<repo>/build/lib/name``,
    then beside ``beside`` (a module's ``__file__``: where the wheel puts it); None if none is
    a file."""
    cands = []
    if env and os.environ.get(env):
        cands.append(Path(os.environ[env]))
    if os.environ.get("OCTORIC_LIB_DIR"):
        cands.append(Path(os.environ["OCTORIC_LIB_DIR"]) / name)
    cands += [REPO / "build" / "lib" / name, Path(beside).resolve().parent / name]
    return next((p for p in cands if p.is_file()), None)


def load(path: Path | None, signatures: Sequence[tuple[str, list[Any], Any]]) -> ctypes.CDLL | None:
    """The library at ``path`` with each ``(name, argtypes, restype)`` of ``signatures`` set;
    None where there is none, or it lacks a function (older than this package: ``make setup``
    rebuilds it; the callers' Python paths run meanwhile)."""
    if path is None:
        return None
    lib = ctypes.CDLL(str(path))
    if not all(hasattr(lib, name) for name, _, _ in signatures):
        return None
    for name, args, res in signatures:
        fn = getattr(lib, name)
        fn.argtypes, fn.restype = args, res
    return lib
