"""Config parsing: defaults without a file, YAML, overrides, and errors that point at the line."""

from __future__ import annotations

from pathlib import Path

import pytest

from octoric import config
from octoric.errors import ConfigError

pytestmark = pytest.mark.unit


def test_defaults_need_no_file() -> None:
    cfg = config.load()
    assert cfg.duration is None
    assert cfg.ric.e2_port == 36421
    assert cfg.redis.port == 6379
    assert cfg.xapps.enabled == ["occ", "handover", "octopus"]


def test_yaml_file_and_overrides(tmp_path: Path) -> None:
    f = tmp_path / "run.yaml"
    f.write_text("duration: 12\nric:\n  e2_port: 36422\nsim:\n  ues: 4\n")
    cfg = config.load(f, ["sim.ues=16", "log.format=json", "xapps.enabled=[occ]"])
    assert cfg.duration == 12.0 and isinstance(cfg.duration, float)
    assert cfg.ric.e2_port == 36422
    assert cfg.sim.ues == 16  # the override wins over the file
    assert cfg.log.format == "json"
    assert cfg.xapps.enabled == ["occ"]


def test_unknown_key_names_file_and_line(tmp_path: Path) -> None:
    f = tmp_path / "run.yaml"
    f.write_text("duration: 5\nric:\n  e2_prot: 1\n")
    with pytest.raises(ConfigError) as e:
        config.load(f)
    assert f"{f}:3" in str(e.value)
    assert "unknown key" in str(e.value) and "e2_port" in str(e.value)


def test_wrong_type_names_key(tmp_path: Path) -> None:
    f = tmp_path / "run.yaml"
    f.write_text("ric:\n  e2_port: lots\n")
    with pytest.raises(ConfigError, match=r"run.yaml:2 \(ric.e2_port\): expected int"):
        config.load(f)


def test_bool_is_not_an_int() -> None:
    with pytest.raises(ConfigError, match="expected int"):
        config.load(overrides=["ric.e2_port=true"])


def test_literal_choices_listed() -> None:
    with pytest.raises(ConfigError, match="expected one of 'auto', 'sctp', 'tcp'"):
        config.load(overrides=["ric.e2_transport=udp"])


def test_invalid_yaml_has_line(tmp_path: Path) -> None:
    f = tmp_path / "bad.yaml"
    f.write_text("ric:\n  e2_port: [1, 2\n")
    with pytest.raises(ConfigError, match=r"bad.yaml:\d+: invalid YAML"):
        config.load(f)


def test_top_level_must_be_mapping(tmp_path: Path) -> None:
    f = tmp_path / "list.yaml"
    f.write_text("- 1\n- 2\n")
    with pytest.raises(ConfigError, match="top level must be a mapping"):
        config.load(f)


def test_missing_file() -> None:
    with pytest.raises(ConfigError, match="cannot read config file"):
        config.load("/nonexistent/octoric.yaml")


@pytest.mark.parametrize("bad", ["noequals", "=3", "a..b=1"])
def test_bad_override_syntax(bad: str) -> None:
    with pytest.raises(ConfigError, match="--set"):
        config.load(overrides=[bad])


def test_override_into_scalar_is_rejected() -> None:
    with pytest.raises(ConfigError, match="not a section"):
        config.load(overrides=["duration=3", "duration.x=1"])


def test_dump_round_trips(tmp_path: Path) -> None:
    cfg = config.load(overrides=["sim.seed=7", "duration=2.5"])
    f = tmp_path / "dumped.yaml"
    f.write_text(config.dump(cfg))
    assert config.load(f) == cfg


def test_per_xapp_controls_and_cells_per_gnb() -> None:
    cfg = config.load(
        overrides=["xapps.controls.handover.detection=kpm", "xapps.controls.occ.foo=[1, 2]",
                   "sim.cells_per_gnb=1"]
    )  # fmt: skip
    assert cfg.xapps.controls == {"handover": {"detection": "kpm"}, "occ": {"foo": [1, 2]}}
    assert cfg.sim.cells_per_gnb == 1 and config.load().sim.cells_per_gnb is None
    with pytest.raises(ConfigError, match=r"xapps\.controls\.handover: expected a mapping"):
        config.load(overrides=["xapps.controls.handover=kpm"])
    with pytest.raises(ConfigError, match="expected a mapping"):
        config.load(overrides=["xapps.controls=3"])
