"""A short run of the RIC's REST fuzzer (``python -m octoric.ric.fuzz_rest``) in the default
suite: the real RIC processes, raw HTTP over loopback, valid and mutated requests to a1,
submgr, appmgr and rtmgr; no 5xx, hang, crash or lost sentinel state. Then its in-process
mode (``--in-process``): the same, through the services' apps built in the test's process,
and what shows that mode's requests reach the handlers as over a socket and that its
findings and state checks can fail. The long runs are noted in docs/testing.md."""

from __future__ import annotations

import json
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any

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


# --- the in-process mode (``--in-process``): the same requests through the services' apps
# built in the test's process, on a private Redis ------------------------------------------


@pytest.fixture
def in_process_ric(tmp_path: Path) -> Iterator[fuzz_rest.InProcessRic]:
    from octoric.redis_server import RedisServer

    with RedisServer() as redis, fuzz_rest.InProcessRic(tmp_path, redis.port) as ric:
        yield ric


def test_ric_rest_fuzz_in_process_smoke() -> None:
    reports = fuzz_rest.run(3000, seed=3, in_process=True)
    assert [r.name for r in reports] == ["a1", "submgr", "appmgr", "rtmgr"]
    for rep in reports:
        assert rep.failures == 0, rep.findings[0]
        assert rep.inputs == 3000 and rep.checks >= 1
        assert rep.by_status.get(400, 0) > 50, (rep.name, rep.by_status)
        assert rep.by_status.get(401, 0) > 50, (rep.name, rep.by_status)
        assert rep.by_status.get(405, 0) > 50, (rep.name, rep.by_status)
        assert sum(n for s, n in rep.by_status.items() if 200 <= s < 300) > 100, rep.by_status


def test_in_process_state_check_sees_a_lost_sentinel(
    in_process_ric: fuzz_rest.InProcessRic,
) -> None:
    """As the socket mode's: with the sentinel policy deleted, the check says so."""
    ric = in_process_ric
    ric.run(ric.make_sentinels())
    assert ric.run(ric.check_state()) == []
    path = f"/A1-P/v2/policytypes/{fuzz_rest.SENTINEL_TID}/policies/sentinel"
    assert ric.run(ric.call("a1", "DELETE", path, None))[0] in (200, 202, 204)
    bad = ric.run(ric.check_state())
    assert len(bad) == 1 and "sentinel" in bad[0], bad


def test_in_process_requests_reach_the_handlers_as_over_a_socket(
    in_process_ric: fuzz_rest.InProcessRic,
) -> None:
    """The middleware, the router, the handlers and the bodies: the token is checked, a
    body reaches ``request.read()`` and the state in Redis, a short Content-Length cuts the
    body there (the rest would be the connection's next request), a big one gets through
    whole, what aiohttp's parser refuses is its 400, and an unknown method its 405."""
    ric, raw = in_process_ric, fuzz_rest._raw

    def send(name: str, method: str, path: str, body: bytes, headers: dict[str, str]) -> Any:
        return ric.run(ric.request(name, raw(method, path, body, headers), method))

    plain = {"Content-Type": "application/json"}
    token = {**plain, "Authorization": f"Bearer {ric.token}"}
    path = "/A1-P/v2/policytypes/7"
    body = json.dumps(fuzz_rest._type_body(7)).encode()
    assert send("a1", "PUT", path, body, plain)[0] == 401
    assert send("a1", "PUT", path, body, token)[0] == 201
    st, ctype, out = send("a1", "GET", path, b"", token)
    assert (st, ctype.split(";")[0], json.loads(out)) == (200, "application/json", json.loads(body))
    # a short Content-Length: the handler gets that many bytes; the rest is the start of the
    # connection's next request, answered by aiohttp's parser when it cannot be one (all of
    # it arrived at once, as the socket mode's single send usually does)
    short = {**token, "Content-Length": str(len(body) - 1)}
    st, _, out = send("a1", "PUT", "/A1-P/v2/policytypes/8", body[:-1] + b"G", short)
    assert st == 400 and b"not valid JSON" in out, out  # a1's answer: the JSON lost its "}"
    st, _, out = send("a1", "PUT", "/A1-P/v2/policytypes/8", body, short)
    assert st == 400 and b"Invalid method" in out, out  # "}" cannot begin a request
    assert send("a1", "GET", "/A1-P/v2/policytypes/8", b"", token)[0] == 404
    # a 600 KB body reaches json.loads whole (the parser pauses and resumes on the way);
    # over the 1 MiB limit, a 413
    deep = b"[" * 300_000 + b"]" * 300_000
    st, _, out = send("a1", "PUT", "/A1-P/v2/policytypes/9", deep, token)
    assert st == 400 and b"not valid JSON" in out, out
    assert send("a1", "PUT", "/A1-P/v2/policytypes/9", b" " * (2 << 20), token)[0] == 413
    assert send("a1", "GET", "/no such path", b"", token)[0] == 400
    assert send("appmgr", "PATCH", "/ric/v1/xapps", b"", token)[0] == 405


