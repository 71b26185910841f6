"""The live web dashboard of ``octoric run``: http://127.0.0.1:8099/ (``dashboard.port``).

A supervisor component in the run's own process (aiohttp on the run's event loop). It reads
what the run already writes into its folder, as the end-of-run report does (``deploy.report``),
and asks the components for their status:

- ``sim-series.jsonl``: every second, per UE the true capacity, the delivered throughput and
  the OCC xApp's ABW; per video flow the sender's target rate, frame latency and the packets
  dropped at the gNB (Octopus's dropper, a full queue);
- ``sim-handovers.jsonl`` (the simulator's handovers) and ``handover-events.jsonl`` (what the
  handover xApp detected);
- each component's status line and failure, the RIC's E2 nodes and subscriptions, and each
  xApp's own status page (RMR counters, rejected messages, overload).

``GET /metrics`` is Prometheus text (``deploy.run_metrics``: the simulator's per-UE and per-flow
truth, failed components), and at start the run's ``prometheus.yml`` is written beside the
rest (``deploy.prometheus_config``). ``GET /api/state?series=N&truth=M&events=K`` returns what
is new after those counts, so the page (``dashboard.html``, plots by plotly.js served from the
installed ``plotly`` package, no network needed) fetches only the last second each second.
Everything here is read-only; it binds loopback unless ``dashboard.host`` says otherwise, and
answers only Host names ``contracts.hosts`` allows (loopback, ``ric.allowed_hosts``): a
DNS-rebinding page gets 421 (counted, ``host_refused`` in the report).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections import Counter
from importlib import resources
from pathlib import Path
from typing import Any

from aiohttp import ClientSession, ClientTimeout, web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from octoric.contracts import hosts
from octoric.deploy import prometheus_config
from octoric.deploy.run_metrics import RunCollector, RunView
from octoric.errors import OctoricError
from octoric.ric.services import host_middleware
from octoric.supervisor import Component, RunContext

log = logging.getLogger("octoric.dashboard")

SERIES_FILE = "sim-series.jsonl"
TRUTH_FILE = "sim-handovers.jsonl"
EVENTS_FILE = "handover-events.jsonl"
MAX_ROWS = 3600  # kept in memory per stream (an hour of seconds); older rows are dropped
MAX_BATCH = 900  # rows per answer: a page that fell behind catches up in a few polls
XAPP_POLL_S = 2.0


class Tail:
    """The JSON lines appended to one file, read incrementally (a torn last line waits)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.rows: list[Any] = []
        self.dropped = 0  # rows dropped from the front (MAX_ROWS)
        self.bad_lines = 0
        self._offset = 0
        self._partial = b""

    @property
    def total(self) -> int:
        return self.dropped + len(self.rows)

    def poll(self) -> None:
        try:
            with self.path.open("rb") as f:
                f.seek(self._offset)
                chunk = f.read()
        except FileNotFoundError:
            return
        if not chunk:
            return
        self._offset += len(chunk)
        data = self._partial + chunk
        lines = data.split(b"\n")
        self._partial = lines.pop()  # b"" when the chunk ended a line
        for line in lines:
            if not line.strip():
                continue
            try:
                self.rows.append(json.loads(line))
            except ValueError:
                self.bad_lines += 1
        if len(self.rows) > MAX_ROWS:
            cut = len(self.rows) - MAX_ROWS
            del self.rows[:cut]
            self.dropped += cut

    def since(self, n: int) -> tuple[int, list[Any]]:
        """(the count the rows start at, rows after the first ``n``), at most MAX_BATCH."""
        start = max(n, self.dropped)
        i = start - self.dropped
        return start, self.rows[i : i + MAX_BATCH]


def _count(query: Any, key: str) -> int:
    raw = query.get(key, "0")
    if not raw.isdigit() or len(raw) > 12:
        raise web.HTTPBadRequest(text=f"{key} must be a non-negative integer, got {raw[:20]!r}\n")
    return int(raw)


