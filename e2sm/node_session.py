"""The E2 node side of E2AP: one session shared by the simulator's gNB agent
(``octoric.sim.e2agent``) and the scripted node below (tests, ``ric/bench.py``).

``E2NodeSession`` connects over the E2 transport, sends E2 Setup (again after an E2 Setup
Failure's TimeToWait), runs the receive loop, keeps the subscriptions, answers subscription
deletes and resets, numbers indications (RICindicationSN per subscription) and reconnects with
exponential backoff, forgetting its subscriptions (the RIC's submgr re-subscribes, as with a
real gNB). What a node admits and reports, and what a control does, are its subclass's:
``on_subscription_request`` and ``on_control``.

``ScriptedNode``: E2 Setup with a KPM RAN function, every subscription admitted and fed with
indications at a set period (payload from ``indications(sub, sn)``; the default is a small KPM
format-1 report), controls acknowledged and kept. Each indication's RICindicationSN counts up
per subscription, so a receiver can check that none was lost.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from octoric.e2sm import e2ap, kpm
from octoric.e2sm.common import ntp_timestamp
from octoric.e2sm.e2ap_ies import (
    Cause,
    E2NodeComponentConfig,
    E2NodeComponentId,
    GlobalE2NodeId,
    RanFunction,
    RicRequestId,
)
from octoric.e2sm.envelope import encode_ric_indication
from octoric.e2sm.errors import E2smError
from octoric.e2sm.node_id import meid_of
from octoric.e2sm.transport import E2Connection, Transport, connect

log = logging.getLogger("e2sm.node_session")

# E2AP TimeToWait -> seconds before the node retries E2 Setup
TIME_TO_WAIT_S = {"v1s": 1, "v2s": 2, "v5s": 5, "v10s": 10, "v20s": 20, "v60s": 60}
CAUSE_UNKNOWN_ID = Cause("ricRequest", "request-id-unknown")


def default_component_configs() -> list[E2NodeComponentConfig]:
    """E2 Setup needs at least one component: the NG interface to the AMF, as srsRAN sends.
    The request/response parts stand for the NG Setup messages (opaque to the RIC)."""
    return [E2NodeComponentConfig("ng", E2NodeComponentId("ng", name="amf1"), b"\x00", b"\x00")]


@dataclass
class E2Subscription:
    """One subscription a node holds: its IDs, its indication sequence and, when the node
    reports on a timer, the task doing it."""

    request_id: RicRequestId
    ran_function_id: int
    sn: int = 0  # the next RICindicationSN (sent modulo 65536)
    task: asyncio.Task[None] | None = None

    @property
    def key(self) -> tuple[int, int]:
        return self.request_id.requestor_id, self.request_id.instance_id


@dataclass
class SessionStats:
    connects: int = 0
    setups: int = 0
    setup_failures: int = 0
    subscriptions: int = 0
    deletions: int = 0
    indications: int = 0
    bad_pdus: int = 0  # undecodable or invalid PDUs and error indications received


SubT = TypeVar("SubT", bound=E2Subscription)
StatsT = TypeVar("StatsT", bound=SessionStats)


class E2NodeSession(Generic[SubT, StatsT]):
    """An E2 node's connection to the RIC (see the module docstring). Subclasses answer
    subscription and control requests; sending goes through :meth:`send_pdu` (directly, or
    a subclass's queue)."""

    BACKOFF_MIN_S = 0.1
    BACKOFF_MAX_S = 2.0

    def __init__(
        self,
        host: str,
        port: int,
        transport: Transport,
        node_id: GlobalE2NodeId,
        ran_functions: list[RanFunction],
        stats: StatsT,
        name: str = "",
    ) -> None:
        self.host, self.port, self.transport = host, port, transport
        self.node_id = node_id
        self.ran_functions = ran_functions
        self.component_configs = default_component_configs()
        self.stats = stats
        self.name = name or self.meid
        self.subs: dict[tuple[int, int], SubT] = {}
        self.conn: E2Connection | None = None
        self.connected = False
        self.setup_done = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._send_lock = asyncio.Lock()
        self._transaction = 0

    @property
    def meid(self) -> str:
        return meid_of(self.node_id)

    # --- lifecycle ----------------------------------------------------------------------

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"e2node-{self.name}")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self._session_ended()
        self._drop()

    def drop_connection(self) -> None:
        """Simulate a link loss: the node forgets its subscriptions and reconnects."""
        self._drop()

    def _drop(self) -> None:
        self._forget_subscriptions()
        self.connected = False
        self.setup_done.clear()
        self._on_drop()
        if self.conn is not None:
            with contextlib.suppress(Exception):
                self.conn.close()
            self.conn = None

    def _forget_subscriptions(self) -> None:
        for s in self.subs.values():
            if s.task is not None:
                s.task.cancel()
        self.subs.clear()

    async def _run(self) -> None:
        backoff = self.BACKOFF_MIN_S
        while True:
            try:
                self.conn = await connect(self.host, self.port, self.transport)
                self.stats.connects += 1
                self.connected = True
                backoff = self.BACKOFF_MIN_S
                log.info("%s connected to %s:%d", self.name, self.host, self.port)
                await self._session(self.conn)
            except (OSError, EOFError, ConnectionError) as e:
                log.info("%s: E2 connection ended: %s", self.name, e)
            except Exception as e:  # transport errors of any kind: reconnect, never die
                log.warning("%s: E2 session failed: %s", self.name, e)
            await self._session_ended()
            self._drop()
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, self.BACKOFF_MAX_S)

    async def _session(self, conn: E2Connection) -> None:
        await self._session_started()
        await self.send(self._setup_request())
        while True:
            pdu = await conn.recv()
            try:
                msg = e2ap.decode_e2ap(pdu)
            except E2smError as e:
                self.stats.bad_pdus += 1
                log.warning("%s got an undecodable PDU: %s", self.name, e)
                continue
            try:
                await self._handle(msg)
            except E2smError as e:
                self.stats.bad_pdus += 1
                log.warning("%s: bad %s: %s", self.name, type(msg).__name__, e)

    # hooks around a connection (the agent runs a sender task per connection)
    async def _session_started(self) -> None:
        return None

    async def _session_ended(self) -> None:
        return None

    def _on_drop(self) -> None:
        return None

    # --- sending ------------------------------------------------------------------------

    async def send_pdu(self, pdu: bytes) -> None:
        conn = self.conn
        if conn is None:
            raise ConnectionError("E2 connection closed")
        async with self._send_lock:  # report tasks and answers share the connection
            await conn.send(pdu)

    async def send(self, msg: e2ap.E2apMessage) -> None:
        await self.send_pdu(e2ap.encode_e2ap(msg))

    def indication_pdu(
        self, sub: E2Subscription, action_id: int, header: bytes, message: bytes
    ) -> bytes:
        """The next RICindication of ``sub``, numbered by its own sequence."""
        pdu = encode_ric_indication(
            sub.request_id.requestor_id, sub.request_id.instance_id,
            sub.ran_function_id, action_id, header, message, sub.sn % 65536,
        )  # fmt: skip
        sub.sn += 1
        self.stats.indications += 1
        return pdu

    # --- procedures ---------------------------------------------------------------------

    def _setup_request(self) -> e2ap.E2SetupRequest:
        self._transaction = (self._transaction + 1) % 256
        return e2ap.E2SetupRequest(
            self._transaction, self.node_id, self.ran_functions, self.component_configs
        )

    async def _handle(self, msg: e2ap.E2apMessage) -> None:
        if isinstance(msg, e2ap.E2SetupResponse):
            self.stats.setups += 1
            if msg.rejected:
                log.warning("%s: RIC rejected RAN functions %s", self.name, msg.rejected)
            self.setup_done.set()
        elif isinstance(msg, e2ap.E2SetupFailure):
            self.stats.setup_failures += 1
            await asyncio.sleep(TIME_TO_WAIT_S.get(msg.time_to_wait or "", 1))
            await self.send(self._setup_request())
        elif isinstance(msg, e2ap.RicSubscriptionRequest):
            await self.on_subscription_request(msg)
        elif isinstance(msg, e2ap.RicSubscriptionDeleteRequest):
            await self._delete(msg)
        elif isinstance(msg, e2ap.RicControlRequest):
            await self.on_control(msg)
        elif isinstance(msg, e2ap.ResetRequest):
            self._forget_subscriptions()
            await self.send(e2ap.ResetResponse(msg.transaction_id))
        elif isinstance(msg, e2ap.ErrorIndication):
            self.stats.bad_pdus += 1
            log.warning("%s got an error indication: %s", self.name, msg.cause)

    def _add_subscription(self, sub: SubT) -> None:
        """Keep ``sub`` (replacing one with the same request ID) and count it."""
        old = self.subs.pop(sub.key, None)
        if old is not None and old.task is not None:
            old.task.cancel()
        self.subs[sub.key] = sub
        self.stats.subscriptions += 1

    async def _delete(self, msg: e2ap.RicSubscriptionDeleteRequest) -> None:
        key = (msg.request_id.requestor_id, msg.request_id.instance_id)
        gone = self.subs.pop(key, None)
        if gone is None:
            await self.send(
                e2ap.RicSubscriptionDeleteFailure(
                    msg.request_id, msg.ran_function_id, CAUSE_UNKNOWN_ID
                )
            )
            return
        if gone.task is not None:
            gone.task.cancel()
        self.stats.deletions += 1
        await self.send(e2ap.RicSubscriptionDeleteResponse(msg.request_id, msg.ran_function_id))

    async def on_subscription_request(self, msg: e2ap.RicSubscriptionRequest) -> None:
        raise NotImplementedError

    async def on_control(self, msg: e2ap.RicControlRequest) -> None:
        raise NotImplementedError


