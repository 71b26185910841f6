"""The page server of a Chromium call across the emulated cell (run it in the server namespace).

    ip netns exec SERVER_NS python -m octoric.sim.chromium.pageserver --out RUN_DIR \\
        --port 8080 --feedback-port 9100

It serves the sender and receiver pages (``web/``), the OCC rate module
(``examples/occ-rate.js``) and its minimal example page (``examples/occ-rate-example.html``),
relays the pages' signalling between the two roles over a WebSocket each (``/signal/sender``,
``/signal/receiver``: a message from one goes to the other, queued until it connects), and
writes what the pages post into ``RUN_DIR``:

- ``sender-stats.jsonl`` / ``receiver-stats.jsonl``: one getStats() sample per line;
- ``pages.log``: the pages' own messages and errors;
- ``done-sender`` / ``done-receiver``: a page finished its call.

It also listens for the OCC xApp's feedback on UDP ``--feedback-port`` (the cell relays it
into this namespace, docs/emulated-cell.md), writes each datagram with its arrival time
(``t``, ms since the epoch, the clock the pages' ``Date.now()`` reads) to
``occ-feedback.jsonl``, and forwards it to every page subscribed to ``/occ/events`` as a
Server-Sent Event whose data is the datagram's JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path
from typing import Any

from aiohttp import WSMsgType, web

from octoric.contracts import ports

WEB = Path(__file__).resolve().parent / "web"
# the OCC rate module lives with the examples, where a web developer finds it (docs/occ.md)
OCC_RATE_JS = next(
    (d / "examples" / "occ-rate.js" for d in Path(__file__).resolve().parents
     if (d / "examples" / "occ-rate.js").is_file()),
    Path("examples/occ-rate.js"),
)  # fmt: skip
ROLES = ("sender", "receiver")


class PageServer:
    def __init__(self, out: Path) -> None:
        self.out = out
        self.sockets: dict[str, web.WebSocketResponse] = {}
        self.queued: dict[str, list[str]] = {r: [] for r in ROLES}
        self.subscribers: set[asyncio.Queue[str]] = set()
        self._files: dict[str, Any] = {}
        self.bad_signalling = 0  # messages that were not JSON objects (dropped, logged)

    def _append(self, name: str, line: str) -> None:
        f = self._files.get(name)
        if f is None:
            f = self._files[name] = (self.out / name).open("a", buffering=1)
        f.write(line + "\n")

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/", self.index)
        app.router.add_get("/occ-rate.js", self.occ_rate_js)
        app.router.add_get("/occ-rate-example.html", self.occ_rate_example)
        app.router.add_get("/signal/{role}", self.signal)
        app.router.add_post("/stats/{role}", self.stats)
        app.router.add_post("/log/{role}", self.log)
        app.router.add_post("/done/{role}", self.done)
        app.router.add_get("/occ/events", self.occ_events)
        app.router.add_static("/", WEB)
        return app

    async def index(self, _: web.Request) -> web.Response:
        return web.Response(text="octoric Chromium call: /sender.html, /receiver.html\n")

    async def occ_rate_js(self, _: web.Request) -> web.FileResponse:
        return web.FileResponse(OCC_RATE_JS, headers={"Content-Type": "text/javascript"})

    async def occ_rate_example(self, _: web.Request) -> web.FileResponse:
        return web.FileResponse(OCC_RATE_JS.parent / "occ-rate-example.html")

    def _role(self, req: web.Request) -> str:
        role = req.match_info["role"]
        if role not in ROLES:
            raise web.HTTPNotFound(text=f"no role {role!r}")
        return role

    async def signal(self, req: web.Request) -> web.WebSocketResponse:
        role = self._role(req)
        other = ROLES[1 - ROLES.index(role)]
        ws = web.WebSocketResponse()
        await ws.prepare(req)
        self.sockets[role] = ws
        for msg in self.queued[role]:
            await ws.send_str(msg)
        self.queued[role].clear()
        async for m in ws:
            if m.type != WSMsgType.TEXT:
                continue
            try:
                d = json.loads(m.data)
            except ValueError:
                d = None
            if not isinstance(d, dict):  # the pages send JSON objects; anything else is dropped
                self.bad_signalling += 1
                self._append("pages.log", f"{_now_ms()} {role}: signalling message is not a "
                             f"JSON object, dropped ({self.bad_signalling} so far)")  # fmt: skip
                continue
            entry = {"t": _now_ms(), "from": role, "type": d.get("type")}
            if isinstance(d.get("sdp"), str):  # the offer's and answer's codecs, on record
                entry["sdp"] = d["sdp"]
            self._append("signalling.jsonl", json.dumps(entry))
            peer = self.sockets.get(other)
            if peer is not None and not peer.closed:
                await peer.send_str(m.data)
            else:
                self.queued[other].append(m.data)
        self.sockets.pop(role, None)
        return ws

    async def stats(self, req: web.Request) -> web.Response:
        role = self._role(req)
        for s in await req.json():
            self._append(f"{role}-stats.jsonl", json.dumps(s))
        return web.Response(text="ok")

    async def log(self, req: web.Request) -> web.Response:
        role = self._role(req)
        body = await req.json()
        self._append("pages.log", f"{body.get('t')} {role}: {body.get('msg')}")
        return web.Response(text="ok")

    async def done(self, req: web.Request) -> web.Response:
        role = self._role(req)
        (self.out / f"done-{role}").write_text(json.dumps(await req.json()))
        return web.Response(text="ok")

    async def occ_events(self, req: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream",
                                           "Cache-Control": "no-cache"})  # fmt: skip
        await resp.prepare(req)
        q: asyncio.Queue[str] = asyncio.Queue()
        self.subscribers.add(q)
        try:
            await resp.write(b": subscribed\n\n")
            while True:
                data = await q.get()
                await resp.write(f"data: {data}\n\n".encode())
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        finally:
            self.subscribers.discard(q)
        return resp

    def feedback(self, data: bytes) -> None:
        """One OCC datagram: logged with its arrival time, forwarded to the subscribed pages."""
        try:
            msg = json.loads(data)
        except ValueError:
            self._append("occ-feedback.jsonl", json.dumps({"t": _now_ms(), "malformed": True}))
            return
        if not isinstance(msg, dict):
            return
        self._append("occ-feedback.jsonl", json.dumps({"t": _now_ms(), **msg}))
        text = json.dumps(msg)
        for q in self.subscribers:
            q.put_nowait(text)


class _Feedback(asyncio.DatagramProtocol):
    def __init__(self, server: PageServer) -> None:
        self.server = server

    def datagram_received(self, data: bytes, addr: tuple[str | Any, int]) -> None:
        self.server.feedback(data)


def _now_ms() -> float:
    return round(time.time() * 1000.0, 3)


async def serve(out: Path, host: str, port: int, feedback_port: int) -> None:
    out.mkdir(parents=True, exist_ok=True)
    ps = PageServer(out)
    runner = web.AppRunner(ps.app(), access_log=None)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    loop = asyncio.get_running_loop()
    if feedback_port:
        await loop.create_datagram_endpoint(
            lambda: _Feedback(ps), local_addr=("0.0.0.0", feedback_port)
        )
    (out / "pageserver-ready").write_text(f"{host}:{port}\n")
    await asyncio.Event().wait()  # until killed (the call's harness ends it)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True, help="the run folder")
    ap.add_argument("--host", default="0.0.0.0")
    ap.add_argument("--port", type=int, default=ports.CHROMIUM_PAGES)
    ap.add_argument("--feedback-port", type=int, default=9100,
                    help="UDP port of the OCC feedback the cell relays (0: none)")  # fmt: skip
    a = ap.parse_args(argv)
    asyncio.run(serve(a.out, a.host, a.port, a.feedback_port))


if __name__ == "__main__":
    main()
