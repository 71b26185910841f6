"""The JSON schemas (draft 2020-12) of octoric's RMR payloads and A1 policy types.

| name | what |
|---|---|
| ``abw_report`` | RMR 30500 OCTORIC_ABW_REPORT (OCC xApp) |
| ``ho_event`` | RMR 30501 OCTORIC_HO_EVENT (handover xApp) |
| ``octopus_status`` | RMR 30502 OCTORIC_OCTOPUS_STATUS (octopus xApp, issue #13) |
| ``octopus_drop_policy`` | A1 policy type 30500 "octopus-drop-policy" (``create_schema``) |
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SCHEMA_DIR = Path(__file__).resolve().parent / "schemas"
VERSION = 1  # every payload carries "version"; a new major breaks readers
ABW_SCHEMA = "octoric.abw_report"
HO_SCHEMA = "octoric.ho_event"
OCTOPUS_STATUS_SCHEMA = "octoric.octopus_status"
OCTOPUS_POLICY_TYPE_ID = 30500
OCTOPUS_POLICY_TYPE_NAME = "octopus-drop-policy"


def names() -> list[str]:
    return sorted(p.name.removesuffix(".schema.json") for p in SCHEMA_DIR.glob("*.schema.json"))


def load(name: str) -> dict[str, Any]:
    """The schema called ``name`` (see the table above); KeyError names the known ones."""
    path = SCHEMA_DIR / f"{name}.schema.json"
    if not path.is_file():
        raise KeyError(f"no schema {name!r}; known: {', '.join(names())}")
    data: dict[str, Any] = json.loads(path.read_text())
    return data
