"""appmgr-lite: the part of O-RAN SC's appmgr that ricxappframe calls on start and stop.

``POST /ric/v1/register`` (ricxappframe's ``Xapp.register``: appName, appVersion,
appInstanceName, httpEndpoint, rmrEndpoint, config as a JSON string) records the xApp and its
descriptor; ``POST /ric/v1/deregister`` removes it; ``GET /ric/v1/xapps`` lists them in appmgr's
shape. Each change calls ``on_change`` so routing can rebuild the route table.

ricxappframe posts to ``http://service-<ns>-appmgr-http.<ns>:8080/...``; an xApp started by the
embedded RIC reaches us through ``HTTP_PROXY`` pointed here, so requests may arrive in absolute
form and are matched on their path alone.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from functools import cached_property
from typing import Any

from aiohttp import web

from octoric.ric.routing import XappRoutes, check_endpoint
from octoric.ric.sdl import Sdl

log = logging.getLogger("ric.appmgr")
NS = "octoric.ric.xapps"
# a near-RT RIC hosts tens of xApps; each one is in every route table and every listing, so a
# registering client (authenticated, but maybe broken) must not grow them without bound
MAX_XAPPS = 256


@dataclass
class XappRecord:
    name: str  # appName (ricxappframe sends the pod's HOSTNAME)
    instance: str  # appInstanceName (the descriptor's name)
    version: str
    http_endpoint: str
    rmr_endpoint: str
    descriptor: dict[str, Any] = field(default_factory=dict)

    @cached_property
    def _routes(self) -> XappRoutes:
        return XappRoutes.from_descriptor(self.descriptor, self.rmr_endpoint)

    def routes(self) -> XappRoutes:
        """What the descriptor routes to this xApp (read once per record; not to be mutated)."""
        return self._routes


@dataclass
class AppmgrCounters:
    registered: int = 0
    deregistered: int = 0
    bad_requests: int = 0
    refused_full: int = 0  # new xApps refused at MAX_XAPPS


class Appmgr:
    def __init__(self, sdl: Sdl, on_change: Callable[[], Awaitable[None]] | None = None) -> None:
        self.sdl = sdl
        self.on_change = on_change
        self.counters = AppmgrCounters()
        # name -> (the SDL bytes, the record decoded from them): every listing and route rebuild
        # reads all registrations from SDL, but decodes only those whose bytes changed (up to
        # MAX_XAPPS descriptors parsed per request made appmgr ~10x slower under load)
        self._decoded: dict[str, tuple[bytes, XappRecord]] = {}

    async def xapps(self) -> list[XappRecord]:
        """Every registration, as SDL holds it now (Redis is read every time; an unchanged
        record is not decoded again)."""
        raw = await self.sdl.get_many(NS, await self.sdl.keys(NS))
        cache: dict[str, tuple[bytes, XappRecord]] = {}
        for name, value in raw.items():
            hit = self._decoded.get(name)
            if hit is None or hit[0] != value:
                hit = (value, XappRecord(**json.loads(value)))
            cache[name] = hit
        self._decoded = cache
        return [rec for _, rec in cache.values()]

    def routes(self) -> list[web.RouteDef]:
        return [
            web.post("/ric/v1/register", self.register),
            web.post("/ric/v1/deregister", self.deregister),
            web.get("/ric/v1/xapps", self.list_xapps),
            # no health routes of its own: services.build_app's ready check says 503 while
            # Redis does not admit the platform (these answered 200 regardless, issue #43)
        ]

    async def _body(self, request: web.Request, required: tuple[str, ...]) -> dict[str, Any]:
        try:
            body = json.loads(await request.read())
            if not isinstance(body, dict):
                raise ValueError("the body must be a JSON object")
            missing = [k for k in required if not isinstance(body.get(k), str) or not body[k]]
            if missing:
                raise ValueError(f"missing or empty fields: {', '.join(missing)}")
        except (ValueError, UnicodeDecodeError, RecursionError) as e:
            self.counters.bad_requests += 1
            log.warning("bad appmgr request %s: %s", request.path, e)
            raise web.HTTPBadRequest(
                text=json.dumps({"error": str(e)}), content_type="application/json"
            ) from None
        return body

    async def register(self, request: web.Request) -> web.Response:
        body = await self._body(
            request, ("appName", "appInstanceName", "httpEndpoint", "rmrEndpoint")
        )
        try:
            config = body.get("config") or "{}"
            if not isinstance(config, str):  # O-RAN SC: the descriptor as a JSON string
                raise ValueError("config must be the descriptor as a JSON string")
            descriptor = json.loads(config)
            if not isinstance(descriptor, dict):
                raise ValueError("config must be a JSON object")
            rec = XappRecord(
                name=body["appName"],
                instance=body["appInstanceName"],
                version=str(body.get("appVersion") or ""),
                http_endpoint=body["httpEndpoint"],
                rmr_endpoint=body["rmrEndpoint"],
                descriptor=descriptor,
            )
            # a bad endpoint would reach every route table (or break its rebuild): refuse it here
            check_endpoint(rec.rmr_endpoint, "rmrEndpoint")
            check_endpoint(rec.http_endpoint, "httpEndpoint")
            rec.routes()  # reject descriptors naming unknown message types now, not later
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as e:
            self.counters.bad_requests += 1
            raise web.HTTPBadRequest(
                text=json.dumps({"error": f"bad xApp config: {e}"}), content_type="application/json"
            ) from None
        known = await self.sdl.keys(NS)
        if rec.name not in known and len(known) >= MAX_XAPPS:
            self.counters.refused_full += 1
            raise web.HTTPConflict(
                text=json.dumps({"error": f"{MAX_XAPPS} xApps are registered: deregister one"}),
                content_type="application/json",
            )
        await self.sdl.set_json(NS, rec.name, asdict(rec))
        self.counters.registered += 1
        log.info("xApp %s registered (rmr %s)", rec.name, rec.rmr_endpoint)
        if self.on_change:
            await self.on_change()
        return web.json_response({"name": rec.name}, status=201)

    async def deregister(self, request: web.Request) -> web.Response:
        body = await self._body(request, ("appName",))
        await self.sdl.delete(NS, body["appName"])
        self.counters.deregistered += 1
        log.info("xApp %s deregistered", body["appName"])
        if self.on_change:
            await self.on_change()
        return web.Response(status=204)

    async def list_xapps(self, request: web.Request) -> web.Response:
        out = []
        for x in await self.xapps():
            r = x.routes()
            host, _, port = x.rmr_endpoint.rpartition(":")
            out.append(
                {
                    "name": x.instance,
                    "status": "deployed",
                    "version": x.version,
                    "instances": [
                        {
                            "name": x.name,
                            "status": "running",
                            "ip": host,
                            "port": int(port) if port.isdigit() else 0,
                            "txMessages": r.tx,
                            "rxMessages": r.rx,
                            "policies": r.policies,
                        }
                    ],
                }
            )
        return web.json_response(out)
