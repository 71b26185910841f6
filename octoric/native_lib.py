"""Where octoric's native libraries are (``make setup`` builds them into ``<repo>/build/lib``; the
wheel carries each beside its package's modules)."""

from __future__ import annotations

import os
from pathlib import Path

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