class DashboardComponent:
    name = "dashboard"

    def __init__(self, components: list[Component], xapp_status: dict[str, str]) -> None:
        self.components = components  # the others, for their status (not started by us)
        self.xapp_status = xapp_status  # xApp name -> its status URL
        self.url = ""
        self.run_dir = Path()
        self.requests = 0
        self.bad_requests = 0
        self.started = time.time()
        self._runner: web.AppRunner | None = None
        self._tails: dict[str, Tail] = {}
        self._xapps: dict[str, dict[str, Any]] = {}
        self._poller: asyncio.Task[None] | None = None
        self._plotly: bytes | None = None
        self._hosts = hosts.HostPolicy("127.0.0.1", 0)  # set in start: loopback names only
        self.refused: Counter[str] = Counter()  # requests refused before a handler, by kind
        self._registry: CollectorRegistry | None = None  # /metrics, made on the first scrape

    # --- the component ------------------------------------------------------------------------
    async def start(self, ctx: RunContext) -> None:
        cfg = ctx.config.dashboard
        run = ctx.run_dir
        files = {"series": SERIES_FILE, "truth": TRUTH_FILE, "events": EVENTS_FILE}
        self._tails = {key: Tail(run / name) for key, name in files.items()}
        self.run_dir = run
        self._hosts = hosts.policy(cfg.host, cfg.port, ctx.config.ric.allowed_hosts)
        self._runner = web.AppRunner(self.app(), access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, cfg.host, cfg.port)
        try:
            await site.start()
        except OSError as e:
            await self._runner.cleanup()
            raise OctoricError(
                f"dashboard: cannot listen on {cfg.host}:{cfg.port} ({e.strerror}); choose "
                "another with --set dashboard.port=PORT (0: any free port) or turn it off "
                "with --set dashboard.enabled=false"
            ) from None
        port = self._runner.addresses[0][1] if self._runner.addresses else cfg.port
        self._hosts = hosts.HostPolicy(cfg.host, int(port), self._hosts.extra)
        self.url = f"http://{cfg.host}:{port}/"
        print(f"octoric dashboard: {self.url}", flush=True)
        # the run's scrape targets, now that this port is known (deploy.prometheus_config)
        prom = prometheus_config.targets(ctx.config.ric, self.xapp_status, f"{cfg.host}:{port}")
        prometheus_config.write(run, prom)
        self._poller = asyncio.create_task(self._poll_xapps())

    async def stop(self) -> None:
        if self._poller is not None:
            self._poller.cancel()
        if self._runner is not None:
            await self._runner.cleanup()

    def status(self) -> str:
        return f"dashboard {self.url}" if self.url else "dashboard starting"

    def report(self) -> dict[str, Any]:
        return {"url": self.url, "requests": self.requests, "bad_requests": self.bad_requests,
                "host_refused": self.refused["host"]}  # fmt: skip

    def failed(self) -> str | None:
        return None

    # --- HTTP ----------------------------------------------------------------------------------
    def app(self) -> web.Application:
        guard = host_middleware(lambda: self._hosts, self.refused)
        app = web.Application(middlewares=[guard, self._count_requests])
        app.router.add_get("/", self._page)
        app.router.add_get("/static/plotly.min.js", self._plotly_js)
        app.router.add_get("/api/state", self._state)
        app.router.add_get("/metrics", self._metrics)
        return app

    async def _metrics(self, request: web.Request) -> web.Response:
        """Prometheus text: the simulator's ground truth and this page's counters
        (``deploy.run_metrics``)."""
        if self._registry is None:
            self._registry = CollectorRegistry()
            self._registry.register(RunCollector(RunView(
                self._latest_series_row,
                lambda: [(c.name, bool(_safe(c.failed))) for c in self.components],
                lambda: (self.requests, self.bad_requests, self.refused["host"]),
            )))  # fmt: skip
        body = generate_latest(self._registry)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    def _latest_series_row(self) -> dict[str, Any] | None:
        tail = self._tails.get("series")
        if tail is None:
            return None
        tail.poll()
        return tail.rows[-1] if tail.rows else None

    @web.middleware
    async def _count_requests(self, request: web.Request, handler: Any) -> web.StreamResponse:
        self.requests += 1
        try:
            resp: web.StreamResponse = await handler(request)
            return resp
        except web.HTTPException as e:
            if 400 <= e.status < 500:
                self.bad_requests += 1
            raise

    async def _page(self, request: web.Request) -> web.Response:
        page = resources.files("octoric.deploy").joinpath("dashboard.html").read_text("utf-8")
        return web.Response(text=page, content_type="text/html",
                            headers={"Cache-Control": "no-store"})  # fmt: skip

    async def _plotly_js(self, request: web.Request) -> web.Response:
        if self._plotly is None:
            from plotly.offline import get_plotlyjs  # type: ignore[import-untyped]

            self._plotly = get_plotlyjs().encode()
        return web.Response(body=self._plotly, content_type="application/javascript",
                            headers={"Cache-Control": "max-age=86400"})  # fmt: skip

    async def _state(self, request: web.Request) -> web.Response:
        want = {k: _count(request.query, k) for k in ("series", "truth", "events")}
        out: dict[str, Any] = {"now": time.time(), "run_dir": str(self.run_dir),
                               "uptime_s": round(time.time() - self.started, 1)}  # fmt: skip
        for key, tail in self._tails.items():
            tail.poll()
            start, rows = tail.since(want[key])
            out[key] = {"start": start, "rows": rows, "total": tail.total}
        out["components"] = [
            {"name": c.name, "status": _safe(c.status), "failed": _safe(c.failed)}
            for c in self.components
        ]
        out["ric"] = self._ric()
        out["xapps"] = self._xapps
        return web.json_response(out, headers={"Cache-Control": "no-store"})

    def _ric(self) -> dict[str, Any] | None:
        ric = next((c for c in self.components if c.name == "ric"), None)
        summary = getattr(ric, "summary", None)
        if not isinstance(summary, dict) or "nodes" not in summary:
            return None
        return {
            "nodes": [
                {"meid": n.get("meid"), "connected": n.get("connected")}
                for n in summary.get("nodes", [])
            ],
            "subscriptions": len(summary.get("subscriptions") or []),
            "xapps": len(summary.get("xapps") or []),
        }

    async def _poll_xapps(self) -> None:
        """Each xApp's own status page, every XAPP_POLL_S (what its health says)."""
        async with ClientSession(timeout=ClientTimeout(total=1.5), trust_env=False) as http:
            while True:
                for name, url in self.xapp_status.items():
                    self._xapps[name] = await _xapp_health(http, url)
                await asyncio.sleep(XAPP_POLL_S)


