"""octoric's stand-ins for the O-RAN SC components that cannot run here, as pods of
``deploy/oran_platform/run.sh``:

- ``e2term``: O-RAN SC's e2term is C++ over SCTP, which this kernel lacks. octoric's e2term
  takes its place with O-RAN SC e2term's Helm ports (RMR data 38000, route port 4561, where the
  real rtmgr pushes its tables) and without octoric's sender checks (they read octoric's own
  appmgr records; O-RAN SC's e2term checks no sender). It answers E2 Setup itself and writes the
  R-NIB, which on O-RAN SC e2mgr does (E2 Setup over RMR to e2mgr needs e2term's XER
  encoding); so what e2mgr does after a setup is done here: the node is announced on the SDL
  channel submgr listens to (``{e2Manager},RAN_CONNECTION_STATUS_CHANGE``,
  ``<meid>_CONNECTED``) and associated with this e2term in rtmgr
  (``POST <rtmgr>/ric/v1/handles/associate-ran-to-e2t``), so rtmgr's ``%meid`` routes reach it.
  As O-RAN SC's e2term does, it announces itself to e2mgr at start (E2_TERM_INIT, 1100, through
  its static seed route) and answers e2mgr's keep-alives (1101 -> 1102).
- ``a1``: octoric's A1-P service in place of O-RAN SC's A1 mediator (not part of this run's
  brief): RMR data 4562, route port 4561, REST 10000, no token (the A1 mediator has none).

Usage: ``python -m octoric.deploy.oran_platform.standins e2term|a1 --redis HOST:PORT ...``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import signal
import tempfile
import urllib.request
from pathlib import Path
from typing import Any

from aiohttp import web

from octoric import log as octolog
from octoric.contracts import message_types as mt
from octoric.contracts import ports
from octoric.ric import nodes
from octoric.ric.rmr_endpoint import RmrEndpoint, RmrMessage
from octoric.ric.sdl import Sdl

log = logging.getLogger("oran_platform.standins")
RNIB_CHANNEL = "{e2Manager},RAN_CONNECTION_STATUS_CHANGE"  # sdlgo's "<ns>,<channel>"


async def _sdl(redis: str, name: str, owned: list[str]) -> tuple[Sdl, asyncio.Task[None]]:
    host, _, port = redis.rpartition(":")
    sdl = Sdl(host, int(port), owned, name)
    await sdl.load()
    return sdl, asyncio.create_task(sdl.watch())


class E2termRmr(RmrEndpoint):
    """e2term's RMR endpoint; e2mgr's keep-alive requests are answered here, as O-RAN SC's
    e2term does, before e2term's own loop (which knows no 1101) sees them."""

    payload = b"{}"

    async def receive(self) -> RmrMessage:
        while True:
            msg = await super().receive()
            if msg.mtype != mt.E2_TERM_KEEP_ALIVE_REQ:
                return msg
            self.reply(msg, mt.E2_TERM_KEEP_ALIVE_RESP, self.payload)


def _post_json(url: str, body: Any) -> int:
    req = urllib.request.Request(url, json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})  # fmt: skip
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(req, timeout=5) as r:
        return int(r.status)


async def _associate(rtmgr: str, address: str, meid: str) -> None:
    """e2mgr's call after an E2 Setup: the node's meid now routes to this e2term."""
    url = f"{rtmgr.rstrip('/')}/associate-ran-to-e2t"
    body = [{"E2TAddress": address, "ranNamelist": [meid]}]
    for attempt in range(30):  # rtmgr may not know this e2term yet (e2mgr adds it)
        try:
            st = await asyncio.to_thread(_post_json, url, body)
            log.info("POST %s %s -> %d", url, json.dumps(body), st)
            return
        except OSError as e:
            log.warning("POST %s failed (%s), attempt %d", url, e, attempt + 1)
            await asyncio.sleep(1)


async def _announce_nodes(
    e2t: Any, redis: str, stop: asyncio.Event, rtmgr: str, address: str
) -> None:
    """What e2mgr does when a node connects or goes away: the event on the R-NIB channel
    (submgr's E2 state follows it, ``checkE2State``) and the node's association in rtmgr."""
    import redis.asyncio as aioredis

    host, _, port = redis.rpartition(":")
    r: Any = aioredis.Redis(host=host, port=int(port))
    known: set[str] = set()
    try:
        while not stop.is_set():
            now = set(e2t.sessions)
            for meid in sorted(now - known):
                await r.publish(RNIB_CHANNEL, f"{meid}_CONNECTED")
                log.info("published %s_CONNECTED on %s", meid, RNIB_CHANNEL)
                if rtmgr:
                    await _associate(rtmgr, address, meid)
            for meid in sorted(known - now):
                await r.publish(RNIB_CHANNEL, f"{meid}_DISCONNECTED")
                log.info("published %s_DISCONNECTED on %s", meid, RNIB_CHANNEL)
            known = now
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(stop.wait(), 0.5)
    finally:
        await (getattr(r, "aclose", None) or r.close)()


