"""A short run of the RIC's REST fuzzer (``python -m octoric.ric.fuzz_rest``) in the default
suite: the real RIC processes, raw HTTP over loopback, valid and mutated requests to a1,
submgr, appmgr and rtmgr; no 5xx, hang, crash or lost sentinel state. The long runs are noted
in docs/testing.md."""

from __future__ import annotations

import pytest

from octoric.ric import fuzz_rest

pytestmark = [pytest.mark.integration]


def test_ric_rest_fuzz_smoke() -> None:
    reports = fuzz_rest.run(1500, seed=3)
    assert [r.name for r in reports] == ["a1", "submgr", "appmgr", "rtmgr"]
    for rep in reports:
        assert rep.failures == 0, rep.findings[0]
        assert rep.inputs == 1500 and rep.checks >= 1
        # it did probe: refusals for bad bodies and for missing tokens, and valid calls
        assert rep.by_status.get(400, 0) > 20, (rep.name, rep.by_status)
        assert rep.by_status.get(401, 0) > 20, (rep.name, rep.by_status)
        assert sum(n for s, n in rep.by_status.items() if 200 <= s < 300) > 50, rep.by_status


def test_state_check_sees_a_lost_sentinel() -> None:
    """The invariant check can fail: with the sentinel policy deleted it says so."""
    import tempfile
    from pathlib import Path

    from octoric.ric.stack import running_ric

    with tempfile.TemporaryDirectory() as d, running_ric(Path(d)) as st:
        ric = st.rt.ric
        ports = {"a1": ric.a1_rest_port, "submgr": ric.submgr_rest_port,
                 "appmgr": ric.appmgr_port, "rtmgr": ric.rtmgr_rest_port}  # fmt: skip
        token = st.rt.api_token
        fuzz_rest.make_sentinels(ports, token)
        assert fuzz_rest.check_state(ports, token) == []
        path = f"/A1-P/v2/policytypes/{fuzz_rest.SENTINEL_TID}/policies/sentinel"
        assert fuzz_rest._call(ports["a1"], "DELETE", path, token)[0] in (200, 202, 204)
        bad = fuzz_rest.check_state(ports, token)
        assert len(bad) == 1 and "sentinel" in bad[0], bad