def test_in_process_mode_sees_a_500_and_its_traceback(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The finding rules can fail: a handler that raises is a 500, a finding, with the
    server's traceback; an exception in a background task is a finding at the state check."""
    from octoric.redis_server import RedisServer
    from octoric.ric.a1 import A1Service

    async def broken(self: A1Service, request: object) -> None:
        raise ZeroDivisionError("the handler broke")

    monkeypatch.setattr(A1Service, "health", broken)
    (a1,) = [a for a in fuzz_rest.apis() if a.name == "a1"]
    a1 = fuzz_rest.Api("a1", a1.port_name, [("GET", "/A1-P/v2/healthcheck", None)], a1.paths)
    with RedisServer() as redis, fuzz_rest.InProcessRic(tmp_path, redis.port) as ric:
        ric.run(ric.make_sentinels())
        target = fuzz_rest._InProcessTarget(a1, ric)
        rep = ric.run(fuzz_rest._fuzz(a1, target, ric.token, 200, seed=1))
        assert rep.by_status.get(500, 0) > 50 and rep.failures >= rep.by_status[500]
        assert "status 500" in rep.findings[0] and "the handler broke" in rep.findings[0]
        assert "ZeroDivisionError" in rep.findings[0]

        async def fails() -> None:
            raise KeyError("in the background")

        ric.run(_spawn_and_forget(fails()))
        bad = ric.run(ric.check_state())
        assert len(bad) == 1 and "in the background" in bad[0], bad


async def _spawn_and_forget(coro: Coroutine[Any, Any, None]) -> None:
    import asyncio
    import gc

    task = asyncio.ensure_future(coro)
    await asyncio.sleep(0)
    del task  # never awaited: the loop reports its exception when it is collected
    gc.collect()


def test_chars_draws_as_random_choices() -> None:
    """``fuzz_inputs.chars`` (numpy) is ``random.choices``: same strings, same generator
    state after, so both fuzzers' inputs are what they were."""
    import random
    import string

    from octoric.fuzz_inputs import CHARS, chars

    for alphabet in (CHARS, string.printable):
        for seed in range(30):
            for k in (0, 1, 63, 64, 300, 5000):
                a, b = random.Random(seed), random.Random(seed)
                assert "".join(a.choices(alphabet, k=k)) == chars(b, alphabet, k)
                assert a.random() == b.random()


def test_registrations_and_subscription_routes_are_bounded(
    in_process_ric: fuzz_rest.InProcessRic, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every registered xApp and every subscription route is in every route table and listing:
    past the limits a new one gets a 409 and a counter (the fuzzer's registrations used to grow
    them without bound, each request slower than the last); an existing one may still update,
    and a freed slot takes a new one."""
    from octoric.ric import appmgr, rtmgr

    monkeypatch.setattr(appmgr, "MAX_XAPPS", 3)
    monkeypatch.setattr(rtmgr, "MAX_SUB_ENDPOINTS", 2)
    monkeypatch.setattr(rtmgr, "MAX_SUBSCRIPTIONS", 2)
    ric = in_process_ric
    have = len(json.loads(ric.run(ric.call("appmgr", "GET", "/ric/v1/xapps", None))[1]))

    def register(name: str) -> int:
        body = fuzz_rest._register_body(name, "127.0.0.1:4999")
        return int(ric.run(ric.call("appmgr", "POST", "/ric/v1/register", body))[0])

    names = [f"x{i}" for i in range(3 - have)]
    assert [register(n) for n in names] == [201] * len(names)
    assert register("one-too-many") == 409
    assert register(names[0]) == 201  # an update of a registered one
    deregister = {"appName": names[0]}
    assert ric.run(ric.call("appmgr", "POST", "/ric/v1/deregister", deregister))[0] == 204
    assert register("one-too-many") == 201
    assert ric.appmgr.counters.refused_full == 1

    path = "/ric/v1/handles/xapp-subscription-handle"

    def add(sub: int, port: int) -> int:
        body = {"subscription_id": sub, "address": "127.0.0.1", "port": port}
        return int(ric.run(ric.call("rtmgr", "POST", path, body))[0])

    assert [add(1, 5001), add(1, 5002), add(1, 5003)] == [201, 201, 409]  # 2 endpoints each
    assert add(1, 5001) == 201  # already there: no change
    assert [add(2, 5001), add(3, 5001)] == [201, 409]  # 2 subscriptions
    assert ric.rtmgr.stats.refused_full == 2
