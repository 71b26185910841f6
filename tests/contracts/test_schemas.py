"""The JSON schemas in contracts/: each is valid for its draft, accepts what its producer sends
and refuses the obvious mistakes; the A1 policy type is one a1-lite will run."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from octoric.contracts import schemas
from octoric.ric import a1_schema


def test_every_schema_is_valid_for_its_draft() -> None:
    assert set(schemas.names()) >= {"abw_report", "ho_event", "octopus_status",
                                    "octopus_drop_policy"}  # fmt: skip
    for name in schemas.names():
        s = schemas.load(name)
        jsonschema.validators.validator_for(s).check_schema(s)
    with pytest.raises(KeyError, match="known: abw_report"):
        schemas.load("nope")


GOOD_POLICY: dict[str, Any] = {
    "enable": True,
    "scope": {"meids": ["gnb_001_001_00019b"], "ues": [1000, 1001],
              "slices": [{"sst": 1, "sd": "0000ff"}], "drb_ids": [1]},
    "priority_levels": 4, "bitrate_window_ms": 50, "drop_by_message": True,
    "drop_by_bitrate": False, "protect_in_flight": True,
}  # fmt: skip


def test_the_octopus_policy_type_runs_in_a1_lite() -> None:
    s = schemas.load("octopus_drop_policy")
    a1_schema.check_schema(s)  # draft 7, local refs only, RE2 patterns
    a1_schema.validate(GOOD_POLICY, s)
    a1_schema.validate({"enable": False}, s)
    for bad in (
        {},  # enable is required
        {"enable": True, "priority_levels": 9},
        {"enable": True, "scope": {"drb_ids": [0]}},
        {"enable": True, "scope": {"slices": [{"sst": 1, "sd": "xyz"}]}},
        {"enable": True, "drop_everything": True},
    ):
        with pytest.raises(jsonschema.ValidationError):
            a1_schema.validate(bad, s)


def test_octopus_status() -> None:
    s = schemas.load("octopus_status")
    ok = {"schema": schemas.OCTOPUS_STATUS_SCHEMA, "version": 1,
          "policy_type_id": schemas.OCTOPUS_POLICY_TYPE_ID, "policy_id": "p1",
          "meid": "gnb_001_001_00019b", "ue": 1000, "drb_id": 1, "state": "not_enforced",
          "reason": "ricRequest/control-failed-to-execute", "t_ms": 1763812345123}  # fmt: skip
    jsonschema.validate(ok, s)
    for key, value in (("state", "maybe"), ("policy_type_id", 20008), ("version", 2)):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate({**ok, key: value}, s)