# --- the scripted node ---------------------------------------------------------------------


@dataclass
class NodeSubscription(E2Subscription):
    action_ids: list[int] = field(default_factory=list)


@dataclass
class ScriptedNodeStats(SessionStats):
    controls: list[e2ap.RicControlRequest] = field(default_factory=list)


IndicationSource = Callable[[NodeSubscription, int], tuple[bytes, bytes]]


def default_ran_functions() -> list[RanFunction]:
    kpm_def = kpm.encode_kpm(kpm.octoric_ran_function_definition())
    return [RanFunction(kpm.RAN_FUNCTION_ID, kpm_def, 1, kpm.OID)]


def default_indication(sub: NodeSubscription, sn: int) -> tuple[bytes, bytes]:
    header = kpm.encode_kpm(kpm.KpmIndicationHeader(ntp_timestamp(time.time())))
    fmt = kpm.IndicationFormat1((kpm.MeasRecord((sn, 1)),), granularity_ms=1)
    return header, kpm.encode_kpm(kpm.KpmIndicationMessage(fmt))


class ScriptedNode(E2NodeSession[NodeSubscription, ScriptedNodeStats]):
    def __init__(
        self,
        host: str,
        port: int,
        transport: Transport = "tcp",
        gnb_id: int = 411,
        plmn: bytes = bytes.fromhex("00f110"),
        period_s: float | None = 0.01,  # None: no periodic reports (the caller sends them)
        ran_functions: list[RanFunction] | None = None,
        indications: IndicationSource = default_indication,
        du_id: int | None = None,  # a split gNB's DU (gNB-DU-ID), as srsRAN's DU agent
    ) -> None:
        super().__init__(
            host,
            port,
            transport,
            GlobalE2NodeId(plmn, gnb_id, 22, du_id=du_id),
            ran_functions or default_ran_functions(),
            ScriptedNodeStats(),
        )
        self.period_s = period_s
        self.indications = indications

    async def on_subscription_request(self, msg: e2ap.RicSubscriptionRequest) -> None:
        actions = [a.action_id for a in msg.details.actions]
        sub = NodeSubscription(msg.request_id, msg.ran_function_id, action_ids=actions)
        self._add_subscription(sub)
        await self.send(
            e2ap.RicSubscriptionResponse(msg.request_id, msg.ran_function_id, admitted=actions)
        )
        if self.period_s is not None:
            sub.task = asyncio.create_task(self._report(sub, self.period_s))

    async def on_control(self, msg: e2ap.RicControlRequest) -> None:
        self.stats.controls.append(msg)
        await self.send(e2ap.RicControlAcknowledge(msg.request_id, msg.ran_function_id))

    async def _report(self, sub: NodeSubscription, period_s: float) -> None:
        t_next = time.monotonic()
        while True:
            t_next += period_s
            header, message = self.indications(sub, sub.sn)
            await self.send_pdu(self.indication_pdu(sub, sub.action_ids[0], header, message))
            await asyncio.sleep(max(0.0, t_next - time.monotonic()))
