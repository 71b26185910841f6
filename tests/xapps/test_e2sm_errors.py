"""The xApps validate E2SM input once, at e2sm's edge (issue #40): e2sm's public decoders raise
one error type (``E2smDecodeError``, checked by e2sm's fuzzer on every public decoder the xApps
call: tests/e2sm/test_fuzz.py), so no xApp guards an e2sm call with Python's built-in errors.

The check reads the xApps' source: a ``try`` with a handler for an e2sm error must not also
catch ValueError, KeyError, TypeError or IndexError (a leaked built-in error from a decoder is a
decoder bug to fix in e2sm, not a case for every caller)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

XAPPS = Path(__file__).resolve().parents[2] / "xapps"
BUILTINS = {"ValueError", "KeyError", "TypeError", "IndexError"}


def _names(handler: ast.ExceptHandler) -> set[str]:
    t = handler.type
    parts = t.elts if isinstance(t, ast.Tuple) else [t] if t is not None else []
    out = set()
    for p in parts:
        if isinstance(p, ast.Name):
            out.add(p.id)
        elif isinstance(p, ast.Attribute):
            out.add(p.attr)
    return out


def mixed_handlers(source: str) -> list[int]:
    """Lines of ``try`` statements that catch an e2sm error and a built-in error together."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Try):
            caught = set().union(*(_names(h) for h in node.handlers))
            if any(n.startswith("E2sm") for n in caught) and caught & BUILTINS:
                lines.append(node.lineno)
    return lines


@pytest.mark.unit
def test_the_check_finds_a_mixed_handler() -> None:
    bad = "try:\n    f()\nexcept E2smError:\n    pass\nexcept (KeyError, OSError):\n    pass\n"
    assert mixed_handlers(bad) == [1]
    assert mixed_handlers("try:\n    f()\nexcept E2smDecodeError:\n    pass\n") == []


@pytest.mark.unit
def test_no_xapp_catches_builtin_errors_around_e2sm() -> None:
    found = {
        str(p.relative_to(XAPPS)): lines
        for p in sorted(XAPPS.rglob("*.py"))
        if (lines := mixed_handlers(p.read_text()))
    }
    assert found == {}, f"try blocks mixing e2sm and built-in errors: {found}"
