"""e2term: E2 nodes on one side (E2AP over SCTP or TCP framing), RMR on the other.

- E2 Setup: the node and its RAN functions are recorded (our record + the R-NIB), the setup is
  answered, and submgr is told (RAN_CONNECTED, JSON ``{"meid", "event"}``) so it re-establishes
  the node's subscriptions. A setup storm (more than ``max_setups_per_s``) is answered with
  E2setupFailure + TimeToWait.
- Admission: a setup naming a node whose association is alive is refused (E2setupFailure,
  misc/unspecified, TimeToWait ``duplicate_time_to_wait``), so no other process can take over
  a node and its subscriptions. The old association counts as dead, and the newcomer is
  admitted, once its connection is closed or broken (peer EOF, TCP keepalive failure) or it
  has been silent longer than ``idle_takeover_s``: a restarted node gets back in on its retry.
- Half-open connections: setup must complete within ``setup_timeout_s``, a started PDU within
  ``read_timeout_s``, and at most ``max_half_open`` connections may be waiting for setup
  (beyond that new ones are closed at once); set-up nodes are never affected.
- Hot path: RIC indications are relayed as RIC_INDICATION with sub_id = the subscription's
  RIC instance ID (its E2EventInstanceId) and meid = the node, after reading only the E2AP
  envelope (``octoric.e2sm.envelope``), not the E2SM payload.
- Subscription (delete) requests from submgr go to the node named by the RMR meid; answers go
  back to submgr. RIC control requests from xApps go to the node, and the node's ACK/FAILURE is
  returned to the very xApp that asked (RMR return-to-sender on the held request).
- Reset, RIC service update and E2 node configuration update are answered; malformed PDUs get
  an Error Indication and a counter; the connection and every other node carry on.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections import Counter, deque
from dataclasses import dataclass, field

from redis.exceptions import RedisError

from octoric.contracts import message_types as mt
from octoric.contracts import ports
from octoric.contracts.latency_trace import LatencyTrace
from octoric.e2sm import e2ap
from octoric.e2sm import envelope as env
from octoric.e2sm.e2ap_ies import Cause, E2NodeComponentConfigAck, GlobalRicId, RanFunctionIdItem
from octoric.e2sm.errors import E2smError
from octoric.e2sm.transport import (
    E2Connection,
    E2ReadTimeout,
    E2Server,
    E2TransportError,
    Transport,
)
from octoric.ric import nodes
from octoric.ric.e2relay import ENV as RELAY_ENV
from octoric.ric.e2relay import E2Relay, RelayedConnection, RelayStats
from octoric.ric.rmr_endpoint import RmrEndpoint, RmrMessage
from octoric.ric.sdl import Sdl

log = logging.getLogger("ric.e2term")

# (kind, procedure) of PDUs from a node -> RMR type they go out as, to submgr by route
_TO_SUBMGR = {
    (env.SUCCESSFUL, e2ap.PROC_RIC_SUBSCRIPTION): mt.RIC_SUB_RESP,
    (env.UNSUCCESSFUL, e2ap.PROC_RIC_SUBSCRIPTION): mt.RIC_SUB_FAILURE,
    (env.SUCCESSFUL, e2ap.PROC_RIC_SUBSCRIPTION_DELETE): mt.RIC_SUB_DEL_RESP,
    (env.UNSUCCESSFUL, e2ap.PROC_RIC_SUBSCRIPTION_DELETE): mt.RIC_SUB_DEL_FAILURE,
    (env.INITIATING, e2ap.PROC_RIC_SUBSCRIPTION_DELETE_REQUIRED): mt.RIC_SUB_DEL_REQUIRED,
}
_CONTROL_ANSWERS = {
    (env.SUCCESSFUL, e2ap.PROC_RIC_CONTROL): mt.RIC_CONTROL_ACK,
    (env.UNSUCCESSFUL, e2ap.PROC_RIC_CONTROL): mt.RIC_CONTROL_FAILURE,
}
CONTROL_HOLD_S = 10.0  # how long a control request waits for the node's answer
HOLD_CONTROL_S = 5.0  # a control from a not-yet-registered sender waits this long for it
MAX_HELD_CONTROLS = 64  # controls waiting so at once; more from strangers are refused at once


@dataclass
class E2termConfig:
    host: str = "127.0.0.1"
    e2_port: int = ports.E2
    transport: Transport = "tcp"
    ric_plmn: bytes = bytes.fromhex("00f110")
    ric_id: int = 1
    max_setups_per_s: int = 50
    time_to_wait: str = "v5s"
    setup_timeout_s: float = 10.0  # a connection must complete E2 Setup within this
    read_timeout_s: float = 10.0  # a PDU whose length header arrived must complete within this
    max_half_open: int = 64  # connections still waiting for E2 Setup; more are closed at once
    # a connected node silent this long may be taken over by a newcomer with its ID
    idle_takeover_s: float = 15.0
    duplicate_time_to_wait: str = "v2s"  # a refused duplicate retries after this
    # who may send over RMR (issue #17): subscription requests only from submgr (its RMR
    # endpoint; None: anyone), RIC controls only from registered xApps whose descriptor
    # lists RIC_CONTROL_REQ in txMessages
    submgr_endpoint: str | None = None
    check_senders: bool = True


@dataclass
class NodeSession:
    meid: str
    conn: E2Connection
    record: nodes.NodeRecord
    closed: bool = False
    last_rx: float = field(default_factory=time.monotonic)  # last PDU from the node


@dataclass
class E2termStats:
    pdus_in: Counter[str] = field(default_factory=Counter)
    pdus_out: Counter[str] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)
    indications: int = 0
    half_open: int = 0  # connections now waiting for E2 Setup (a gauge)
    forward_latency_us: deque[float] = field(default_factory=lambda: deque(maxlen=100_000))


class E2term:
    def __init__(self, cfg: E2termConfig, sdl: Sdl, rmr: RmrEndpoint) -> None:
        self.cfg, self.sdl, self.rmr = cfg, sdl, rmr
        self.sessions: dict[str, NodeSession] = {}
        self.stats = E2termStats()
        self._pending_controls: dict[tuple[str, int, int], tuple[RmrMessage, float]] = {}
        self._controllers: set[str] = set()  # RMR endpoints allowed to send RIC controls
        self._controllers_at = 0.0
        self._held = 0  # controls waiting for their sender's registration
        self._setup_times: deque[float] = deque()
        self._server: E2Server | None = None
        self._trace = LatencyTrace("e2term_in")  # benchmarks only (OCTORIC_LATENCY_TRACE)
        self._tasks: list[asyncio.Task[None]] = []
        self._duplicate_logged: set[int] = set()  # connections whose refusal was logged
        # the native relay (ric/e2relay.py): set-up nodes' indications without the interpreter
        self._relay: E2Relay | None = None
        self._relayed: dict[int, tuple[NodeSession, RelayStats | None]] = {}  # cid -> last read

    # --- lifecycle --------------------------------------------------------------------------
    async def start(self) -> None:
        self._server = E2Server(
            self._serve,
            self.cfg.host,
            self.cfg.e2_port,
            self.cfg.transport,
            read_timeout_s=self.cfg.read_timeout_s,
        )
        await self._server.start()
        self.cfg.e2_port = self._server.port
        self._tasks.append(asyncio.create_task(self._rmr_loop()))
        self._tasks.append(asyncio.create_task(self._expire_controls()))
        ctx = getattr(self.rmr, "ctx", None)
        if ctx is not None:
            self._relay = E2Relay.create(ctx, mt.RIC_INDICATION)
            if self._relay is not None:
                self._tasks.append(asyncio.create_task(self._relay_stats_loop()))
                log.info("native indication relay on (%s=0 turns it off)", RELAY_ENV)
        log.info("E2 on %s:%d (%s)", self.cfg.host, self.cfg.e2_port, self.cfg.transport)

    async def stop(self) -> None:
        for t in self._tasks:
            t.cancel()
        if self._server is not None:
            await self._server.stop()
        for s in list(self.sessions.values()):
            s.conn.close()

    # --- E2 side ----------------------------------------------------------------------------
    async def _serve(self, conn: E2Connection) -> None:
        if self.stats.half_open >= self.cfg.max_half_open:
            self.stats.errors["half_open_limit"] += 1
            if self.stats.errors["half_open_limit"] % 1000 == 1:  # a flood logs rarely
                log.warning(
                    "%d E2 connections wait for setup (limit); closing %s",
                    self.stats.half_open,
                    conn.peer,
                )
            conn.close()
            return
        session: NodeSession | None = None
        orderly = False  # the node closed its side: a node that stops, not one that is lost
        try:
            session = await self._setup_phase(conn)
            if session is None:
                return
            if self._relay is not None:
                conn = session.conn = await self._relay.adopt(
                    conn, session.meid, self.cfg.read_timeout_s
                )
                if isinstance(conn, RelayedConnection):
                    self._relayed[conn.cid] = (session, None)
            while True:
                pdu = await conn.recv()
                session.last_rx = time.monotonic()
                await self._from_node(session, pdu)
        except E2ReadTimeout as e:
            self.stats.errors["read_timeout"] += 1
            log.warning("E2 read timeout from %s: %s", conn.peer, e)
        except E2TransportError as e:
            self.stats.errors["framing"] += 1
            log.warning("E2 framing error from %s: %s", conn.peer, e)
        except EOFError:
            orderly = True
        except OSError:  # reset, or keepalive gave up (ETIMEDOUT)
            pass
        finally:
            self._duplicate_logged.discard(id(conn))
            conn.close()
            if session is not None and self.sessions.get(session.meid) is session:
                await self._node_lost(session, orderly)

    async def _relay_stats_loop(self) -> None:
        """The native relay's counters and latencies into e2term's own, every 0.25 s."""
        while True:
            await asyncio.sleep(0.25)
            try:
                self.pull_relay_stats()
            except Exception:  # the counters must outlive one bad read
                self.stats.errors["relay_stats"] += 1
                log.exception("reading the native relay's counters failed")

    def pull_relay_stats(self) -> None:
        if self._relay is None:
            return
        for cid, (session, last) in list(self._relayed.items()):
            st = self._relay.stats(cid)
            prev = last or RelayStats(0, 0, 0, 0, 0, 0, 0.0, True, [])
            self.stats.indications += st.indications - prev.indications
            c = self.rmr.counters
            c.sent += st.sent - prev.sent
            c.send_failures += st.send_failures - prev.send_failures
            c.waited += st.waited - prev.waited
            c.gave_up += st.gave_up - prev.gave_up
            for v in st.latencies_us:  # append: the metrics' histogram counts each one
                self.stats.forward_latency_us.append(v)
            session.last_rx = max(session.last_rx, st.last_rx)
            if st.running:
                self._relayed[cid] = (session, st)
            else:
                del self._relayed[cid]

    async def _setup_phase(self, conn: E2Connection) -> NodeSession | None:
        """PDUs up to a successful E2 Setup, within ``setup_timeout_s``; None: timed out."""
        self.stats.half_open += 1
        deadline = asyncio.timeout(self.cfg.setup_timeout_s)
        try:
            async with deadline:
                session = None
                while session is None:
                    session = await self._expect_setup(conn, await conn.recv())
                return session
        except TimeoutError:
            if not deadline.expired():  # a socket timeout (keepalive), not ours
                raise
            self.stats.errors["setup_timeout"] += 1
            log.warning("%s did not complete E2 Setup in %g s", conn.peer, self.cfg.setup_timeout_s)
            return None
        finally:
            self.stats.half_open -= 1

    async def _expect_setup(self, conn: E2Connection, pdu: bytes) -> NodeSession | None:
        try:
            msg = e2ap.decode_e2ap(pdu)
        except E2smError as e:
            self.stats.errors["decode"] += 1
            log.warning("undecodable first PDU from %s: %s", conn.peer, e)
            await self._error_indication(conn, Cause("protocol", "transfer-syntax-error"))
            return None
        if not isinstance(msg, e2ap.E2SetupRequest):
            self.stats.errors["not_setup"] += 1
            log.warning("%s sent %s before E2 Setup", conn.peer, type(msg).__name__)
            await self._error_indication(
                conn, Cause("protocol", "message-not-compatible-with-receiver-state")
            )
            return None
        self.stats.pdus_in["E2setupRequest"] += 1
        now = time.monotonic()
        while self._setup_times and now - self._setup_times[0] > 1.0:
            self._setup_times.popleft()
        if len(self._setup_times) >= self.cfg.max_setups_per_s:
            self.stats.errors["setup_storm"] += 1
            fail = e2ap.E2SetupFailure(
                msg.transaction_id,
                Cause("misc", "control-processing-overload"),
                time_to_wait=self.cfg.time_to_wait,
            )
            await self._send(conn, e2ap.encode_e2ap(fail), "E2setupFailure")
            return None
        self._setup_times.append(now)
        try:
            record = nodes.NodeRecord.from_setup(
                msg.global_e2node_id, msg.ran_functions, conn.peer, conn.transport
            )
        except ValueError as e:
            self.stats.errors["bad_setup"] += 1
            fail = e2ap.E2SetupFailure(msg.transaction_id, Cause("protocol", "semantic-error"))
            await self._send(conn, e2ap.encode_e2ap(fail), "E2setupFailure")
            log.warning("bad E2 setup from %s: %s", conn.peer, e)
            return None
        old = self.sessions.get(record.meid)
        if old is not None:
            silent = now - old.last_rx
            if old.conn.alive() and silent <= self.cfg.idle_takeover_s:
                await self._refuse_duplicate(conn, msg.transaction_id, old)
                return None
            old.closed = True
            old.conn.close()
            del self.sessions[record.meid]  # its ending must not report the node lost
            log.info(
                "%s set up again from %s; its old association from %s is %s",
                record.meid,
                conn.peer,
                old.conn.peer,
                f"silent for {silent:.1f} s" if old.conn.alive() else "closed",
            )
        prev = await self.sdl.get_json(nodes.NS, record.meid)
        if isinstance(prev, dict):  # count setups across reconnects and e2term restarts
            record.setups = int(prev.get("setups", 0)) + 1
        session = NodeSession(record.meid, conn, record)
        self.sessions[record.meid] = session
        await nodes.save(self.sdl, record)
        resp = e2ap.E2SetupResponse(
            msg.transaction_id,
            GlobalRicId(self.cfg.ric_plmn, self.cfg.ric_id),
            accepted=[RanFunctionIdItem(f.ran_function_id, f.revision) for f in msg.ran_functions]
            or None,
            component_config_acks=[
                E2NodeComponentConfigAck(c.interface_type, c.component_id)
                for c in msg.component_configs
            ],
        )
        await self._send(conn, e2ap.encode_e2ap(resp), "E2setupResponse")
        log.info(
            "E2 node %s set up from %s (%d RAN functions)",
            record.meid,
            conn.peer,
            len(record.ran_functions),
        )
        self._notify_submgr(record.meid, "connected")
        return session

    async def _refuse_duplicate(
        self, conn: E2Connection, transaction_id: int, old: NodeSession
    ) -> None:
        """A second association for a connected node: refused; the node's own is untouched."""
        self.stats.errors["duplicate_node"] += 1
        if id(conn) not in self._duplicate_logged:  # once per connection, not per retry
            self._duplicate_logged.add(id(conn))
            log.warning(
                "E2 setup for %s from %s refused: the node is connected from %s",
                old.meid,
                conn.peer,
                old.conn.peer,
            )
        fail = e2ap.E2SetupFailure(
            transaction_id,
            Cause("misc", "unspecified"),
            time_to_wait=self.cfg.duplicate_time_to_wait,
        )
        await self._send(conn, e2ap.encode_e2ap(fail), "E2setupFailure")

    async def _from_node(self, s: NodeSession, pdu: bytes) -> None:
        t0 = time.perf_counter()
        arrived_ns = time.monotonic_ns() if self._trace.enabled else 0
        try:
            e = env.parse(pdu)
        except env.EnvelopeError as err:
            self.stats.errors["envelope"] += 1
            log.warning("malformed PDU from %s: %s", s.meid, err)
            await self._error_indication(s.conn, Cause("protocol", "transfer-syntax-error"))
            return
        key = (e.kind, e.procedure)
        if key == (env.INITIATING, e2ap.PROC_RIC_INDICATION):
            rid = e.request_id()
            if rid is None:
                self.stats.errors["indication_without_request_id"] += 1
                await self._error_indication(
                    s.conn, Cause("protocol", "abstract-syntax-error-falsely-constructed-message")
                )
                return
            self.stats.indications += 1
            await self.rmr.send_patiently(mt.RIC_INDICATION, pdu, sub_id=rid[1], meid=s.meid)
            self.stats.forward_latency_us.append((time.perf_counter() - t0) * 1e6)
            if arrived_ns:
                self._trace.mark(pdu, arrived_ns)
            return
        if key in _TO_SUBMGR:
            self.stats.pdus_in[mt.name(_TO_SUBMGR[key])] += 1
            self.rmr.send(_TO_SUBMGR[key], pdu, meid=s.meid)
            return
        if key in _CONTROL_ANSWERS:
            self._control_answer(s, e, _CONTROL_ANSWERS[key], pdu)
            return
        await self._node_procedure(s, e, pdu)

    async def _node_procedure(self, s: NodeSession, e: env.Envelope, pdu: bytes) -> None:
        """The less frequent procedures: decoded fully with the codec."""
        try:
            msg = e2ap.decode_e2ap(pdu)
        except E2smError as err:
            self.stats.errors["decode"] += 1
            log.warning("undecodable PDU from %s: %s", s.meid, err)
            await self._error_indication(s.conn, Cause("protocol", "abstract-syntax-error-reject"))
            return
        name = type(msg).__name__
        self.stats.pdus_in[name] += 1
        if isinstance(msg, e2ap.ResetRequest):
            await self._send(
                s.conn, e2ap.encode_e2ap(e2ap.ResetResponse(msg.transaction_id)), "ResetResponse"
            )
            log.info("%s reset (%s/%s)", s.meid, msg.cause.group, msg.cause.value)
            self._notify_submgr(s.meid, "reset")
        elif isinstance(msg, e2ap.RicServiceUpdate):
            by_id = {f.ran_function_id: f for f in s.record.ran_functions}
            for f in (msg.added or []) + (msg.modified or []):
                by_id[f.ran_function_id] = nodes.RanFunctionRecord(
                    f.ran_function_id, f.revision, f.oid, f.definition.hex()
                )
            for d in msg.deleted or []:
                by_id.pop(d.ran_function_id, None)
            s.record.ran_functions = sorted(by_id.values(), key=lambda f: f.ran_function_id)
            await nodes.save(self.sdl, s.record)
            accepted = [
                RanFunctionIdItem(f.ran_function_id, f.revision)
                for f in (msg.added or []) + (msg.modified or [])
            ]
            ack = e2ap.RicServiceUpdateAcknowledge(msg.transaction_id, accepted=accepted or None)
            await self._send(s.conn, e2ap.encode_e2ap(ack), "RICserviceUpdateAcknowledge")
        elif isinstance(msg, e2ap.E2NodeConfigurationUpdate):
            cfg_ack = e2ap.E2NodeConfigurationUpdateAcknowledge(msg.transaction_id)
            await self._send(
                s.conn, e2ap.encode_e2ap(cfg_ack), "E2nodeConfigurationUpdateAcknowledge"
            )
        elif isinstance(msg, e2ap.ErrorIndication):
            cause = f"{msg.cause.group}/{msg.cause.value}" if msg.cause else "no cause"
            log.warning("Error Indication from %s: %s", s.meid, cause)
            self.rmr.send(mt.RIC_ERROR_INDICATION, pdu, meid=s.meid)
        else:
            self.stats.errors["unexpected_procedure"] += 1
            log.warning("%s sent unexpected %s", s.meid, name)
            await self._error_indication(
                s.conn, Cause("protocol", "message-not-compatible-with-receiver-state")
            )

    def _control_answer(self, s: NodeSession, e: env.Envelope, mtype: int, pdu: bytes) -> None:
        self.stats.pdus_in[mt.name(mtype)] += 1
        rid = e.request_id()
        held = self._pending_controls.pop((s.meid, *rid), None) if rid else None
        if held is not None:
            self.rmr.reply(held[0], mtype, pdu)
        else:  # nobody waits (timed out): deliver by route table
            self.rmr.send(mtype, pdu, meid=s.meid)

    async def _node_lost(self, s: NodeSession, orderly: bool = False) -> None:
        del self.sessions[s.meid]
        s.record.connected = False
        if orderly:  # e.g. the simulator at the end of a run: not worth a warning
            log.info("E2 node %s disconnected", s.meid)
        else:
            log.warning("E2 node %s lost", s.meid)
        self._notify_submgr(s.meid, "disconnected")
        try:
            await nodes.save(self.sdl, s.record)
        except (OSError, RedisError) as e:  # Redis gone (shutdown): the record waits
            log.warning("could not record %s as lost: %s", s.meid, e)

    def _notify_submgr(self, meid: str, event: str) -> None:
        body = json.dumps({"meid": meid, "event": event}).encode()
        self.rmr.send(mt.RAN_CONNECTED, body, meid=meid)

    async def _send(self, conn: E2Connection, pdu: bytes, name: str) -> None:
        try:
            await conn.send(pdu)
            self.stats.pdus_out[name] += 1
        except (ConnectionError, OSError) as e:
            self.stats.errors["send"] += 1
            log.warning("send %s to %s failed: %s", name, conn.peer, e)

    async def _error_indication(self, conn: E2Connection, cause: Cause) -> None:
        await self._send(
            conn, e2ap.encode_e2ap(e2ap.ErrorIndication(cause=cause)), "ErrorIndication"
        )

    # --- RMR side ---------------------------------------------------------------------------
    async def _rmr_loop(self) -> None:
        while True:
            msg = await self.rmr.receive()
            try:
                await self._from_rmr(msg)
            except Exception:  # one bad message must not stop the relay
                self.stats.errors["rmr_handler"] += 1
                log.exception("handling RMR %s failed", mt.name(msg.mtype))
                self.rmr.release(msg)

    async def _controller_endpoints(self, fresh: bool = False) -> set[str]:
        """RMR endpoints of registered xApps that declare RIC_CONTROL_REQ (appmgr's records in
        the SDL), re-read at most every second, or now when ``fresh`` (a newcomer)."""
        now = time.monotonic()
        if fresh and now - self._controllers_at < 0.2:
            return self._controllers  # just read: do not let a flood of strangers hammer Redis
        if fresh or now - self._controllers_at > 1.0:
            from octoric.ric import appmgr

            try:
                recs = await appmgr.Appmgr(self.sdl).xapps()
                self._controllers = {
                    r.rmr_endpoint for r in recs if mt.RIC_CONTROL_REQ in r.routes().tx
                }
            except Exception as e:  # SDL away: keep the last known set
                log.warning("cannot read the registered xApps: %s", e)
            self._controllers_at = now
        return self._controllers

    def _refuse(self, msg: RmrMessage, why: str) -> None:
        self.stats.errors[why] += 1
        if self.stats.errors[why] in (1, 10, 100) or self.stats.errors[why] % 1000 == 0:
            log.warning("%s from %s refused (%s; %d so far)", mt.name(msg.mtype), msg.src,
                        why, self.stats.errors[why])  # fmt: skip
        self.rmr.release(msg)

    async def _hold_control(self, msg: RmrMessage) -> None:
        """A control from an endpoint not (yet) registered: an xApp often sends before its
        registration reaches appmgr. Held up to HOLD_CONTROL_S while the registrations are
        re-read; forwarded if its sender turns out to be allowed, else refused."""
        deadline = time.monotonic() + HOLD_CONTROL_S
        try:
            while time.monotonic() < deadline:
                await asyncio.sleep(0.25)
                if msg.src in await self._controller_endpoints(fresh=True):
                    self.stats.errors["control_held"] += 1
                    await self._to_node(msg)
                    return
            self._refuse(msg, "control_not_allowed")
        finally:
            self._held -= 1

    async def _from_rmr(self, msg: RmrMessage) -> None:
        if msg.mtype in (mt.RIC_SUB_REQ, mt.RIC_SUB_DEL_REQ, mt.RIC_CONTROL_REQ):
            if self.cfg.check_senders:
                if msg.mtype != mt.RIC_CONTROL_REQ:
                    if self.cfg.submgr_endpoint not in (None, msg.src):
                        return self._refuse(msg, "subscription_not_from_submgr")
                elif msg.src not in await self._controller_endpoints():
                    if self._held >= MAX_HELD_CONTROLS:  # a flood: no waiting room
                        return self._refuse(msg, "control_not_allowed")
                    self._held += 1
                    self._tasks.append(asyncio.create_task(self._hold_control(msg)))
                    self._tasks = [t for t in self._tasks if not t.done()]
                    return
            await self._to_node(msg)
            return
        if msg.mtype == mt.RIC_HEALTH_CHECK_REQ:
            self.rmr.reply(msg, mt.RIC_HEALTH_CHECK_RESP, b"OK\n")
            return
        self.stats.errors["unexpected_rmr"] += 1
        log.warning("unexpected RMR %s from %s", mt.name(msg.mtype), msg.src)
        self.rmr.release(msg)

    async def _to_node(self, msg: RmrMessage) -> None:
        """A subscription request or control, over E2 to the node its meid names."""
        s = self.sessions.get(msg.meid)
        if s is None:
            self.stats.errors["unknown_meid"] += 1
            log.warning("%s for unknown node %r dropped", mt.name(msg.mtype), msg.meid)
            self.rmr.release(msg)
            return
        try:
            e = env.parse(msg.payload)
        except env.EnvelopeError as err:
            self.stats.errors["bad_rmr_payload"] += 1
            log.warning("%s from %s is not E2AP: %s", mt.name(msg.mtype), msg.src, err)
            self.rmr.release(msg)
            return
        await self._send(s.conn, msg.payload, mt.name(msg.mtype))
        rid = e.request_id()
        if msg.mtype == mt.RIC_CONTROL_REQ and rid is not None:
            old = self._pending_controls.pop((s.meid, *rid), None)
            if old:
                self.rmr.release(old[0])
            self._pending_controls[(s.meid, *rid)] = (msg, time.monotonic())
            return
        self.rmr.release(msg)

    async def _expire_controls(self) -> None:
        while True:
            await asyncio.sleep(1.0)
            now = time.monotonic()
            for k, (m, t) in list(self._pending_controls.items()):
                if now - t > CONTROL_HOLD_S:
                    del self._pending_controls[k]
                    self.rmr.release(m)
