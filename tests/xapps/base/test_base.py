"""The xApp shell's parts: REST router, submgr body, controls, SDL store, R-NIB discovery."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest

from octoric.redis_server import RedisServer
from octoric.xapps.base.config import load_descriptor, typed_controls
from octoric.xapps.base.discovery import E2Node
from octoric.xapps.base.errors import RestError, XappConfigError
from octoric.xapps.base.http import HttpServer, Request, Response
from octoric.xapps.base.sdl import SdlStore
from octoric.xapps.base.subscription import SubscriptionRequest, SubscriptionResponse


@pytest.mark.unit
def test_router() -> None:
    h = HttpServer("127.0.0.1", 0)

    def get(r: Request) -> Response:
        return Response.json({"id": r.params["id"], "q": r.query.get("q")})

    def boom(r: Request) -> Response:
        raise RuntimeError("bug")

    def bad(r: Request) -> Response:
        r.json()
        raise RestError(422, "nope", "no")

    h.add("GET", "/a/{id}", get)
    h.add("POST", "/boom", boom)
    h.add("POST", "/bad", bad)
    r = h.dispatch("GET", "http://x:1/a/7?q=1", b"")  # absolute form, as through a proxy
    assert r.status == 200 and json.loads(r.body) == {"id": "7", "q": ["1"]}
    assert h.dispatch("POST", "/a/7", b"").status == 405
    assert h.dispatch("GET", "/zzz", b"").status == 404
    assert h.dispatch("POST", "/boom", b"").status == 500
    r = h.dispatch("POST", "/bad", b"{x")
    assert r.status == 400 and json.loads(r.body)["reason"] == "bad_json"
    assert h.dispatch("POST", "/bad", b"").status == 400
    assert h.dispatch("POST", "/bad", b"{}").status == 422
    assert h.counters.errors == {"method_not_allowed": 1, "not_found": 1, "internal": 1,
                                 "bad_json": 1, "empty_body": 1, "nope": 1}  # fmt: skip


@pytest.mark.unit
def test_subscription_body_is_camel_case() -> None:
    req = SubscriptionRequest(
        "gnb_1", 2, b"\x01\x02", b"\x03", "127.0.0.1", 8090, 4560, subscription_id="s1"
    )
    body = req.body()
    assert set(body) == {"ClientEndpoint", "Meid", "RANFunctionID", "E2SubscriptionDirectives",
                         "SubscriptionDetails", "SubscriptionId"}  # fmt: skip
    assert body["ClientEndpoint"] == {"Host": "127.0.0.1", "HTTPPort": 8090, "RMRPort": 4560}
    act = body["SubscriptionDetails"][0]["ActionToBeSetupList"][0]
    assert body["SubscriptionDetails"][0]["EventTriggers"] == [1, 2] and act[
        "ActionDefinition"
    ] == [3]
    assert act["SubsequentAction"] == {"SubsequentActionType": "continue", "TimeToWait": "zero"}
    # and submgr's own parser takes it
    from octoric.ric.submgr import parse_request

    common, specs = parse_request(json.loads(json.dumps(body)))
    assert common["meid"] == "gnb_1" and specs[0]["actions"][0]["ActionID"] == 1


@pytest.mark.unit
def test_subscription_response_parse() -> None:
    r = SubscriptionResponse.parse({"SubscriptionId": "s", "SubscriptionInstances": [
        {"XappEventInstanceId": 1, "E2EventInstanceId": 9, "ErrorCause": ""}]})  # fmt: skip
    assert r.instances[0].ok and r.instances[0].e2_event_instance_id == 9
    one = {"XappEventInstanceId": "1"}
    bads = [{}, {"SubscriptionId": "s"}, {"SubscriptionId": "s", "SubscriptionInstances": [1]},
            {"SubscriptionId": "s", "SubscriptionInstances": [one]}]  # fmt: skip
    for bad in bads:
        with pytest.raises(RestError):
            SubscriptionResponse.parse(bad)


@dataclass(frozen=True)
class _Ctl:
    n: int = 1
    x: float = 0.5
    on: bool = True
    names: tuple[str, ...] = ()
    extra: dict[str, Any] | None = None


@pytest.mark.unit
def test_typed_controls(tmp_path: Any) -> None:
    c = typed_controls(_Ctl, {"n": 3, "x": 1, "names": ["a"]})
    assert c == _Ctl(3, 1.0, True, ("a",))
    for bad in ({"n": 1.5}, {"n": True}, {"on": 1}, {"names": [1]}, {"zz": 1}):
        with pytest.raises(XappConfigError):
            typed_controls(_Ctl, bad)
    p = tmp_path / "c.json"
    p.write_text("[1]")
    with pytest.raises(XappConfigError):
        load_descriptor(p)
    p.write_text("{")
    with pytest.raises(XappConfigError):
        load_descriptor(p)
    with pytest.raises(XappConfigError):
        load_descriptor(tmp_path / "missing.json")


@pytest.mark.integration
def test_sdl_store_layout(redis_server: RedisServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DBAAS_SERVICE_HOST", "127.0.0.1")
    monkeypatch.setenv("DBAAS_SERVICE_PORT", str(redis_server.port))
    s = SdlStore("occtest")
    s.set_json("flow.a", {"x": 1})
    s.set_many({"ckpt.1": b"\x00\xff", "flow.b*": b"{}"})
    assert s.get_json("flow.a") == {"x": 1} and s.get("ckpt.1") == b"\x00\xff"
    assert set(s.find("flow.")) == {"flow.a", "flow.b*"}
    assert set(s.find("flow.b*")) == {"flow.b*"}  # glob characters are literal
    import redis

    r = redis.Redis(port=redis_server.port)
    assert r.get("{octoric.occtest},flow.a") == b'{"x": 1}'  # O-RAN SC key layout
    s.delete("flow.a", "flow.b*", "ckpt.1")
    assert s.find("") == {} and s.healthy()


@pytest.mark.unit
def test_e2node_functions() -> None:
    n = E2Node("gnb", True, ((2, "1.3.6.1.4.1.53148.1.2.2.2"), (3, "1.3.6.1.4.1.53148.1.1.2.3")))
    assert n.has_function("1.3.6.1.4.1.53148.1.2.2.2") and n.has_function("x", 3)
    assert not n.has_function("x", 4)


@pytest.mark.unit
def test_the_receive_queue_is_bounded_and_sheds_visibly() -> None:
    """ricxappframe's receive queue had no bound: under overload the xApp's memory grew
    without end and nothing counted the loss (issue #17). Now a full queue frees and counts."""
    from collections import Counter

    from octoric.xapps.base.shell import SheddingQueue

    freed: list[str] = []
    counters: Counter[str] = Counter()
    q = SheddingQueue(2, freed.append, counters)
    assert not q.overloaded()
    for i in range(5):
        q.put(({"i": i}, f"sbuf{i}"))  # never blocks the RMR reader thread
    assert q.qsize() == 2 and freed == ["sbuf2", "sbuf3", "sbuf4"]
    assert counters["shed_queue_full"] == 3 and q.overloaded()
    assert q.get()[0] == {"i": 0}  # what was queued is kept, in order


@pytest.mark.unit
def test_inline_message_types_skip_the_queue() -> None:
    """Latency-critical types run in the receive thread (``start_rmr(inline=...)``); the
    others still queue for the dispatch thread, bounded as before."""
    from collections import Counter

    from octoric.xapps.base.shell import SheddingQueue

    ran: list[tuple[dict[str, int], str]] = []
    q = SheddingQueue(4, lambda sbuf: None, Counter())
    q.type_key = "mtype"
    q.inline[12050] = lambda summary, sbuf: ran.append((summary, sbuf))
    q.put(({"mtype": 12050}, "a"))
    q.put(({"mtype": 12011}, "b"))
    assert ran == [({"mtype": 12050}, "a")]
    assert q.qsize() == 1 and q.get() == ({"mtype": 12011}, "b")


def test_rmr_ring_drops_are_counted_and_say_overloaded(monkeypatch: pytest.MonkeyPatch) -> None:
    """With handlers inline, an overload fills RMR's own receive ring, which drops (octoric's
    librmr counts it): the shell mirrors that count into its counters and says overloaded,
    so the loss is never silent (issue #17)."""
    import types

    import octoric.rmr

    from octoric.xapps.base import shell as shell_mod
    from octoric.xapps.base.shell import XappShell

    drops = [0]

    def fake_stats(ctx: Any) -> Any:
        assert ctx == "ctx"
        return types.SimpleNamespace(dropped_overflow=drops[0])

    monkeypatch.setattr(octoric.rmr, "stats", fake_stats)
    sh = XappShell("t", 4999, 8999)
    assert not sh.overloaded() and sh.ring_drops() == 0  # not started: nothing to read
    sh.xapp = types.SimpleNamespace(_mrc="ctx")
    assert not sh.overloaded() and sh.rmr_counters["dropped_ring_full"] == 0
    drops[0] = 7
    assert sh.overloaded() and sh.rmr_counters["dropped_ring_full"] == 7
    drops[0] = 9
    assert sh.ring_drops() == 9 and sh.rmr_counters["dropped_ring_full"] == 9
    monkeypatch.setattr(shell_mod, "OVERLOAD_WINDOW_S", 0.0)  # the last drop is old now
    assert not sh.overloaded()
