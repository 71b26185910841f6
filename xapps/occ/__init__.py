"""OCC engine (issue #7): per-UE, per-millisecond available bandwidth from KPM PRB/MCS/buffer
measurements, frame-aware (Design 1), APP-limit-aware (Design 2) and smoothed for the
encoder (Design 3), with bottleneck and handover fallback. Pure code, no I/O: the OCC xApp
and the simulator both drive ``OccEngine``.

The names below are loaded on first use, so the light modules of this package (the sender
``client``, ``feedback``, ``flows``, ``records``) import without numpy/numba: a restarted
xApp resumes feedback before the engine is loaded.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from octoric.xapps.occ.batch import AbwBatch, Bottleneck, EngineStats
    from octoric.xapps.occ.config import OccConfig
    from octoric.xapps.occ.engine import OccEngine
    from octoric.xapps.occ.errors import OccConfigError, OccError, OccInputError
    from octoric.xapps.occ.reference import ReferenceEngine

_WHERE = {
    "AbwBatch": "batch",
    "Bottleneck": "batch",
    "EngineStats": "batch",
    "OccConfig": "config",
    "OccEngine": "engine",
    "OccConfigError": "errors",
    "OccError": "errors",
    "OccInputError": "errors",
    "ReferenceEngine": "reference",
}


def __getattr__(name: str) -> Any:
    mod = _WHERE.get(name)
    if mod is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{mod}"), name)


__all__ = [
    "AbwBatch",
    "Bottleneck",
    "EngineStats",
    "OccConfig",
    "OccConfigError",
    "OccEngine",
    "OccError",
    "OccInputError",
    "ReferenceEngine",
]
