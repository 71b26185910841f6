"""A short run of the xApps' REST fuzzer (``python -m octoric.xapps.fuzz_rest``) in the
default suite: no request, valid or mutated, may get a 5xx (other than a by-design 503), an
exception or a broken JSON body. The long runs are noted in docs/testing.md."""

from __future__ import annotations

import pytest

from octoric.xapps import fuzz_rest

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("name", ["occ", "handover"])
def test_rest_fuzz_smoke(name: str) -> None:
    (target,) = [t for t in fuzz_rest._targets() if t.name == name]
    try:
        rep = fuzz_rest.fuzz(target, 3000, seed=7)
    finally:
        target.close()
    assert rep.findings == [], rep.findings[0]
    assert rep.by_status.get(400, 0) > 50 and rep.by_status.get(401, 0) > 50  # it did probe
    assert sum(n for s, n in rep.by_status.items() if 200 <= s < 300) > 100
