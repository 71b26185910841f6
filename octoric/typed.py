"""Plain data (parsed YAML/JSON) to typed dataclasses, with errors that name the key path.

Used by every loader of user files (``octoric run`` configs, simulator scenarios): unknown
keys and wrong types are errors, never ignored. ``error`` is the loader's own exception type,
called as ``error(message, where)``.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

import yaml

T = typing.TypeVar("T")
ErrorFactory = Callable[[str, str], Exception]


def type_name(tp: Any) -> str:
    return getattr(tp, "__name__", None) or str(tp).replace("typing.", "")


def coerce(value: Any, tp: Any, where: str, error: ErrorFactory) -> Any:
    """Check ``value`` against the annotation ``tp``; build nested dataclasses."""
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        for alt in get_args(tp):
            try:
                return coerce(value, alt, where, error)
            except Exception:  # try the next alternative; the last word is ours
                continue
        raise error(f"expected {type_name(tp)}, got {value!r}", where)
    if tp is type(None):
        if value is None:
            return None
        raise error(f"expected null, got {value!r}", where)
    if origin is Literal:
        if value in get_args(tp):
            return value
        choices = ", ".join(repr(a) for a in get_args(tp))
        raise error(f"expected one of {choices}, got {value!r}", where)
    if origin is list:
        if not isinstance(value, list):
            raise error(f"expected a list, got {value!r}", where)
        (item_tp,) = get_args(tp)
        return [coerce(v, item_tp, f"{where}[{i}]", error) for i, v in enumerate(value)]
    if tp is Any:
        return value
    if origin is dict:
        if not isinstance(value, dict):
            raise error(f"expected a mapping, got {value!r}", where)
        key_tp, val_tp = get_args(tp)
        return {
            coerce(k, key_tp, where, error): coerce(v, val_tp, f"{where}.{k}", error)
            for k, v in value.items()
        }
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        if not isinstance(value, dict):
            raise error(f"expected a mapping for {tp.__name__}, got {value!r}", where)
        return build(tp, value, where, error)
    if tp is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        raise error(f"expected a number, got {value!r}", where)
    if tp in (int, str, bool):
        if isinstance(value, tp) and not (tp is int and isinstance(value, bool)):
            return value
        raise error(f"expected {tp.__name__}, got {value!r}", where)
    raise error(f"unsupported type {tp!r} (a bug in the dataclass definition)", where)


def build(cls: type[T], data: dict[str, Any], where: str, error: ErrorFactory) -> T:
    """``cls(**data)`` with every field checked; unknown keys are errors."""
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    kwargs: dict[str, Any] = {}
    for key, value in data.items():
        path = f"{where}.{key}" if where else str(key)
        if key not in names:
            raise error(f"unknown key (known: {', '.join(sorted(names))})", path)
        kwargs[key] = coerce(value, hints[key], path, error)
    return cls(**kwargs)


def key_lines(node: yaml.Node | None, prefix: str = "") -> dict[str, int]:
    """Map 'a.b[2].c' key paths of a composed YAML document to 1-based line numbers."""
    out: dict[str, int] = {}
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            p = f"{prefix}.{k.value}" if prefix else str(k.value)
            out[p] = k.start_mark.line + 1
            out.update(key_lines(v, p))
    elif isinstance(node, yaml.SequenceNode):
        for i, v in enumerate(node.value):
            p = f"{prefix}[{i}]"
            out[p] = v.start_mark.line + 1
            out.update(key_lines(v, p))
    return out


def read_yaml_mapping(
    path: str | Path, error: ErrorFactory, what: str
) -> tuple[dict[str, Any], dict[str, int]]:
    """A YAML file whose top level is a mapping, and the line of every key path in it.
    Errors (unreadable, bad YAML, not a mapping) name the file and line."""
    src = str(path)
    try:
        text = Path(path).read_text()
    except OSError as e:
        raise error(f"cannot read {what}: {e.strerror}", src) from e
    try:
        node = yaml.compose(text)
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"{src}:{mark.line + 1}" if mark is not None else src
        raise error(f"invalid YAML: {getattr(e, 'problem', e)}", where) from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise error("the top level must be a mapping", f"{src}:1")
    return data, key_lines(node)


def line_of(key_path: str, lines: dict[str, int]) -> int | None:
    """The file line of ``key_path`` or of its nearest enclosing key."""
    key = key_path
    while key and key not in lines:
        i = max(key.rfind("."), key.rfind("["))
        key = key[:i] if i > 0 else ""
    return lines.get(key)
