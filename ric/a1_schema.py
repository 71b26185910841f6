"""Policy-type schemas from A1 clients, checked and applied without I/O and in linear time.

An A1 client uploads a JSON schema (``create_schema``) that a1-lite then runs on every policy
instance. Taken as-is, such a schema is code from the network:

- ``$ref`` to ``file://`` or ``http://`` makes the validator read files or connect out, and the
  400 reply can echo what it read. Only local references (``#...``) are accepted; the registry
  refuses to retrieve anything as a second line.
- ``pattern`` / ``patternProperties`` run Python's backtracking ``re``; ``^(a+)+$`` against a
  few dozen characters blocks the whole API. They run on RE2 (``google-re2``, linear time)
  instead; a pattern RE2 cannot compile (backreferences, lookaround) is refused at upload.
- Deep nesting ends in ``RecursionError``: schemas deeper than ``MAX_DEPTH`` are refused.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

import re2
from jsonschema import Draft7Validator, ValidationError, validators
from referencing import Registry, Resource
from referencing.exceptions import NoSuchResource, Unresolvable

MAX_DEPTH = 32
MAX_PATTERN_LEN = 1000


class UnsafeSchemaError(ValueError):
    """A policy-type schema a1-lite will not run; the message says why."""


def _no_retrieval(uri: str) -> Resource[Any]:
    # an attrs class whose field is "ref"; mypy reads its stub signature wrongly
    raise NoSuchResource(ref=uri)  # type: ignore[call-arg]


_REGISTRY: Registry[Any] = Registry(retrieve=_no_retrieval)  # type: ignore[call-arg]


@functools.lru_cache(maxsize=1024)
def _compiled(pattern: str) -> Any:
    options = re2.Options()
    options.log_errors = False
    return re2.compile(pattern, options)


def _pattern(
    validator: Any, pattern: str, instance: Any, schema: dict[str, Any]
) -> Iterator[ValidationError]:
    if validator.is_type(instance, "string") and not _compiled(pattern).search(instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(
    validator: Any, patterns: dict[str, Any], instance: Any, schema: dict[str, Any]
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if _compiled(pattern).search(key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


# Draft 7 with RE2 for the two keywords that run regular expressions
SafeValidator = validators.extend(  # type: ignore[no-untyped-call]
    Draft7Validator, {"pattern": _pattern, "patternProperties": _pattern_properties}
)


def _walk(node: Any, depth: int = 0) -> Iterator[tuple[str, Any]]:
    if depth > MAX_DEPTH:
        raise UnsafeSchemaError(f"the schema nests deeper than {MAX_DEPTH} levels")
    if isinstance(node, dict):
        for k, v in node.items():
            yield k, v
            yield from _walk(v, depth + 1)
    elif isinstance(node, list):
        for v in node:
            yield from _walk(v, depth + 1)


def check_schema(schema: Any) -> None:
    """Raise ``UnsafeSchemaError`` (or ``jsonschema.SchemaError``) unless a1-lite can run it."""
    if not isinstance(schema, dict):
        raise UnsafeSchemaError("create_schema must be a JSON object")
    for key, value in _walk(schema):
        if key == "$ref" and (not isinstance(value, str) or not value.startswith("#")):
            raise UnsafeSchemaError(
                f"$ref {value!r}: only references inside the schema ('#/...') are allowed"
            )
        patterns = (
            [value] if key == "pattern" else list(value) if key == "patternProperties" else []
        )
        for p in patterns:
            if not isinstance(p, str) or len(p) > MAX_PATTERN_LEN:
                raise UnsafeSchemaError(f"pattern {str(p)[:80]!r} is not a string of <= 1000")
            try:
                _compiled(p)
            except re2.error as e:
                why = e.args[0].decode() if e.args and isinstance(e.args[0], bytes) else str(e)
                raise UnsafeSchemaError(
                    f"pattern {p!r} is not RE2 syntax (no backreferences or lookaround): {why}"
                ) from None
    SafeValidator.check_schema(schema)


def validate(instance: Any, schema: dict[str, Any]) -> None:
    """``jsonschema.validate`` on RE2, with no reference retrieval; ValidationError on a
    mismatch, ``UnsafeSchemaError`` when the instance is too deep to check."""
    try:
        SafeValidator(schema, registry=_REGISTRY).validate(instance)
    except RecursionError:
        raise UnsafeSchemaError("the policy nests too deeply to be checked") from None
    except Unresolvable as e:  # a $ref that resolves nowhere
        raise UnsafeSchemaError(f"the schema has an unresolvable $ref: {e}") from None
