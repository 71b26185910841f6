"""Random inputs for the REST fuzzers (``octoric.xapps.fuzz_rest``, ``octoric.ric.fuzz_rest``):
JSON values of every type, size and depth, mutated JSON bodies, random bytes. Drawn with
``random.choices`` / ``randbytes`` (one C call per string, not one per character): the
fuzzers' own cost stays small beside the servers'."""

from __future__ import annotations

import json
import random
import string
from collections.abc import Sequence
from typing import Any

CHARS = string.printable + "\u00e9\u2603\x00"


def junk(rng: random.Random, depth: int = 0) -> Any:
    """A JSON value: null, booleans, edge-case numbers, strings of 0-5000 characters, hostile
    strings (URLs, route-table separators, paths), lists and objects of those, or a list
    nested 10-400 deep."""
    kind = rng.randrange(9 if depth < 4 else 6)
    if kind == 0:
        return None
    if kind == 1:
        return rng.choice([True, False])
    if kind == 2:
        return rng.choice([0, -1, 1, 2**31, 2**63, -(2**70), rng.randrange(-(10**6), 10**6)])
    if kind == 3:
        return rng.choice([0.5, -1e308, 1e308, float("inf") if rng.random() < 0.1 else 1.5])
    if kind == 4:
        n = rng.choice([0, 1, 8, 300, 5000])
        return "".join(rng.choices(CHARS, k=n))  # choices: one C loop, not n Python calls
    if kind == 5:
        return rng.choice(["", "http://127.0.0.1:1/", "127.0.0.1:9", "a|b", "../../etc/passwd"])
    if kind == 6:
        return [junk(rng, depth + 1) for _ in range(rng.choice([0, 1, 3, 50]))]
    if kind == 7:
        names = ["id", "ue", "url", "x", "filters", "secret", "ues"]
        return {rng.choice(names): junk(rng, depth + 1) for _ in range(rng.randrange(4))}
    deep: Any = 1
    for _ in range(rng.choice([10, 100, 400])):  # deeper ones are sent as raw bytes
        deep = [deep]
    return deep


EXTRA_KEYS = ("extra", "id", "ue", "url", "secret", "filters")


def mutate_json(
    rng: random.Random, base: dict[str, Any], extra_keys: Sequence[str] = EXTRA_KEYS
) -> bytes:
    """``base`` with 1-3 changes: a field dropped, retyped or added (one of ``extra_keys``),
    or the whole body replaced by a random value."""
    d = json.loads(json.dumps(base))
    for _ in range(rng.randrange(1, 4)):
        op = rng.randrange(4)
        keys = list(d)
        if op == 0 and keys:
            d.pop(rng.choice(keys))
        elif op == 1 and keys:
            d[rng.choice(keys)] = junk(rng)
        elif op == 2:
            d[rng.choice(extra_keys)] = junk(rng)
        else:
            return json.dumps(junk(rng), allow_nan=True).encode()
    return json.dumps(d, allow_nan=True).encode()


def junk_bytes(rng: random.Random) -> bytes:
    """0-5000 random bytes."""
    n = rng.choice([0, 1, 2, 10, 100, 5000])
    return rng.randbytes(n)


def deep_json(rng: random.Random) -> bytes:
    """A JSON array or object nested 1,000 or 100,000 deep: far past any parser's recursion
    limit."""
    n = rng.choice([1000, 100_000])
    return b"[" * n + b"]" * n if rng.random() < 0.5 else b'{"a":' * n + b"1" + b"}" * n


def odd_path(rng: random.Random, paths: Sequence[str]) -> str:
    """One of ``paths`` with ``{x}`` replaced by 1-3000 printable characters, sometimes in
    absolute form toward another host with the same junk as query."""
    seg = "".join(rng.choices(string.printable, k=rng.choice([1, 5, 40, 3000])))
    path = rng.choice(paths).replace("{x}", seg)
    if rng.random() < 0.2:
        path = "http://evil.example" + path + "?" + seg
    return path
