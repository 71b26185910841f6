"""A scripted E2 node: E2 Setup with KPM and RC RAN functions, subscriptions answered and fed
with indications at a set period, controls acknowledged. It exercises the RIC in tests and
benchmarks (and stands in for a gNB until the simulator's E2 agent is plugged in).

Each indication carries a RICindicationSN that counts up per subscription, so a receiver can
check that none was lost. The indication payload comes from ``indications(sub, sn)``; the
default is a small KPM format-1 report.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from octoric.e2sm import e2ap, kpm
from octoric.e2sm.common import ntp_timestamp
from octoric.e2sm.e2ap_ies import (
    E2NodeComponentConfig,
    E2NodeComponentId,
    GlobalE2NodeId,
    RanFunction,
    RicRequestId,
)
from octoric.e2sm.errors import E2smError
from octoric.e2sm.transport import E2Connection, Transport, connect

log = logging.getLogger("ric.scripted_node")

IndicationSource = Callable[["NodeSubscription", int], tuple[bytes, bytes]]


def default_ran_functions() -> list[RanFunction]:
    kpm_def = kpm.encode_kpm(kpm.octoric_ran_function_definition())
    return [RanFunction(kpm.RAN_FUNCTION_ID, kpm_def, 1, kpm.OID)]


def default_component_configs() -> list[E2NodeComponentConfig]:
    """E2 Setup needs at least one component: the NG interface to the AMF, as srsRAN sends.
    The request/response parts stand for the NG Setup messages (opaque to the RIC)."""
    return [E2NodeComponentConfig("ng", E2NodeComponentId("ng", name="amf1"), b"\x00", b"\x00")]


def default_indication(sub: NodeSubscription, sn: int) -> tuple[bytes, bytes]:
    header = kpm.encode_kpm(kpm.KpmIndicationHeader(ntp_timestamp(time.time())))
    fmt = kpm.IndicationFormat1((kpm.MeasRecord((sn, 1)),), granularity_ms=1)
    return header, kpm.encode_kpm(kpm.KpmIndicationMessage(fmt))


@dataclass
class NodeSubscription:
    request_id: RicRequestId
    ran_function_id: int
    action_ids: list[int]
    next_sn: int = 0
    task: asyncio.Task[None] | None = None


@dataclass
class ScriptedNodeStats:
    setups: int = 0
    subscriptions: int = 0
    deletions: int = 0
    indications: int = 0
    controls: list[e2ap.RicControlRequest] = field(default_factory=list)
    errors: int = 0


class ScriptedNode:
    def __init__(
        self,
        host: str,
        port: int,
        transport: Transport = "tcp",
        gnb_id: int = 411,
        plmn: bytes = bytes.fromhex("00f110"),
        period_s: float = 0.01,
        ran_functions: list[RanFunction] | None = None,
        indications: IndicationSource = default_indication,
    ) -> None:
        self.host, self.port, self.transport = host, port, transport
        self.node_id = GlobalE2NodeId(plmn, gnb_id, 22)
        self.period_s = period_s
        self.ran_functions = ran_functions or default_ran_functions()
        self.indications = indications
        self.subs: dict[tuple[int, int], NodeSubscription] = {}
        self.stats = ScriptedNodeStats()
        self.conn: E2Connection | None = None
        self.setup_done = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._send_lock = asyncio.Lock()

    @property
    def meid(self) -> str:
        from octoric.e2sm.node_id import meid_of

        return meid_of(self.node_id)

    def start(self) -> None:
        self._task = asyncio.create_task(self._run())

    async def stop(self) -> None:
        if self._task:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self._drop()

    def drop_connection(self) -> None:
        """Simulate a link loss: the node forgets its subscriptions and reconnects."""
        self._drop()

    def _drop(self) -> None:
        for s in self.subs.values():
            if s.task:
                s.task.cancel()
        self.subs.clear()
        self.setup_done.clear()
        if self.conn:
            self.conn.close()

    async def _run(self) -> None:
        backoff = 0.1
        while True:
            try:
                self.conn = await connect(self.host, self.port, self.transport)
                backoff = 0.1
                await self._session(self.conn)
            except (OSError, EOFError, ConnectionError) as e:
                log.debug("E2 connection ended: %s", e)
            self._drop()
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, 2.0)

    def _setup_request(self) -> e2ap.E2SetupRequest:
        return e2ap.E2SetupRequest(1, self.node_id, self.ran_functions, default_component_configs())

    async def _send(self, msg: e2ap.E2apMessage) -> None:
        assert self.conn is not None
        async with self._send_lock:
            await self.conn.send(e2ap.encode_e2ap(msg))

    async def _session(self, conn: E2Connection) -> None:
        await self._send(self._setup_request())
        while True:
            pdu = await conn.recv()
            try:
                msg = e2ap.decode_e2ap(pdu)
            except E2smError as e:
                self.stats.errors += 1
                log.warning("node got undecodable PDU: %s", e)
                continue
            await self._handle(msg)

    async def _handle(self, msg: e2ap.E2apMessage) -> None:
        if isinstance(msg, e2ap.E2SetupResponse):
            self.stats.setups += 1
            self.setup_done.set()
        elif isinstance(msg, e2ap.E2SetupFailure):
            wait = {"v1s": 1, "v2s": 2, "v5s": 5, "v10s": 10}.get(msg.time_to_wait or "", 1)
            await asyncio.sleep(wait)
            await self._send(self._setup_request())
        elif isinstance(msg, e2ap.RicSubscriptionRequest):
            key = (msg.request_id.requestor_id, msg.request_id.instance_id)
            actions = [a.action_id for a in msg.details.actions]
            sub = NodeSubscription(msg.request_id, msg.ran_function_id, actions)
            old = self.subs.pop(key, None)
            if old and old.task:
                old.task.cancel()
            self.subs[key] = sub
            self.stats.subscriptions += 1
            await self._send(
                e2ap.RicSubscriptionResponse(msg.request_id, msg.ran_function_id, admitted=actions)
            )
            sub.task = asyncio.create_task(self._report(sub))
        elif isinstance(msg, e2ap.RicSubscriptionDeleteRequest):
            key = (msg.request_id.requestor_id, msg.request_id.instance_id)
            gone = self.subs.pop(key, None)
            if gone and gone.task:
                gone.task.cancel()
            self.stats.deletions += 1
            await self._send(
                e2ap.RicSubscriptionDeleteResponse(msg.request_id, msg.ran_function_id)
            )
        elif isinstance(msg, e2ap.RicControlRequest):
            self.stats.controls.append(msg)
            await self._send(e2ap.RicControlAcknowledge(msg.request_id, msg.ran_function_id))
        elif isinstance(msg, e2ap.ErrorIndication):
            self.stats.errors += 1

    async def _report(self, sub: NodeSubscription) -> None:
        t_next = time.monotonic()
        while True:
            t_next += self.period_s
            header, message = self.indications(sub, sub.next_sn)
            ind = e2ap.RicIndication(
                sub.request_id,
                sub.ran_function_id,
                sub.action_ids[0],
                header,
                message,
                sn=sub.next_sn % 65536,
            )
            await self._send(ind)
            sub.next_sn += 1
            self.stats.indications += 1
            await asyncio.sleep(max(0.0, t_next - time.monotonic()))
