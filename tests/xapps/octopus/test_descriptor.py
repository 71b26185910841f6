"""The octopus xApp's descriptor: valid for the O-RAN SC onboarder (controls schema merged in),
its controls are the config's fields, and it parses into the config."""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path

import jsonschema

from octoric.xapps.base.config import controls_of, typed_controls
from octoric.xapps.octopus.xapp_config import OctopusXappConfig

REPO = Path(__file__).resolve().parents[3]


def test_descriptor_against_oran_sc_schema(shared_dir: Path) -> None:
    schema = json.loads(
        (shared_dir / "reference/oran-sc/xapp-descriptor-embedded-schema.json").read_text()
    )
    controls = json.loads((REPO / "xapps/octopus/schema.json").read_text())
    schema["properties"]["controls"] = controls
    d = json.loads((REPO / "xapps/octopus/config-file.json").read_text())
    validator = jsonschema.validators.validator_for(schema)(schema)
    assert [e.message for e in validator.iter_errors(d)] == []
    assert set(controls["properties"]) == {f.name for f in fields(OctopusXappConfig)}
    assert typed_controls(OctopusXappConfig, controls_of(d)) == OctopusXappConfig()
