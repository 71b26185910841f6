"""The real-UE packet path: real applications' IPv4 packets cross the simulated cell.

Downlink: a packet an application in the server namespace sends to UE ``i`` (10.77.1.i+1)
is read from the server TUN, waits the wired path's one-way delay, and enters that UE's RLC
queue in the engine (``Engine.inject_packet``) with its real size; the Octopus dropper reads
the real header (the first 16 bytes of a UDP payload, docs/octopus-header.md). When the
cell's scheduler has granted the packet's last byte, the engine hands it to this path at the
end of that slot (after HARQ retransmissions, if any) and it is written into the UE's TUN.
The KPM the E2 agent reports for the UE is computed from that same queue.

Uplink: what the UE sends to the server (10.77.0.1) crosses the air and wired delays; while
the UE is detached (handover, radio link failure) it is held and leaves when it is attached
again (ToN'22's delayed ACKs), as the simulator's own flows do.

Everything but the writes into the UEs' TUNs runs in the live driver's asyncio loop
(``LiveSim``), which runs the engine a little ahead of the wall clock (its lookahead, as a
gNB's MAC decides slots ahead of their air time); the writes are made by the release thread
(``release.py``) at each slot's end. ``stats`` counts every packet by fate, so no loss is
silent, and the scheduling error (write time minus the end of the slot that completed the
packet, on the wall clock) is measured per packet.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import struct
from array import array
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from octoric.contracts.octopus_header import MAGIC
from octoric.sim.engine import Engine, MobilityEvent
from octoric.sim.packets import Packet
from octoric.sim.realue.netns import RIC_ADDR, SERVER_ADDR, Namespaces, ue_addr, ue_index
from octoric.sim.realue.release import Release, best_release

_MAGIC = MAGIC.to_bytes(2, "big")
_READ_BATCH = 256  # packets per wake-up and descriptor, so one busy TUN cannot starve the loop
_MAX_ERRORS = 4_000_000  # scheduling errors kept (about 400 s at 10 k packets/s)
_MAX_HELD = 4096  # uplink packets a detached UE may hold; more are dropped (counted)


class RealPacket(Packet):
    """A simulator packet that carries the real IPv4 packet it stands for."""

    __slots__ = ("data",)

    def __init__(self, flow: int, seq: int, data: bytes, now_us: int) -> None:
        super().__init__(flow, seq, len(data), now_us)
        self.data = data


def udp_datagram(src: str, sport: int, dst: str, dport: int, payload: bytes) -> bytes:
    """An IPv4/UDP packet (header checksum set; UDP checksum 0, which IPv4 allows)."""
    total = 28 + len(payload)
    hdr = struct.pack("!BBHHHBBH4s4s", 0x45, 0, total, 0, 0x4000, 64, 17, 0,
                      socket.inet_aton(src), socket.inet_aton(dst))  # fmt: skip
    s = sum(struct.unpack("!10H", hdr))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    hdr = hdr[:10] + struct.pack("!H", ~s & 0xFFFF) + hdr[12:]
    return hdr + struct.pack("!HHHH", sport, dport, 8 + len(payload), 0) + payload


def octopus_payload(data: bytes) -> bytes | None:
    """The UDP payload of an IPv4 packet when it starts with the Octopus magic, else None."""
    if len(data) < 28 or data[0] >> 4 != 4 or data[9] != 17:
        return None
    if int.from_bytes(data[6:8], "big") & 0x1FFF:  # a later fragment: no UDP header
        return None
    off = (data[0] & 0x0F) * 4 + 8
    # a short one (magic, but fewer than 16 bytes) goes on: the parser counts it malformed
    return data[off:] if data[off : off + 2] == _MAGIC else None


@dataclass
class PathStats:
    dl_packets: int = 0  # read from the server TUN for a real UE
    dl_bytes: int = 0
    ignored: int = 0  # not IPv4, or not to a real UE's address
    marked: int = 0  # carried an Octopus header (magic found; malformed ones count below)
    delivered_packets: int = 0  # completed by the scheduler, handed to the release thread
    delivered_bytes: int = 0
    release_refused: int = 0  # the release thread's queue was full (lost, counted)
    ul_packets: int = 0  # read from a UE's TUN and written into the server's
    ul_bytes: int = 0
    ul_held: int = 0  # uplink packets that waited for the end of a detachment
    ul_held_dropped: int = 0  # ... beyond _MAX_HELD per UE (a long outage): dropped
    ul_ignored: int = 0
    ul_write_errors: int = 0  # a write into the server's TUN failed
    last_write_error: str = ""
    feedback_relayed: int = 0  # OCC xApp datagrams written into the server namespace


@dataclass
class RealUe:
    engine_ue: int  # index in the engine
    flow: int  # the engine flow of its real packets
    fd: int  # its TUN (in its namespace)
    netns: str
    address: str
    dl_delay_s: float  # the wired one-way delay before the gNB
    ul_delay_s: float  # the air uplink plus the wired one-way delay
    hold_uplink: bool  # held while detached (the flow's uplink_held_in_handover)
    held: list[bytes] = field(default_factory=list)
    delivered_bytes: int = 0
    # each delivered UDP packet's time in the simulated cell (µs, its injection into the UE's
    # queue to the end of the slot that completed it): the cell's own view of a real flow,
    # what the simulator's model flows are measured by; the first _MAX_ERRORS are kept
    cell_us: array[int] = field(default_factory=lambda: array("q"))  # 8 bytes each, not ~36


class RealUePath:
    """The TUNs, their readers and the engine's sink for delivered real packets."""

    def __init__(self, engine: Engine, engine_ues: list[int], ns: Namespaces,
                 wall_ns_of_us: Callable[[int], int],
                 release: Release | None = None) -> None:  # fmt: skip
        self.engine = engine
        self.ns = ns
        self.wall_ns_of_us = wall_ns_of_us  # simulated µs -> time.monotonic_ns()
        self.release = release if release is not None else best_release()
        self.stats = PathStats()
        self.ues: list[RealUe] = []
        for i, eu in enumerate(engine_ues):
            flow = engine.attach_external_flow(eu, self)
            spec = engine.flows[flow].spec
            one_way = spec.path.rtt_ms / 2000.0
            self.ues.append(RealUe(eu, flow, ns.ue_fds[i], ns.ue_ns[i], ue_addr(i), one_way,
                                   one_way + spec.uplink_ms / 1000.0,
                                   spec.uplink_held_in_handover))  # fmt: skip
        self._by_engine_ue = {u.engine_ue: u for u in self.ues}
        self._by_flow = {u.flow: u for u in self.ues}
        self._seq = 0
        self._errors: list[np.ndarray] = []  # ns, late > 0, drained from the release
        self._n_errors = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        engine.add_mobility_sink(self._on_mobility)

    # --- setup -------------------------------------------------------------------------
    def start(self) -> None:
        loop = self._loop = asyncio.get_running_loop()
        loop.add_reader(self.ns.server_fd, self._read_downlink)
        for u in self.ues:
            loop.add_reader(u.fd, self._read_uplink, u)
        loop.call_later(1.0, self._drain_every_second)

    def _drain_every_second(self) -> None:
        if self._loop is not None:
            self._drain_errors()  # the release thread keeps a bounded number until drained
            self._loop.call_later(1.0, self._drain_every_second)

    def stop(self) -> None:
        """Stop reading (packets still queued in the engine stay there)."""
        if self._loop is not None:
            for fd in [self.ns.server_fd, *(u.fd for u in self.ues)]:
                with contextlib.suppress(ValueError, OSError):
                    self._loop.remove_reader(fd)
            self._loop = None

    def close(self) -> None:
        """Stop the release thread (call after ``stop``, before closing the TUNs)."""
        self._drain_errors()
        self.release.close()

    # --- downlink ----------------------------------------------------------------------
    def _read_downlink(self) -> None:
        st = self.stats
        fd = self.ns.server_fd
        for _ in range(_READ_BATCH):
            try:
                data = os.read(fd, 65535)
            except OSError:  # EAGAIN: read all there was
                return
            if len(data) < 20 or data[0] >> 4 != 4:
                st.ignored += 1
                continue
            i = ue_index(data[16:20])
            if i < 0 or i >= len(self.ues):
                st.ignored += 1
                continue
            u = self.ues[i]
            st.dl_packets += 1
            st.dl_bytes += len(data)
            if u.dl_delay_s > 0.0 and self._loop is not None:
                self._loop.call_later(u.dl_delay_s, self._inject, u, data)
            else:
                self._inject(u, data)

    def _inject(self, u: RealUe, data: bytes) -> None:
        eng = self.engine
        now_us = eng.slot * eng.slot_us
        self._seq += 1
        pkt = RealPacket(u.flow, self._seq, data, now_us)
        payload = octopus_payload(data)
        if payload is not None:
            self.stats.marked += 1
        eng.inject_packet(u.engine_ue, pkt, payload, now_us)

    def on_packet(self, p: Packet, t_us: int) -> None:
        """The engine's delivery: the packet's last byte left the gNB in the slot ending at
        ``t_us``; write it into the UE's namespace."""
        assert isinstance(p, RealPacket)
        u = self._by_flow[p.flow]
        st = self.stats
        if not self.release.push(self.wall_ns_of_us(t_us), u.fd, p.data):
            st.release_refused += 1
            return
        st.delivered_packets += 1
        st.delivered_bytes += p.size
        u.delivered_bytes += p.size
        if p.data[9] == 17 and len(u.cell_us) < _MAX_ERRORS:  # UDP (as the sniffers count)
            u.cell_us.append(t_us - p.send_us)

    # --- uplink ------------------------------------------------------------------------
    def _read_uplink(self, u: RealUe) -> None:
        st = self.stats
        for _ in range(_READ_BATCH):
            try:
                data = os.read(u.fd, 65535)
            except OSError:
                return
            if len(data) < 20 or data[0] >> 4 != 4:
                st.ul_ignored += 1
                continue
            if u.hold_uplink and self.engine.ues[u.engine_ue].cell < 0:
                if len(u.held) >= _MAX_HELD:
                    st.ul_held_dropped += 1
                    continue
                st.ul_held += 1
                u.held.append(data)
                continue
            self._send_up(u, data)

    def _send_up(self, u: RealUe, data: bytes) -> None:
        if self._loop is not None:
            self._loop.call_later(u.ul_delay_s, self._write_up, data)

    def _write_up(self, data: bytes) -> None:
        st = self.stats
        try:
            os.write(self.ns.server_fd, data)
        except OSError as e:
            st.ul_write_errors += 1
            st.last_write_error = str(e)
            return
        st.ul_packets += 1
        st.ul_bytes += len(data)

    def relay_feedback(self, engine_ue: int, datagram: bytes) -> bool:
        """Hand an OCC xApp feedback datagram for a real UE to its application in the server
        namespace (UDP from RIC_ADDR to the flow's ``params.feedback_port``, default 9100):
        the RIC's network reaches the server, not through the cell. False: not a real UE."""
        u = self._by_engine_ue.get(engine_ue)
        if u is None:
            return False
        port = int(self.engine.flows[u.flow].spec.params.get("feedback_port", 9100))
        pkt = udp_datagram(RIC_ADDR, 9100, SERVER_ADDR, port, datagram)
        try:
            os.write(self.ns.server_fd, pkt)
        except OSError as e:
            self.stats.ul_write_errors += 1
            self.stats.last_write_error = str(e)
            return True
        self.stats.feedback_relayed += 1
        return True

    def _on_mobility(self, ev: MobilityEvent) -> None:
        u = self._by_engine_ue.get(ev.ue)
        if u is not None and ev.kind == "ho_end" and u.held:
            held, u.held = u.held, []
            for data in held:
                self._send_up(u, data)

    # --- reporting ---------------------------------------------------------------------
    def _drain_errors(self) -> None:
        e = self.release.take_errors()
        if len(e) and self._n_errors < _MAX_ERRORS:
            self._errors.append(e[: _MAX_ERRORS - self._n_errors])
            self._n_errors += len(self._errors[-1])

    def scheduling_error_us(self) -> dict[str, float] | None:
        """How far each write was from the end of the slot that completed the packet, in µs:
        percentiles of the absolute error, and the signed extremes (``min`` < 0: early)."""
        self._drain_errors()
        if not self._n_errors:
            return None
        if len(self._errors) > 1:
            self._errors = [np.concatenate(self._errors)]
        e = self._errors[0] / 1000.0
        p50, p99, p999 = np.percentile(np.abs(e), [50, 99, 99.9])
        return {"p50": round(float(p50), 1), "p99": round(float(p99), 1),
                "p999": round(float(p999), 1), "max": round(float(e.max()), 1),
                "min": round(float(e.min()), 1), "packets": self._n_errors}  # fmt: skip

    def cell_latency_ms(self, ue: int, since: int = 0) -> dict[str, float] | None:
        """Percentiles (ms) of real UE ``ue``'s packets' one-way latency as the simulated cell
        sees it: the wired one-way delay plus their time in the cell, from the ``since``-th
        delivered packet on (``status()["ues"][ue]["cell_packets"]`` taken earlier); what a
        sniffer measures on top of it is the live path's own cost (reading and writing the
        TUNs, the loop's timers, the lookahead)."""
        u = self.ues[ue]
        xs = np.asarray(u.cell_us[since:], dtype=float) / 1000.0 + u.dl_delay_s * 1000.0
        if not len(xs):
            return None
        p = np.percentile(xs, [50, 95, 99])
        return {"p50": round(float(p[0]), 2), "p95": round(float(p[1]), 2),
                "p99": round(float(p[2]), 2), "packets": len(xs)}  # fmt: skip

    def status(self) -> dict[str, Any]:
        eng = self.engine
        ues = []
        for u in self.ues:
            f = eng.flows[u.flow]
            q = eng.ues[u.engine_ue].queue
            ues.append({
                "ue": eng.ues[u.engine_ue].amf_ue_ngap_id, "address": u.address,
                "netns": u.netns, "delivered_bytes": u.delivered_bytes,
                "queued_bytes": q.bytes, "dropped_packets": f.dropped_pkts,
                "tail_dropped_packets": f.tail_dropped_pkts,
                "harq_lost_packets": f.harq_lost_pkts, "held_uplink": len(u.held),
                "malformed_headers": q.header_counters.malformed,
                "cell_packets": len(u.cell_us),
            })  # fmt: skip
        return {
            "server": {"netns": self.ns.server_ns, "address": SERVER_ADDR},
            "ues": ues,
            **asdict(self.stats),
            "release": {"kind": self.release.name, **self.release.stats()},
            "scheduling_error_us": self.scheduling_error_us(),
        }
