"""OCC engine (issue #7): per-UE, per-millisecond available bandwidth from KPM PRB/MCS/buffer
measurements, frame-aware (Design 1), APP-limit-aware (Design 2) and smoothed for the
encoder (Design 3), with bottleneck and handover fallback. Pure code, no I/O: the OCC xApp
and the simulator both drive ``OccEngine``."""

from octoric.xapps.occ.batch import AbwBatch, Bottleneck, EngineStats
from octoric.xapps.occ.config import OccConfig
from octoric.xapps.occ.engine import OccEngine
from octoric.xapps.occ.errors import OccConfigError, OccError, OccInputError
from octoric.xapps.occ.reference import ReferenceEngine

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
