"""submgr: the subscription manager's REST API (O-RAN SC contract) on top of E2 subscriptions.

``POST /ric/v1/subscriptions`` takes the CamelCase body ricxappframe's REST clients send
(ClientEndpoint, Meid, RANFunctionID, E2SubscriptionDirectives, SubscriptionDetails), answers
at once with a SubscriptionId, then for each SubscriptionDetails item makes (or joins) an E2
subscription and POSTs the outcome to the client's ``/ric/v1/subscriptions/response``.

- Identical requests (same node, RAN function, event trigger and actions) from several xApps
  share one E2 subscription, as on O-RAN SC; the last one to leave deletes it.
- RIC request IDs: requestor 123 (as O-RAN SC's submgr), instance IDs unique per RIC (a Redis
  counter), so they survive restarts. The instance ID is the E2EventInstanceId and the RMR
  sub_id of the subscription's RIC_INDICATIONs.
- Routes (RIC_INDICATION with that sub_id -> the client's RMR endpoint) are installed through
  the route manager before the node is asked, when RMRRoutingNeeded.
- State is in the SDL; after a restart everything is reloaded. When a node reconnects
  (RAN_CONNECTED from e2term), its subscriptions are requested again.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import aiohttp
from aiohttp import web
from redis.exceptions import RedisError

from octoric.contracts import auth
from octoric.contracts import message_types as mt
from octoric.e2sm import e2ap
from octoric.e2sm.e2ap_ies import (
    RicActionToBeSetup,
    RicRequestId,
    RicSubscriptionDetails,
    RicSubsequentAction,
)
from octoric.e2sm.errors import E2smError
from octoric.ric.rmr_endpoint import RmrEndpoint, RmrMessage
from octoric.ric.routing import check_host
from octoric.ric.sdl import Sdl

log = logging.getLogger("ric.submgr")
NS = "octoric.ric.subs"
REQUESTOR_ID = 123
TIME_TO_WAIT = {
    "zero",
    "w1ms",
    "w2ms",
    "w5ms",
    "w10ms",
    "w20ms",
    "w30ms",
    "w40ms",
    "w50ms",
    "w100ms",
    "w200ms",
    "w500ms",
    "w1s",
    "w2s",
    "w5s",
    "w10s",
    "w20s",
    "w60s",
}

# (route-manager call) add or remove: (sub_id, "host:port", add?) -> ok
RouteHook = Callable[[int, str, bool], Awaitable[bool]]


class BadRequest(ValueError):
    """The REST body is invalid; the message says which field and why."""


@dataclass
class Client:
    host: str
    http_port: int
    rmr_port: int
    subscription_id: str  # the REST SubscriptionId this client got
    xapp_event_instance_id: int

    @property
    def rmr_endpoint(self) -> str:
        return f"{self.host}:{self.rmr_port}"


@dataclass
class E2Subscription:
    instance_id: int
    meid: str
    ran_function_id: int
    event_trigger_hex: str
    actions: list[dict[str, Any]]  # ActionID, ActionType, ActionDefinition (hex), Subsequent...
    routing: bool
    timeout_s: float
    retries: int
    clients: list[Client] = field(default_factory=list)
    state: str = "requested"  # requested / active / failed / deleting / waiting-node
    created_at: float = field(default_factory=time.time)

    def merge_key(self) -> str:
        return json.dumps(
            [self.meid, self.ran_function_id, self.event_trigger_hex, self.actions], sort_keys=True
        )

    def to_e2ap(self) -> e2ap.RicSubscriptionRequest:
        actions = tuple(
            RicActionToBeSetup(
                a["ActionID"],
                a["ActionType"],
                bytes.fromhex(a["ActionDefinition"]) if a.get("ActionDefinition") else None,
                RicSubsequentAction(a["SubsequentActionType"], _e2ap_time_to_wait(a["TimeToWait"]))
                if a.get("SubsequentActionType")
                else None,
            )
            for a in self.actions
        )
        return e2ap.RicSubscriptionRequest(
            RicRequestId(REQUESTOR_ID, self.instance_id),
            self.ran_function_id,
            RicSubscriptionDetails(bytes.fromhex(self.event_trigger_hex), actions),
        )

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> E2Subscription:
        d = dict(d)
        d["clients"] = [Client(**c) for c in d["clients"]]
        return cls(**d)


def _e2ap_time_to_wait(rest_value: str) -> str:
    """The REST API (as O-RAN SC's) offers "zero"; E2AP v2+ RICtimeToWait starts at w1ms."""
    return "w1ms" if rest_value == "zero" else rest_value


@dataclass
class SubmgrStats:
    rest: Counter[str] = field(default_factory=Counter)
    e2: Counter[str] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)


