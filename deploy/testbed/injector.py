"""Video into the gNB's real user plane: Octopus-marked video messages as downlink packets on
N3, at the rate OCC's feedback gives (the sender obeys OCC, as a real one would).

The injector registers a flow with the OCC xApp for one test UE (``POST /occ/v1/flows``, JSON
feedback to its own UDP port), and every frame interval (30 fps) cuts a frame of
``target_bps / fps`` bits into datagrams with the Octopus sender library (temporal SVC roles,
SEC'23 §6.1), wraps each in IPv4/UDP to the UE's address, and sends it to the CU-UP's N3 port:

- ``mode="gtpu"``: a G-PDU with the PDU Session Container (what a UPF sends; TEID and QFI
  given), for a gNB with a core;
- ``mode="raw"``: the IP packet alone, for srsRAN's CU-UP test mode, which reads no GTP-U header
  and hands every datagram on its N3 socket to its one test session (gnb_rfless.md §b).

With srsran_agent's patch 0016 (``test_mode.test_ue.cu_up_drb_5qi``) that session's DRB is the
first test UE's DRB1: the video crosses SDAP, PDCP, F1-U and the RLC UM queue with its Octopus
dropper, and that UE's downlink is the video alone. Without it (a stock release_25_10) the
packets are dropped at F1-U.

``overshoot(factor, seconds)`` makes the sender send ``factor`` times OCC's target for a while:
a sender that has not seen a capacity drop yet. That is when the queue builds and a dropper
has something to drop.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from dataclasses import dataclass, field
from typing import Any, Literal

from octoric.contracts import auth
from octoric.contracts.feedback import FeedbackListener
from octoric.deploy.testbed import gtpu
from octoric.rest_client import request_json
from octoric.supervisor import cancel_task
from octoric.xapps.octopus.sender import MessageMarker, TemporalSvc

log = logging.getLogger("testbed.injector")


@dataclass
class InjectorStats:
    frames: int = 0
    messages: int = 0
    datagrams: int = 0
    bytes: int = 0
    send_errors: int = 0
    feedback: int = 0
    overshoot_frames: int = 0
    target_bps: float | None = None
    started_at: float = field(default_factory=time.time)


class Injector:
    """One OCC-fed video flow into N3 (runs as an asyncio task of ``octoric testbed live``)."""

    def __init__(
        self,
        occ_flows_url: str,
        ue: int,
        mode: Literal["gtpu", "raw"] = "raw",
        n3: tuple[str, int] = ("127.0.0.1", gtpu.GTPU_PORT),
        ue_ip: str = "10.45.1.2",
        server_ip: str = "10.45.0.1",
        teid: int = 1,
        qfi: int = 1,
        fps: float = 30.0,
        start_bps: float = 1e6,
        max_bps: float = 50e6,
        min_bps: float = 300e3,
    ) -> None:
        self.flows_url, self.ue, self.mode, self.n3 = occ_flows_url, ue, mode, n3
        self.ue_ip, self.server_ip = socket.inet_aton(ue_ip), socket.inet_aton(server_ip)
        self.teid, self.qfi, self.fps = teid, qfi, fps
        # a video encoder has a floor (its lowest layer): it never sends nothing at all
        self.target_bps, self.max_bps, self.min_bps = start_bps, max_bps, min_bps
        self.stats = InjectorStats()
        self.marker = MessageMarker(stream_id=1, mtu=1200)
        self.svc = TemporalSvc()
        self.listener: FeedbackListener | None = None
        self.sock: socket.socket | None = None
        self._task: asyncio.Task[None] | None = None
        self._ident = 0
        self._boost, self._boost_until = 1.0, 0.0

    def overshoot(self, factor: float, seconds: float) -> None:
        """Send ``factor`` x OCC's target for the next ``seconds``."""
        if factor <= 0 or seconds < 0:
            raise ValueError("overshoot needs factor > 0 and seconds >= 0")
        self._boost, self._boost_until = factor, time.monotonic() + seconds

    def register(self) -> None:
        """The flow at the OCC xApp: JSON feedback for ``ue`` to our UDP port."""
        assert self.listener is not None
        host, port = self.listener.address
        body = {"id": "testbed-video", "ue": self.ue, "address": f"{host}:{port}", "format": "json"}
        code, answer = request_json(
            "POST", self.flows_url, body, auth.bearer(auth.token_from_env())
        )
        if code >= 300:
            raise OSError(f"the OCC xApp refused the flow: {code} {answer}")

    def start(self) -> None:
        self.listener = FeedbackListener()
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.register()
        self._task = asyncio.create_task(self._run())

    async def stop(self) -> None:
        await cancel_task(self._task)
        if self.listener is not None:
            self.listener.close()
        if self.sock is not None:
            self.sock.close()

    def packets(self, frame: int, size: int) -> list[bytes]:
        """The N3 datagrams of one video frame of ``size`` bytes."""
        role = self.svc.role(frame)
        out = []
        for d in self.marker.datagrams(bytes(size), role):
            self._ident += 1
            ip = gtpu.ipv4_udp(self.server_ip, self.ue_ip, 40000, 40000, d, self._ident)
            out.append(gtpu.g_pdu(self.teid, self.qfi, ip) if self.mode == "gtpu" else ip)
        return out

    async def _run(self) -> None:
        assert self.listener is not None and self.sock is not None
        period = 1.0 / self.fps
        nxt = time.monotonic()
        frame = 0
        while True:
            while (fb := self.listener.get(timeout=0)) is not None:
                self.stats.feedback += 1
                self.target_bps = min(self.max_bps, max(self.min_bps, fb.target_bps))
            self.stats.target_bps = self.target_bps
            rate = self.target_bps
            if time.monotonic() < self._boost_until:
                rate *= self._boost
                self.stats.overshoot_frames += 1
            size = max(1, int(rate / self.fps / 8))
            pkts = self.packets(frame, size)
            for p in pkts:
                try:
                    self.sock.sendto(p, self.n3)
                    self.stats.bytes += len(p)
                except OSError:
                    self.stats.send_errors += 1
            self.stats.frames += 1
            self.stats.messages += 1
            self.stats.datagrams += len(pkts)
            frame += 1
            nxt += period
            await asyncio.sleep(max(0.0, nxt - time.monotonic()))

    def report(self) -> dict[str, Any]:
        s = self.stats
        secs = max(1e-9, time.time() - s.started_at)
        return {**s.__dict__, "mode": self.mode, "ue": self.ue,
                "sent_bps": round(s.bytes * 8 / secs)}  # fmt: skip
