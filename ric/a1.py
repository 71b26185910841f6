"""a1-lite: the A1-P v2 REST API of O-RAN SC's A1 mediator, delivering policies over RMR.

Operators create policy types (a JSON schema each) and instances; every instance is validated
against its type's ``create_schema`` (400 with the reason otherwise) and sent to the xApps that
handle the type as A1_POLICY_REQ (20010, sub_id = policy type id). Their A1_POLICY_RESP (20011)
answers make the instance's status. State lives in the SDL, so a restart loses nothing.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import jsonschema
from aiohttp import web

from octoric.contracts import a1 as a1_paths
from octoric.contracts import message_types as mt
from octoric.ric import a1_schema
from octoric.ric.sdl import Sdl

log = logging.getLogger("ric.a1")
NS = "octoric.ric.a1"
PREFIX = a1_paths.PREFIX
MAX_BODY = 1 << 20

# (mtype, payload, sub_id) -> sent?
Sender = Callable[[int, bytes, int], bool]

_NOTIFICATION_SCHEMA = {
    "type": "object",
    "required": ["policy_type_id", "policy_instance_id", "handler_id", "status"],
    "properties": {
        "policy_type_id": {"type": "integer", "minimum": 1},
        "policy_instance_id": {"type": "string"},
        "handler_id": {"type": "string"},
        "status": {"enum": ["OK", "ERROR", "DELETED"]},
        "message": {"type": "string", "maxLength": 4000},  # octoric: why ERROR (optional)
    },
}


@dataclass
class A1Counters:
    requests: int = 0
    bad_requests: int = 0
    sent: int = 0
    send_failures: int = 0
    responses: int = 0
    bad_responses: int = 0


@dataclass
class A1Service:
    sdl: Sdl
    send: Sender
    counters: A1Counters = field(default_factory=A1Counters)

    # --- storage -------------------------------------------------------------------------
    async def _type(self, tid: int) -> dict[str, Any] | None:
        v = await self.sdl.get_json(NS, f"type.{tid}")
        return v if isinstance(v, dict) else None

    async def _instance_ids(self, tid: int) -> list[str]:
        prefix = f"inst.{tid}."
        return [k[len(prefix) :] for k in await self.sdl.keys(NS, prefix)]

    # --- delivery ------------------------------------------------------------------------
    def _deliver(self, op: str, tid: int, iid: str, payload: dict[str, Any]) -> bool:
        msg = {
            "operation": op,
            "policy_type_id": tid,
            "policy_instance_id": iid,
            "payload": payload,
        }
        ok = self.send(mt.A1_POLICY_REQ, json.dumps(msg).encode(), tid)
        if ok:
            self.counters.sent += 1
        else:
            self.counters.send_failures += 1
            log.warning("A1_POLICY_REQ %s %d/%s not sent (no route?)", op, tid, iid)
        return ok

    async def on_rmr(self, mtype: int, payload: bytes) -> list[tuple[int, bytes]]:
        """Handle 20011 (status) and 20012 (query); returns replies to send back (rts)."""
        try:
            body = json.loads(payload)
            if mtype == mt.A1_POLICY_QUERY:
                tid = int(body["policy_type_id"])
                replies = []
                for iid in await self._instance_ids(tid):
                    inst = await self.sdl.get_json(NS, f"inst.{tid}.{iid}")
                    msg = {
                        "operation": "CREATE",
                        "policy_type_id": tid,
                        "policy_instance_id": iid,
                        "payload": inst["payload"],
                    }
                    replies.append((mt.A1_POLICY_REQ, json.dumps(msg).encode()))
                return replies
            jsonschema.validate(body, _NOTIFICATION_SCHEMA)
        except (ValueError, KeyError, TypeError, jsonschema.ValidationError) as e:
            self.counters.bad_responses += 1
            log.warning("bad A1 message type %d from xApp: %s", mtype, _short(e))
            return []
        self.counters.responses += 1
        tid, iid = body["policy_type_id"], body["policy_instance_id"]
        key = f"inst.{tid}.{iid}"
        inst = await self.sdl.get_json(NS, key)
        if inst is None:
            return []
        inst["handlers"][body["handler_id"]] = body["status"]
        reasons = inst.setdefault("reasons", {})
        if body["status"] == "ERROR" and body.get("message"):
            reasons[body["handler_id"]] = body["message"]
        else:
            reasons.pop(body["handler_id"], None)
        if inst["deleted"] and all(s == "DELETED" for s in inst["handlers"].values()):
            await self.sdl.delete(NS, key)
        else:
            await self.sdl.set_json(NS, key, inst)
        return []

    # --- REST ----------------------------------------------------------------------------
    def routes(self) -> list[web.RouteDef]:
        p = PREFIX
        return [
            web.get(f"{p}/healthcheck", self.health),
            web.get(f"{p}/policytypes", self.list_types),
            web.get(p + "/policytypes/{tid}", self.get_type),
            web.put(p + "/policytypes/{tid}", self.put_type),
            web.delete(p + "/policytypes/{tid}", self.delete_type),
            web.get(p + "/policytypes/{tid}/policies", self.list_instances),
            web.get(p + "/policytypes/{tid}/policies/{iid}", self.get_instance),
            web.put(p + "/policytypes/{tid}/policies/{iid}", self.put_instance),
            web.delete(p + "/policytypes/{tid}/policies/{iid}", self.delete_instance),
            web.get(p + "/policytypes/{tid}/policies/{iid}/status", self.instance_status),
        ]

    async def health(self, request: web.Request) -> web.Response:
        return web.Response(status=200)

    async def list_types(self, request: web.Request) -> web.Response:
        ids = sorted(int(k.split(".")[1]) for k in await self.sdl.keys(NS, "type."))
        return web.json_response(ids)

    async def get_type(self, request: web.Request) -> web.Response:
        tid = _tid(request)
        t = await self._type(tid)
        if t is None:
            raise _error(404, f"policy type {tid} not found")
        return web.json_response(t)

    async def put_type(self, request: web.Request) -> web.Response:
        self.counters.requests += 1
        tid = _tid(request)
        body = await self._json(request)
        try:
            if not isinstance(body, dict):
                raise ValueError("the body must be a JSON object")
            for k in ("name", "description", "policy_type_id", "create_schema"):
                if k not in body:
                    raise ValueError(f"missing field {k!r}")
            if body["policy_type_id"] != tid:
                raise ValueError(f"policy_type_id {body['policy_type_id']} != {tid} in the URL")
            a1_schema.check_schema(body["create_schema"])
        except (ValueError, jsonschema.SchemaError) as e:
            self.counters.bad_requests += 1
            raise _error(400, f"invalid policy type: {_short(e)}") from None
        if await self._type(tid) is not None:
            self.counters.bad_requests += 1
            raise _error(400, f"policy type {tid} already exists; delete it first")
        await self.sdl.set_json(NS, f"type.{tid}", body)
        log.info("policy type %d created", tid)
        return web.Response(status=201)

    async def delete_type(self, request: web.Request) -> web.Response:
        tid = _tid(request)
        if await self._type(tid) is None:
            raise _error(404, f"policy type {tid} not found")
        if await self._instance_ids(tid):
            raise _error(400, f"policy type {tid} still has instances; delete them first")
        await self.sdl.delete(NS, f"type.{tid}")
        return web.Response(status=204)

    async def list_instances(self, request: web.Request) -> web.Response:
        tid = _tid(request)
        if await self._type(tid) is None:
            raise _error(404, f"policy type {tid} not found")
        return web.json_response(await self._instance_ids(tid))

    async def get_instance(self, request: web.Request) -> web.Response:
        inst = await self._existing(request)
        return web.json_response(inst["payload"])

    async def put_instance(self, request: web.Request) -> web.Response:
        self.counters.requests += 1
        tid, iid = _tid(request), _iid(request)
        t = await self._type(tid)
        if t is None:
            raise _error(404, f"policy type {tid} not found")
        body = await self._json(request)
        try:
            a1_schema.validate(body, t["create_schema"])
        except (jsonschema.ValidationError, a1_schema.UnsafeSchemaError) as e:
            self.counters.bad_requests += 1
            where = ""
            if isinstance(e, jsonschema.ValidationError) and e.absolute_path:
                where = " at /" + "/".join(str(p) for p in e.absolute_path)
            raise _error(
                400, f"instance does not match policy type {tid}{where}: {_short(e)}"
            ) from None
        key = f"inst.{tid}.{iid}"
        old = await self.sdl.get_json(NS, key)
        inst = {"payload": body, "created_at": time.time(), "deleted": False, "handlers": {}}
        await self.sdl.set_json(NS, key, inst)
        self._deliver("UPDATE" if old else "CREATE", tid, iid, body)
        return web.Response(status=202)

    async def delete_instance(self, request: web.Request) -> web.Response:
        tid, iid = _tid(request), _iid(request)
        inst = await self._existing(request)
        inst["deleted"] = True
        key = f"inst.{tid}.{iid}"
        if inst["handlers"]:
            await self.sdl.set_json(NS, key, inst)
        else:
            await self.sdl.delete(NS, key)  # nobody holds it: gone at once
        self._deliver("DELETE", tid, iid, inst["payload"])
        return web.Response(status=202)

    async def instance_status(self, request: web.Request) -> web.Response:
        inst = await self._existing(request)
        handlers = inst["handlers"]
        in_effect = any(s == "OK" for s in handlers.values())
        # A1-P's enforceStatus beside O-RAN SC's instance_status: enforced only when every
        # handler enforced it; the reasons say, per handler, why not
        enforced = bool(handlers) and all(s == "OK" for s in handlers.values())
        body = {
            "instance_status": "IN EFFECT" if in_effect else "NOT IN EFFECT",
            "has_been_deleted": inst["deleted"],
            "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(inst["created_at"])),
            "handlers": handlers,
            "enforceStatus": "ENFORCED" if enforced else "NOT_ENFORCED",
        }
        reasons = inst.get("reasons") or {}
        if reasons:
            body["enforceReason"] = "OTHER_REASON"
            body["reasons"] = reasons
        return web.json_response(body)

    async def _existing(self, request: web.Request) -> dict[str, Any]:
        tid, iid = _tid(request), _iid(request)
        inst = await self.sdl.get_json(NS, f"inst.{tid}.{iid}")
        if not isinstance(inst, dict):
            raise _error(404, f"policy instance {tid}/{iid} not found")
        return inst

    async def _json(self, request: web.Request) -> Any:
        if request.content_length is not None and request.content_length > MAX_BODY:
            self.counters.bad_requests += 1
            raise _error(413, f"body larger than {MAX_BODY} bytes")
        try:
            return json.loads(await request.read())
        except (ValueError, UnicodeDecodeError, RecursionError) as e:
            self.counters.bad_requests += 1
            raise _error(400, f"body is not valid JSON: {e}") from None


def _tid(request: web.Request) -> int:
    raw = request.match_info["tid"]
    if not raw.isdigit() or not 1 <= int(raw) <= 2**31 - 1:
        raise _error(400, f"policy type id must be an integer in 1..2147483647, got {raw!r}")
    return int(raw)


def _iid(request: web.Request) -> str:
    iid = request.match_info["iid"]
    if not iid or len(iid) > 256 or "." in iid:
        raise _error(400, "policy instance id must be 1-256 characters without '.'")
    return iid


def _error(status: int, reason: str) -> web.HTTPException:
    body = json.dumps({"error": reason})
    if status == 404:
        return web.HTTPNotFound(text=body, content_type="application/json")
    if status == 413:
        return web.HTTPRequestEntityTooLarge(
            MAX_BODY, 0, text=body, content_type="application/json"
        )
    return web.HTTPBadRequest(text=body, content_type="application/json")


def _short(e: BaseException) -> str:
    return str(getattr(e, "message", e)).splitlines()[0][:300]
