"""submgr when Redis fails in the middle of a subscription (the RIC REST fuzzer's finding: a
Redis read timeout killed the background task, the xApp never heard back and memory kept a
client SDL did not): the client is told the cause, memory is rolled back, the error counted."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from redis.exceptions import TimeoutError as RedisTimeout

from octoric.ric.submgr import E2Subscription, Submgr

pytestmark = pytest.mark.unit
COMMON: dict[str, Any] = {
    "host": "127.0.0.1", "http_port": 1, "rmr_port": 2, "meid": "gnb_001_001_00019b",
    "ran_function_id": 2, "routing": True, "timeout": 1.0, "retries": 0,
}  # fmt: skip
SPEC: dict[str, Any] = {
    "xapp_event_instance_id": 7,
    "trigger": "0a",
    "actions": [{"id": 1, "type": "report"}],
}


class FlakySdl:
    """An SDL whose writes time out while ``down`` (as Redis did under load)."""

    def __init__(self) -> None:
        self.down = False
        self.data: dict[str, Any] = {}
        self.counter = 0

    async def set_json(self, ns: str, key: str, value: Any) -> None:
        if self.down:
            raise RedisTimeout("Timeout reading from 127.0.0.1:6379")
        self.data[key] = value

    async def delete(self, ns: str, *keys: str) -> None:
        if self.down:
            raise RedisTimeout("Timeout reading from 127.0.0.1:6379")
        for k in keys:
            self.data.pop(k, None)

    async def incr(self, ns: str, key: str) -> int:
        self.counter += 1
        return self.counter


async def _routes(iid: int, endpoint: str, add: bool) -> bool:
    return True


def _submgr() -> tuple[Submgr, FlakySdl, list[list[dict[str, Any]]]]:
    sdl = FlakySdl()
    sm = Submgr(sdl, None, _routes)  # type: ignore[arg-type]
    told: list[list[dict[str, Any]]] = []

    async def notify(host: str, port: int, sid: str, instances: list[dict[str, Any]]) -> None:
        told.append(instances)

    sm._notify = notify  # type: ignore[method-assign]
    return sm, sdl, told


def test_a_merge_that_cannot_be_saved_is_told_and_undone() -> None:
    sm, sdl, told = _submgr()
    held = E2Subscription(5, COMMON["meid"], 2, SPEC["trigger"], SPEC["actions"], True, 1.0, 0)
    held.state = "active"
    sm.subs[5] = held
    sdl.down = True
    asyncio.run(sm._subscribe("sid-1", COMMON, [SPEC]))
    ((inst,),) = told
    assert inst["ErrorCause"].startswith("SDL unavailable") and inst["E2EventInstanceId"] == 5
    assert held.clients == [] and sm.stats.errors["sdl"] >= 1
    assert sm.subs == {5: held}  # the subscription others may still hold stays


def test_a_new_subscription_that_cannot_be_saved_is_forgotten() -> None:
    sm, sdl, told = _submgr()
    sdl.down = True
    asyncio.run(sm._subscribe("sid-2", COMMON, [SPEC, {**SPEC, "xapp_event_instance_id": 8}]))
    (insts,) = told
    assert [i["XappEventInstanceId"] for i in insts] == [7, 8]
    assert all(i["ErrorCause"].startswith("SDL unavailable") for i in insts)
    assert sm.subs == {} and sm.stats.errors["sdl"] >= 2