def _int_field(d: dict[str, Any], key: str, lo: int, hi: int, where: str) -> int:
    v = d.get(key)
    if not isinstance(v, int) or isinstance(v, bool) or not lo <= v <= hi:
        raise BadRequest(f"{where}{key} must be an integer in {lo}..{hi}, got {v!r}")
    return v


def _bytes_field(v: Any, where: str) -> str:
    if not isinstance(v, list) or not all(isinstance(b, int) and 0 <= b <= 255 for b in v):
        raise BadRequest(f"{where} must be a list of byte values 0..255")
    return bytes(v).hex()


def parse_request(body: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Validate a POST body; returns (common fields, per-details specs). Raises BadRequest."""
    if not isinstance(body, dict):
        raise BadRequest("the body must be a JSON object")
    ce = body.get("ClientEndpoint")
    if not isinstance(ce, dict) or not isinstance(ce.get("Host"), str) or not ce["Host"]:
        raise BadRequest("ClientEndpoint.Host is required")
    try:
        check_host(ce["Host"], "ClientEndpoint.Host")  # it goes into route tables
    except ValueError as e:
        raise BadRequest(str(e)) from None
    http_port = _int_field(ce, "HTTPPort", 0, 65535, "ClientEndpoint.")
    rmr_port = _int_field(ce, "RMRPort", 1, 65535, "ClientEndpoint.")
    meid = body.get("Meid")
    if not isinstance(meid, str) or not meid or len(meid) > 31:
        raise BadRequest("Meid must be a node name of 1..31 characters")
    ranf = _int_field(body, "RANFunctionID", 0, 4095, "")
    directives = body.get("E2SubscriptionDirectives") or {}
    if not isinstance(directives, dict):
        raise BadRequest("E2SubscriptionDirectives must be an object")
    timeout = directives.get("E2TimeoutTimerValue", 2)
    retries = directives.get("E2RetryCount", 2)
    if not isinstance(timeout, int) or not 1 <= timeout <= 10:
        raise BadRequest("E2SubscriptionDirectives.E2TimeoutTimerValue must be 1..10 seconds")
    if not isinstance(retries, int) or not 0 <= retries <= 10:
        raise BadRequest("E2SubscriptionDirectives.E2RetryCount must be 0..10")
    routing = directives.get("RMRRoutingNeeded", True)
    if not isinstance(routing, bool):
        raise BadRequest("E2SubscriptionDirectives.RMRRoutingNeeded must be true or false")
    details = body.get("SubscriptionDetails")
    if not isinstance(details, list) or not details:
        raise BadRequest("SubscriptionDetails must be a non-empty list")
    specs = []
    for i, d in enumerate(details):
        w = f"SubscriptionDetails[{i}]."
        if not isinstance(d, dict):
            raise BadRequest(f"SubscriptionDetails[{i}] must be an object")
        xid = _int_field(d, "XappEventInstanceId", 0, 65535, w)
        trigger = _bytes_field(d.get("EventTriggers"), f"{w}EventTriggers")
        acts = d.get("ActionToBeSetupList")
        if not isinstance(acts, list) or not acts:
            raise BadRequest(f"{w}ActionToBeSetupList must be a non-empty list")
        actions = []
        for j, a in enumerate(acts):
            wa = f"{w}ActionToBeSetupList[{j}]."
            if not isinstance(a, dict):
                raise BadRequest(f"{wa[:-1]} must be an object")
            atype = a.get("ActionType")
            if atype not in ("report", "insert", "policy"):
                raise BadRequest(f"{wa}ActionType must be report, insert or policy")
            act: dict[str, Any] = {
                "ActionID": _int_field(a, "ActionID", 0, 255, wa),
                "ActionType": atype,
            }
            if a.get("ActionDefinition") is not None:
                act["ActionDefinition"] = _bytes_field(
                    a["ActionDefinition"], f"{wa}ActionDefinition"
                )
            sa = a.get("SubsequentAction")
            if sa is not None:
                if not isinstance(sa, dict) or sa.get("SubsequentActionType") not in (
                    "continue",
                    "wait",
                ):
                    raise BadRequest(
                        f"{wa}SubsequentAction.SubsequentActionType must be continue or wait"
                    )
                ttw = sa.get("TimeToWait", "zero")
                if ttw not in TIME_TO_WAIT:
                    raise BadRequest(
                        f"{wa}SubsequentAction.TimeToWait {ttw!r} is not an E2AP RICtimeToWait"
                    )
                act["SubsequentActionType"], act["TimeToWait"] = sa["SubsequentActionType"], ttw
            actions.append(act)
        specs.append({"xapp_event_instance_id": xid, "trigger": trigger, "actions": actions})
    common = {
        "host": ce["Host"],
        "http_port": http_port,
        "rmr_port": rmr_port,
        "meid": meid,
        "ran_function_id": ranf,
        "timeout": float(timeout),
        "retries": retries,
        "routing": routing,
        "subscription_id": body.get("SubscriptionId"),
    }
    if common["subscription_id"] is not None and not isinstance(common["subscription_id"], str):
        raise BadRequest("SubscriptionId must be a string")
    return common, specs


class Submgr:
    def __init__(
        self, sdl: Sdl, rmr: RmrEndpoint, route_hook: RouteHook | None = None, token: str = ""
    ) -> None:
        """``token``: the run's API token, sent with every outcome POSTed to a client (the
        xApps refuse an outcome without it: a forged failure made them subscribe again)."""
        self.sdl, self.rmr, self.route_hook = sdl, rmr, route_hook
        self._notify_headers = auth.bearer(token)
        self.subs: dict[int, E2Subscription] = {}
        self.stats = SubmgrStats()
        self._waiters: dict[tuple[str, int, str], asyncio.Future[tuple[int, bytes]]] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._http: aiohttp.ClientSession | None = None
        self._rmr_task: asyncio.Task[None] | None = None

    # --- lifecycle --------------------------------------------------------------------------
    async def start(self) -> None:
        self._http = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=3))
        for v in (await self.sdl.all_json(NS, "sub.")).values():
            s = E2Subscription.from_json(v)
            self.subs[s.instance_id] = s
        if self.subs:
            log.info("restored %d subscriptions from the SDL", len(self.subs))
            if self.route_hook:  # the route manager may have restarted too: re-install
                for s in self.subs.values():
                    await self._routes(s, s.clients, add=True)
        self._rmr_task = asyncio.create_task(self._rmr_loop())

    async def stop(self) -> None:
        if self._rmr_task:
            self._rmr_task.cancel()
        for t in list(self._tasks):
            t.cancel()
        if self._http:
            await self._http.close()

    def _spawn(self, coro: Awaitable[Any]) -> None:
        t = asyncio.ensure_future(coro)
        self._tasks.add(t)
        t.add_done_callback(self._tasks.discard)

    async def _save(self, s: E2Subscription) -> None:
        await self.sdl.set_json(NS, f"sub.{s.instance_id}", asdict(s))

    async def _new_instance_id(self) -> int:
        for _ in range(65535):
            n = await self.sdl.incr(NS, "instance-counter")
            iid = (n - 1) % 65535 + 1
            if iid not in self.subs:
                return iid
        raise RuntimeError("no free RIC instance ID")

    # --- REST -------------------------------------------------------------------------------
    def routes(self) -> list[web.RouteDef]:
        return [
            web.post("/ric/v1/subscriptions", self.post),
            web.get("/ric/v1/subscriptions", self.list_),
            web.delete("/ric/v1/subscriptions/{id}", self.delete),
        ]

    async def post(self, request: web.Request) -> web.Response:
        self.stats.rest["post"] += 1
        try:
            common, specs = parse_request(json.loads(await request.read()))
        except (BadRequest, ValueError, RecursionError) as e:  # RecursionError: JSON too deep
            self.stats.errors["bad_rest"] += 1
            return web.json_response({"error": f"invalid subscription request: {e}"}, status=400)
        sid = common["subscription_id"] or uuid.uuid4().hex
        self._spawn(self._subscribe(sid, common, specs))
        return web.json_response({"SubscriptionId": sid, "SubscriptionInstances": None}, status=201)

    async def list_(self, request: web.Request) -> web.Response:
        out = []
        for s in sorted(self.subs.values(), key=lambda s: s.instance_id):
            out.append(
                {
                    "SubscriptionId": s.clients[0].subscription_id if s.clients else None,
                    "E2EventInstanceId": s.instance_id,
                    "Meid": s.meid,
                    "RANFunctionID": s.ran_function_id,
                    "State": s.state,
                    "ClientEndpoint": [f"{c.host}:{c.http_port}" for c in s.clients],
                    "Endpoint": [c.rmr_endpoint for c in s.clients],
                }
            )
        return web.json_response(out)

    async def delete(self, request: web.Request) -> web.Response:
        self.stats.rest["delete"] += 1
        sid = request.match_info["id"]
        mine = [s for s in self.subs.values() if any(c.subscription_id == sid for c in s.clients)]
        if not mine:
            return web.json_response({"error": f"no subscription {sid}"}, status=404)
        for s in mine:
            gone = [c for c in s.clients if c.subscription_id == sid]
            s.clients = [c for c in s.clients if c.subscription_id != sid]
            await self._routes(s, gone, add=False)
            if s.clients:
                await self._save(s)
            else:
                await self._delete_e2(s)
        return web.Response(status=204)

    # --- E2 subscription procedures ---------------------------------------------------------
    async def _subscribe(
        self, sid: str, common: dict[str, Any], specs: list[dict[str, Any]]
    ) -> None:
        """Every spec gets an answer in the one notification to the xApp: its instance, or
        the cause it failed with. A fault on the way (Redis away or timing out, a bug) is
        counted, undone in memory and told to the client, which may ask again; it never dies
        in this background task with the client left waiting."""
        instances = []
        for spec in specs:
            client = Client(
                common["host"],
                common["http_port"],
                common["rmr_port"],
                sid,
                spec["xapp_event_instance_id"],
            )
            try:
                iid, cause = await self._subscribe_one(client, common, spec)
            except Exception as e:
                kind = "sdl" if isinstance(e, RedisError | OSError) else "internal"
                self.stats.errors[kind] += 1
                log.warning("subscription %s for %s failed (%s): %s", sid, common["meid"],
                            kind, e, exc_info=kind == "internal")  # fmt: skip
                iid = await self._undo(client)
                cause = f"{'SDL unavailable' if kind == 'sdl' else 'internal error'}: {e}"
            instances.append(self._instance(client, iid, cause))
        await self._notify(common["host"], common["http_port"], sid, instances)

    async def _subscribe_one(
        self, client: Client, common: dict[str, Any], spec: dict[str, Any]
    ) -> tuple[int, str | None]:
        """(E2 instance id, failure cause or None) of one spec: merged into the E2 subscription
        that asks the same of the same node, else a new one requested from the node."""
        probe = E2Subscription(
            0,
            common["meid"],
            common["ran_function_id"],
            spec["trigger"],
            spec["actions"],
            common["routing"],
            common["timeout"],
            common["retries"],
        )
        same = next(
            (
                s
                for s in self.subs.values()
                if s.merge_key() == probe.merge_key()
                and s.state in ("active", "requested", "waiting-node")
            ),
            None,
        )
        if same is not None:  # merge into the existing E2 subscription
            same.clients.append(client)
            await self._routes(same, [client], add=True)
            await self._save(same)
            if same.state == "requested":
                await self._wait_state(same)
            ok = same.state in ("active", "waiting-node")
            return same.instance_id, None if ok else same.state
        probe.instance_id = await self._new_instance_id()
        probe.clients.append(client)
        self.subs[probe.instance_id] = probe
        await self._save(probe)
        await self._routes(probe, [client], add=True)
        try:
            cause = await self._request_e2(probe)
        except Exception as e:  # tell the client; never lose the answer in a dead task
            self.stats.errors["internal"] += 1
            log.exception("subscription %d failed", probe.instance_id)
            await self._forget(probe)
            cause = f"internal error: {e}"
        return probe.instance_id, cause

    async def _undo(self, client: Client) -> int:
        """Take a client whose subscription failed half-way out of memory (and, best effort,
        out of the routes and SDL); the E2 instance it had joined, or 0."""
        iid = 0
        for s in list(self.subs.values()):
            if not any(c is client for c in s.clients):
                continue
            iid = s.instance_id
            s.clients = [c for c in s.clients if c is not client]
            try:
                await self._routes(s, [client], add=False)
                if s.clients:
                    await self._save(s)
                elif s.state == "active":  # its last client: the node stops reporting
                    await self._delete_e2(s)
                else:  # never asked of the node (it failed before the request)
                    await self._forget(s)
            except Exception as e:  # Redis still away: memory is right, SDL catches up later
                self.stats.errors["sdl"] += 1
                log.warning("undoing subscription %d: %s", s.instance_id, e)
        return iid

    @staticmethod
    def _instance(client: Client, iid: int, cause: str | None) -> dict[str, Any]:
        return {
            "XappEventInstanceId": client.xapp_event_instance_id,
            "E2EventInstanceId": iid,
            "ErrorCause": cause or "",
            "ErrorSource": "RAN" if cause else "",
            "TimeoutType": "E2-Timeout" if cause == "timeout" else "",
        }

    async def _wait_state(self, s: E2Subscription) -> None:
        deadline = time.monotonic() + s.timeout_s * (s.retries + 1) + 1
        while s.state == "requested" and time.monotonic() < deadline:
            await asyncio.sleep(0.02)

    async def _request_e2(self, s: E2Subscription) -> str | None:
        """Ask the node; returns None when active, else the error cause."""
        pdu = e2ap.encode_e2ap(s.to_e2ap())
        for attempt in range(s.retries + 1):
            answer = await self._transact(
                s.meid, s.instance_id, "sub", mt.RIC_SUB_REQ, pdu, s.timeout_s
            )
            if answer is None:
                self.stats.e2["sub_timeout"] += 1
                log.warning(
                    "subscription %d to %s: no answer (try %d)", s.instance_id, s.meid, attempt + 1
                )
                continue
            mtype, body = answer
            if mtype == mt.RIC_SUB_RESP:
                s.state = "active"
                await self._save(s)
                self.stats.e2["sub_ok"] += 1
                log.info("subscription %d active on %s", s.instance_id, s.meid)
                return None
            s.state = "failed"
            cause = "failure"
            try:
                f = e2ap.decode_e2ap(body)
                if isinstance(f, e2ap.RicSubscriptionFailure):
                    cause = f"{f.cause.group}/{f.cause.value}"
            except E2smError:
                pass
            self.stats.e2["sub_failed"] += 1
            await self._forget(s)
            return cause
        s.state = "failed"
        await self._forget(s)
        return "timeout"

    async def _delete_e2(self, s: E2Subscription) -> None:
        s.state = "deleting"
        req = e2ap.RicSubscriptionDeleteRequest(
            RicRequestId(REQUESTOR_ID, s.instance_id), s.ran_function_id
        )
        answer = await self._transact(
            s.meid, s.instance_id, "del", mt.RIC_SUB_DEL_REQ, e2ap.encode_e2ap(req), s.timeout_s
        )
        self.stats.e2["del_ok" if answer and answer[0] == mt.RIC_SUB_DEL_RESP else "del_other"] += 1
        await self._forget(s)

    async def _forget(self, s: E2Subscription) -> None:
        await self._routes(s, s.clients, add=False)
        self.subs.pop(s.instance_id, None)
        await self.sdl.delete(NS, f"sub.{s.instance_id}")

    async def _transact(
        self, meid: str, iid: int, kind: str, mtype: int, pdu: bytes, timeout: float
    ) -> tuple[int, bytes] | None:
        key = (meid, iid, kind)
        fut: asyncio.Future[tuple[int, bytes]] = asyncio.get_running_loop().create_future()
        self._waiters[key] = fut
        try:
            if not self.rmr.send(mtype, pdu, meid=meid):
                self.stats.errors["rmr_send"] += 1
                await asyncio.sleep(min(timeout, 0.2))
                return None
            return await asyncio.wait_for(fut, timeout)
        except TimeoutError:
            return None
        finally:
            self._waiters.pop(key, None)

    async def _routes(self, s: E2Subscription, clients: list[Client], add: bool) -> None:
        if not s.routing or self.route_hook is None:
            return
        for c in clients:
            if not await self.route_hook(s.instance_id, c.rmr_endpoint, add):
                self.stats.errors["route_manager"] += 1
                log.warning(
                    "route manager did not %s route for sub %d -> %s",
                    "add" if add else "remove",
                    s.instance_id,
                    c.rmr_endpoint,
                )

    async def _notify(
        self, host: str, port: int, sid: str, instances: list[dict[str, Any]]
    ) -> None:
        url = f"http://{host}:{port}/ric/v1/subscriptions/response"
        body = {"SubscriptionId": sid, "SubscriptionInstances": instances}
        assert self._http is not None
        try:
            async with self._http.post(url, json=body, headers=self._notify_headers) as r:
                if r.status >= 300:
                    log.warning("client %s answered %d to the subscription result", url, r.status)
        except (aiohttp.ClientError, TimeoutError, OSError) as e:
            self.stats.errors["client_unreachable"] += 1
            log.warning("cannot tell client %s the subscription result: %s", url, e)

    # --- RMR --------------------------------------------------------------------------------
    async def _rmr_loop(self) -> None:
        while True:
            msg = await self.rmr.receive()
            try:
                await self._from_rmr(msg)
            except Exception:
                self.stats.errors["rmr_handler"] += 1
                log.exception("handling RMR %s failed", mt.name(msg.mtype))
            finally:
                self.rmr.release(msg)

    async def _from_rmr(self, msg: RmrMessage) -> None:
        if msg.mtype == mt.RAN_CONNECTED:
            event = json.loads(msg.payload)
            await self._node_event(str(event["meid"]), str(event["event"]))
            return
        if msg.mtype == mt.RIC_HEALTH_CHECK_REQ:
            return
        kinds = {
            mt.RIC_SUB_RESP: "sub",
            mt.RIC_SUB_FAILURE: "sub",
            mt.RIC_SUB_DEL_RESP: "del",
            mt.RIC_SUB_DEL_FAILURE: "del",
        }
        if msg.mtype in kinds:
            try:
                decoded = e2ap.decode_e2ap(msg.payload)
            except E2smError as e:
                self.stats.errors["bad_e2ap"] += 1
                log.warning("undecodable %s from %s: %s", mt.name(msg.mtype), msg.meid, e)
                return
            rid = getattr(decoded, "request_id", None)
            fut = self._waiters.get((msg.meid, rid.instance_id, kinds[msg.mtype])) if rid else None
            if fut is not None and not fut.done():
                fut.set_result((msg.mtype, msg.payload))
            else:
                self.stats.errors["unexpected_answer"] += 1
            return
        if msg.mtype == mt.RIC_SUB_DEL_REQUIRED:
            decoded = e2ap.decode_e2ap(msg.payload)
            assert isinstance(decoded, e2ap.RicSubscriptionDeleteRequired)
            for item in decoded.subscriptions:
                s = self.subs.get(item.request_id.instance_id)
                if s is not None and s.meid == msg.meid:
                    log.info("node %s requires deleting subscription %d", msg.meid, s.instance_id)
                    await self._delete_e2(s)
            return
        self.stats.errors["unexpected_rmr"] += 1

    async def _node_event(self, meid: str, event: str) -> None:
        mine = [s for s in self.subs.values() if s.meid == meid]
        if event == "disconnected":
            for s in mine:
                s.state = "waiting-node"
                await self._save(s)
            return
        if event in ("connected", "reset") and mine:
            log.info("node %s %s: re-establishing %d subscriptions", meid, event, len(mine))
            for s in mine:
                s.state = "requested"
                self._spawn(self._request_e2(s))
