"""The xApp descriptor (O-RAN SC ``config-file.json``, named by ``CONFIG_FILE``) and the typed
view of its ``controls`` section.

ricxappframe calls the xApp's config handler with the parsed file at start and whenever the
file is written (inotify); ``typed_controls`` turns the ``controls`` object into a frozen
dataclass, rejecting unknown keys and wrong types with an ``XappConfigError`` that names the
field, so a bad edit is refused and the previous configuration stays in force.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any, TypeVar

from octoric.xapps.base.errors import XappConfigError

T = TypeVar("T")


def load_descriptor(path: str | Path | None = None) -> dict[str, Any]:
    """The descriptor at ``path`` (default: ``$CONFIG_FILE``)."""
    p = path or os.environ.get("CONFIG_FILE")
    if not p:
        raise XappConfigError("CONFIG_FILE", "no descriptor given and CONFIG_FILE is not set")
    try:
        data = json.loads(Path(p).read_text())
    except OSError as e:
        raise XappConfigError("CONFIG_FILE", f"cannot read {p}: {e}") from None
    except ValueError as e:
        raise XappConfigError("CONFIG_FILE", f"{p} is not JSON: {e}") from None
    if not isinstance(data, dict):
        raise XappConfigError("CONFIG_FILE", f"{p} must hold a JSON object")
    return data


def controls_of(descriptor: dict[str, Any]) -> dict[str, Any]:
    c = descriptor.get("controls", {})
    if not isinstance(c, dict):
        raise XappConfigError("controls", "must be a JSON object")
    return c


def _check(value: Any, default: Any, where: str) -> Any:
    """``value`` checked against the type of the field's default."""
    if isinstance(default, bool):
        if isinstance(value, bool):
            return value
        raise XappConfigError(where, f"expected true/false, got {value!r}")
    if isinstance(default, int):
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise XappConfigError(where, f"expected an integer, got {value!r}")
    if isinstance(default, float):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        raise XappConfigError(where, f"expected a number, got {value!r}")
    if isinstance(default, str):
        if isinstance(value, str):
            return value
        raise XappConfigError(where, f"expected a string, got {value!r}")
    if isinstance(default, tuple):
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return tuple(value)
        raise XappConfigError(where, f"expected a list of strings, got {value!r}")
    if isinstance(default, dict):
        if isinstance(value, dict):
            return dict(value)
        raise XappConfigError(where, f"expected an object, got {value!r}")
    raise XappConfigError(where, "unsupported field type")  # a bug in the dataclass


def typed_controls(cls: type[T], data: dict[str, Any], where: str = "controls") -> T:
    """Build the frozen dataclass ``cls`` (every field with a default) from ``data``."""
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"{cls!r} is not a dataclass")
    defaults = cls()
    names = {f.name for f in dataclasses.fields(cls)}
    kwargs: dict[str, Any] = {}
    for key, value in data.items():
        if key not in names:
            raise XappConfigError(
                f"{where}.{key}", f"unknown key (known: {', '.join(sorted(names))})"
            )
        kwargs[key] = _check(value, getattr(defaults, key), f"{where}.{key}")
    try:
        return cls(**kwargs)
    except XappConfigError:
        raise
    except (ValueError, TypeError) as e:
        raise XappConfigError(where, str(e)) from None
