"""What the OCC xApp keeps in the SDL (namespace ``octoric.occ``), so a restart resumes.

- ``flow.<id>``: a registered flow (JSON, ``Flow.to_json``);
- ``ue.<AMF-UE-NGAP-ID>``: the UE's latest estimate (JSON ``UeRecord``), every
  ``state_period_ms``;
- ``ckpt.<AMF-UE-NGAP-ID>``: the engine's whole per-UE state (zlib'd npz), every
  ``checkpoint_period_ms``;
- ``sub.<meid>``: the KPM subscription held for a node (JSON).

A checkpoint carries the engine configuration's fingerprint; one taken under another
configuration is ignored (the UE then starts afresh).
"""

from __future__ import annotations

import hashlib
import io
import zlib
from typing import Any

import numpy as np
import numpy.typing as npt

from octoric.xapps.occ.config import OccConfig
from octoric.xapps.occ.records import CKPT, FLOW, SUB, UE, UeRecord

__all__ = ["CKPT", "FLOW", "SUB", "UE", "UeRecord", "fingerprint", "pack_state", "unpack_state"]


def fingerprint(cfg: OccConfig) -> str:
    return hashlib.sha1(repr(cfg).encode()).hexdigest()[:16]


def pack_state(state: dict[str, npt.NDArray[Any]], fp: str) -> bytes:
    buf = io.BytesIO()
    arrays: dict[str, Any] = {"_fingerprint": np.array(fp), **state}
    np.savez(buf, **arrays)
    return zlib.compress(buf.getvalue(), 1)


def unpack_state(blob: bytes, fp: str) -> dict[str, npt.NDArray[Any]] | None:
    """The arrays of a checkpoint taken under configuration ``fp``; None otherwise (or if
    the blob is damaged)."""
    try:
        with np.load(io.BytesIO(zlib.decompress(blob)), allow_pickle=False) as z:
            if str(z["_fingerprint"]) != fp:
                return None
            return {k: z[k] for k in z.files if k != "_fingerprint"}
    except (zlib.error, ValueError, KeyError, OSError):
        return None
