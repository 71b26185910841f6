"""rtmgr-lite: keeps the RMR route table and pushes it to every endpoint, like O-RAN SC's rtmgr.

Inputs: the platform endpoints, the xApps appmgr-lite registered (their descriptors), and the
subscription routes submgr asks for over REST (``/ric/v1/handles/xapp-subscription-handle``,
O-RAN SC's path, body ``{"address", "port", "subscription_id"}``). On every change the full
table goes to each endpoint's route port as RMR type 20 messages (whole lines, < 4 KB each),
and to a seed file for processes that start later (RMR_SEED_RT). The table is re-sent every
``refresh_s`` so an endpoint that restarted catches up.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from aiohttp import web

from octoric.contracts import message_types as mt
from octoric.ric.routing import (
    PlatformEndpoints,
    SubscriptionRoute,
    XappRoutes,
    build_routes,
    check_host,
    next_generation,
    render,
)
from octoric.ric.sdl import Sdl

log = logging.getLogger("ric.rtmgr")
NS = "octoric.ric.routes"
CHUNK = 4000
# every subscription route is in every table pushed on every change, so they are bounded: a
# near-RT RIC runs a few subscriptions per E2 node and xApp, each received by an instance or two
MAX_SUBSCRIPTIONS = 4096
MAX_SUB_ENDPOINTS = 16

Pusher = Callable[[str, int, bytes], bool]  # (control "host:port", mtype, payload) -> sent


@dataclass
class RtmgrStats:
    refused_full: int = 0  # subscription routes refused at MAX_SUBSCRIPTIONS / MAX_SUB_ENDPOINTS
    pushes: int = 0
    push_failures: int = 0
    tables: int = 0
    rest: Counter[str] = field(default_factory=Counter)


class Rtmgr:
    def __init__(
        self,
        sdl: Sdl,
        platform: PlatformEndpoints,
        platform_control: list[str],
        push: Pusher,
        seed_file: Path,
        xapps: Callable[[], Awaitable[list[tuple[XappRoutes, str]]]],
        refresh_s: float = 10.0,
        key: bytes = b"",
    ) -> None:
        """``key``: sign every table with it (the run's route key; ``routing.render``)."""
        self.sdl, self.platform, self.platform_control = sdl, platform, platform_control
        self.key = key
        self.push, self.seed_file, self.xapps, self.refresh_s = push, seed_file, xapps, refresh_s
        self.stats = RtmgrStats()
        self.table = ""
        self._lock = asyncio.Lock()
        self._task: asyncio.Task[None] | None = None
        self._version = 0

    async def start(self) -> None:
        await self.rebuild()
        self._task = asyncio.create_task(self._refresh())

    async def stop(self) -> None:
        if self._task:
            self._task.cancel()

    async def subscription_routes(self) -> list[SubscriptionRoute]:
        by_sub: dict[int, list[str]] = {}
        for key, v in (await self.sdl.all_json(NS, "sub.")).items():
            by_sub.setdefault(int(key.split(".")[1]), []).extend(v)
        return [SubscriptionRoute(s, tuple(e)) for s, e in sorted(by_sub.items())]

    async def rebuild(self) -> str:
        async with self._lock:
            xapps = await self.xapps()
            routes = build_routes(
                self.platform, [x for x, _ in xapps], await self.subscription_routes()
            )
            self._version += 1
            self.table = render(
                routes, f"octoric-{self._version}", self.key, generation=next_generation()
            )
            self.stats.tables += 1
            tmp = self.seed_file.with_suffix(".tmp")
            tmp.parent.mkdir(parents=True, exist_ok=True)
            # the user's only (issue #43): a table another user could read, it could replay
            tmp.unlink(missing_ok=True)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(self.table)
            tmp.replace(self.seed_file)  # atomic: a reader never sees half a table
            targets = self.platform_control + [ctl for _, ctl in xapps]
            await asyncio.to_thread(self._push_all, targets)
            return self.table

    def _push_all(self, targets: list[str]) -> None:
        chunks, cur = [], ""
        for line in self.table.splitlines(keepends=True):
            if len(cur) + len(line) > CHUNK:
                chunks.append(cur)
                cur = ""
            cur += line
        if cur:
            chunks.append(cur)
        for t in targets:
            ok = all(self.push(t, mt.RMRRM_TABLE_DATA, c.encode()) for c in chunks)
            if ok:
                self.stats.pushes += 1
            else:
                self.stats.push_failures += 1
                log.debug("route table push to %s failed (endpoint not up yet?)", t)

    async def _refresh(self) -> None:
        while True:
            await asyncio.sleep(self.refresh_s)
            try:
                await self.rebuild()
            except Exception:
                log.exception("periodic route refresh failed")

    # --- REST (submgr's calls) ----------------------------------------------------------------
    def routes(self) -> list[web.RouteDef]:
        path = "/ric/v1/handles/xapp-subscription-handle"
        return [
            web.post(path, self.add_sub),
            web.delete(path, self.del_sub),
            web.get("/ric/v1/routes", self.get_table),
        ]

    async def _handle_body(self, request: web.Request) -> tuple[int, str]:
        try:
            b = json.loads(await request.read())
            sub, port, host = int(b["subscription_id"]), int(b["port"]), str(b["address"])
            if not (0 <= sub <= 65535 and 0 < port < 65536 and host):
                raise ValueError("out of range")
            check_host(host, "address")  # it goes into every route table
        except (
            ValueError,
            KeyError,
            TypeError,
            OverflowError,
            UnicodeDecodeError,
            RecursionError,
        ) as e:
            raise web.HTTPBadRequest(
                text=json.dumps({"error": f"need address, port, subscription_id: {e}"}),
                content_type="application/json",
            ) from None
        return sub, f"{host}:{port}"

    async def add_sub(self, request: web.Request) -> web.Response:
        self.stats.rest["add"] += 1
        sub, ep = await self._handle_body(request)
        cur = await self.sdl.get_json(NS, f"sub.{sub}") or []
        if ep not in cur:
            full = len(cur) >= MAX_SUB_ENDPOINTS or (
                not cur and len(await self.sdl.keys(NS, "sub.")) >= MAX_SUBSCRIPTIONS
            )
            if full:
                self.stats.refused_full += 1
                raise web.HTTPConflict(
                    text=json.dumps({"error": "route table full: at most "
                                     f"{MAX_SUBSCRIPTIONS} subscriptions of "
                                     f"{MAX_SUB_ENDPOINTS} endpoints each"}),
                    content_type="application/json",
                )  # fmt: skip
            await self.sdl.set_json(NS, f"sub.{sub}", [*cur, ep])
        await self.rebuild()
        return web.Response(status=201)

    async def del_sub(self, request: web.Request) -> web.Response:
        self.stats.rest["del"] += 1
        sub, ep = await self._handle_body(request)
        cur = [e for e in (await self.sdl.get_json(NS, f"sub.{sub}") or []) if e != ep]
        if cur:
            await self.sdl.set_json(NS, f"sub.{sub}", cur)
        else:
            await self.sdl.delete(NS, f"sub.{sub}")
        await self.rebuild()
        return web.Response(status=204)

    async def get_table(self, request: web.Request) -> web.Response:
        return web.Response(text=self.table, content_type="text/plain")
