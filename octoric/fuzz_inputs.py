"""Random inputs for the REST fuzzers (``octoric.xapps.fuzz_rest``, ``octoric.ric.fuzz_rest``):
JSON values of every type, size and depth, mutated JSON bodies, random bytes. Long random
strings are drawn by ``chars`` (``random.choices``'s draws, computed in numpy) and bytes by
``randbytes``: the fuzzers' own cost stays small beside the servers'."""

from __future__ import annotations

import functools
import json
import random
import string
from collections.abc import Sequence
from typing import Any

import numpy as np

CHARS = string.printable + "\u00e9\u2603\x00"


@functools.cache
def _codepoints(alphabet: str) -> np.ndarray[Any, np.dtype[np.uint32]]:
    return np.array([ord(c) for c in alphabet], dtype="<u4")


def chars(rng: random.Random, alphabet: str, k: int) -> str:
    """``"".join(rng.choices(alphabet, k=k))``: the same string from the same draws, leaving
    ``rng`` in the same state. ``choices`` takes ``k`` ``rng.random()``, each made of two
    32-bit outputs of the generator, which ``randbytes(8 * k)`` gives in the same order; the
    arithmetic of ``random()`` and ``choices`` is then done in numpy (exact: the same float64
    operations) instead of a Python loop of ``k`` steps, most of the fuzzers' own time."""
    if k < 64:
        return "".join(rng.choices(alphabet, k=k))
    w = np.frombuffer(rng.randbytes(8 * k), dtype="<u4")
    x = ((w[0::2] >> 5) * 67108864.0 + (w[1::2] >> 6)) * (1.0 / 9007199254740992.0)
    idx = np.floor(x * float(len(alphabet))).astype(np.intp)
    return _codepoints(alphabet)[idx].tobytes().decode("utf-32-le")


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
        return chars(rng, CHARS, n)
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
    seg = chars(rng, string.printable, rng.choice([1, 5, 40, 3000]))
    path = rng.choice(paths).replace("{x}", seg)
    if rng.random() < 0.2:
        path = "http://evil.example" + path + "?" + seg
    return path
