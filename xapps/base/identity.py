"""How the xApps write a UE's identity in their JSON (30500/30501, REST, SDL). Standard
library only: a restarting xApp reads its records before anything heavy loads."""

from __future__ import annotations

from typing import Any


def guami_str(g: Any) -> str | None:
    """``<PLMN hex>:<AMF region>:<AMF set>:<AMF pointer>`` of an ``e2sm.common.Guami``, e.g.
    ``00f110:1:1:0``."""
    if g is None:
        return None
    return f"{g.plmn.hex()}:{g.amf_region_id}:{g.amf_set_id}:{g.amf_pointer}"