async def _xapp_health(http: ClientSession, url: str) -> dict[str, Any]:
    try:
        async with http.get(url) as r:
            if r.status != 200:
                return {"ok": False, "error": f"HTTP {r.status}"}
            st = await r.json()
    except (TimeoutError, OSError, ValueError) as e:
        return {"ok": False, "error": type(e).__name__}
    rmr = {k: v for k, v in (st.get("rmr") or {}).items() if isinstance(v, int)}
    rejected = st.get("rejected_indications") or {}
    return {
        "ok": True,
        "overloaded": bool(st.get("overloaded")),
        "rmr_rx": sum(v for k, v in rmr.items() if k.startswith("rx_")),
        "rmr_tx": sum(v for k, v in rmr.items() if k.startswith("tx_") and "failed" not in k),
        # a publication nobody subscribes to has no route: normal, kept apart from failures
        "rmr_no_route": sum(v for k, v in rmr.items() if "failed_no_route" in k),
        "rmr_tx_failed": sum(
            v for k, v in rmr.items() if "failed" in k and "failed_no_route" not in k
        ),
        "rejected": sum(v for v in rejected.values() if isinstance(v, int)),
    }


def _safe(fn: Any) -> Any:
    try:
        return fn()
    except Exception as e:  # one component's bad status must not break the page
        return f"({type(e).__name__})"