async def run_e2term(args: argparse.Namespace, stop: asyncio.Event) -> None:
    from octoric.ric.e2term import E2term, E2termConfig

    sdl, watch = await _sdl(args.redis, "e2term", [nodes.NS, nodes.RNIB_NS])
    address = f"{args.address}:{args.rmr_port}"
    seed = None
    if args.e2mgr:  # O-RAN SC e2term's static route to e2mgr, for E2_TERM_INIT
        seed = Path(tempfile.mkdtemp(prefix="e2term-")) / "router.txt"
        seed.write_text(f"newrt|start\nrte|{mt.E2_TERM_INIT}|{args.e2mgr}\nnewrt|end\n")
    ep = E2termRmr(
        "e2term", args.rmr_port, control_port=args.route_port, src_id=args.src_id,
        bind_if="0.0.0.0", seed_table=seed,
    )  # fmt: skip
    init = {"address": address, "fqdn": args.src_id, "pod_name": "e2term-alpha"}
    ep.payload = json.dumps(init).encode()
    ep.start()
    cfg = E2termConfig(
        "0.0.0.0", args.e2_port, "tcp", submgr_endpoint=None, check_senders=False
    )  # fmt: skip
    e2t = E2term(cfg, sdl, ep)
    await e2t.start()
    log.info("e2term stand-in: E2 %d (TCP framing), RMR %d, routes %d",
             args.e2_port, args.rmr_port, args.route_port)  # fmt: skip
    if args.e2mgr:
        for _ in range(3):  # RMR connects lazily: the first send may find no session yet
            ok = ep.send(mt.E2_TERM_INIT, ep.payload)
            log.info("E2_TERM_INIT %s to %s: %s", init, args.e2mgr, "sent" if ok else "failed")
            await asyncio.sleep(1.0)
    await _announce_nodes(e2t, args.redis, stop, args.rtmgr, address)
    await e2t.stop()
    await asyncio.sleep(0.5)  # the closed sessions' last RMR sends, before RMR goes
    ep.close()
    watch.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await watch
    await sdl.close()


async def run_a1(args: argparse.Namespace, stop: asyncio.Event) -> None:
    from octoric.ric import a1 as a1_mod
    from octoric.ric.services import a1_rmr_loop, a1_service, build_app

    sdl, watch = await _sdl(args.redis, "a1", [a1_mod.NS])
    ep = RmrEndpoint(
        "a1", args.rmr_port, control_port=args.route_port, src_id=args.src_id, bind_if="0.0.0.0"
    )
    ep.start()
    a1 = a1_service(sdl, ep)

    task = asyncio.create_task(a1_rmr_loop(a1, ep))
    runner = web.AppRunner(build_app(a1.routes(), sdl, ""), access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "0.0.0.0", args.http_port, reuse_address=True).start()
    log.info("A1 stand-in: REST %d, RMR %d, routes %d", args.http_port, args.rmr_port,
             args.route_port)  # fmt: skip
    await stop.wait()
    task.cancel()
    await runner.cleanup()
    ep.close()
    watch.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await watch
    await sdl.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m octoric.deploy.oran_platform.standins")
    ap.add_argument("component", choices=("e2term", "a1"))
    ap.add_argument("--redis", required=True, help="dbaas as HOST:PORT")
    ap.add_argument("--rmr-port", type=int, required=True)
    ap.add_argument("--route-port", type=int, default=4561)
    ap.add_argument("--src-id", required=True, help="RMR_SRC_ID: the component's RMR service")
    ap.add_argument("--e2-port", type=int, default=36422)
    ap.add_argument("--address", default="", help="e2term: its address as rtmgr routes to it")
    ap.add_argument("--e2mgr", default="", help="e2term: e2mgr's RMR endpoint (E2_TERM_INIT)")
    ap.add_argument("--rtmgr", default="", help="e2term: rtmgr's .../ric/v1/handles URL")
    ap.add_argument("--http-port", type=int, default=ports.A1_REST)
    args = ap.parse_args(argv)
    octolog.configure(f"oran-{args.component}")

    async def go() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await (run_e2term if args.component == "e2term" else run_a1)(args, stop)

    asyncio.run(go())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
