"""The embedded RIC's processes: each platform component in its own asyncio process.

``octoric ric serve <component> --state FILE`` runs one of ``platform`` (appmgr-lite +
rtmgr-lite), ``e2term``, ``submgr``, ``a1``; FILE (written by ``octoric ric up`` or
``octoric run``) says where Redis is and which ports to use. Every RMR endpoint listens for
route pushes on its data port + 1 and starts from the seed table ``<run_dir>/routes.rt``.
Each component serves Prometheus ``/metrics`` on its HTTP port.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import contextlib
import json
import logging
import os
import signal
from collections import Counter, deque
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import aiohttp
import redis.exceptions
from aiohttp import web
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
    SummaryMetricFamily,
)
from prometheus_client.exposition import generate_latest
from prometheus_client.registry import Collector, CollectorRegistry

from octoric import log as octolog
from octoric import realtime
from octoric.config import RicConfig
from octoric.contracts import a1 as a1_paths
from octoric.contracts import auth, hosts
from octoric.e2sm.transport import Transport
from octoric.redis_server import RedisAuth
from octoric.ric.sdl import Sdl

if TYPE_CHECKING:
    from octoric.ric.a1 import A1Service
    from octoric.ric.appmgr import Appmgr
    from octoric.ric.rtmgr import Pusher, Rtmgr
    from octoric.ric.submgr import Submgr

log = logging.getLogger("ric.services")
COMPONENTS = ("platform", "e2term", "submgr", "a1")
APPMGR_SERVICE = "service-ricplt-appmgr-http.ricplt"  # where ricxappframe registers (O-RAN SC)
HOST = "127.0.0.1"


@dataclass
class RicRuntime:
    """Everything a component process needs; JSON in ``<run_dir>/ric.json``."""

    ric: RicConfig
    redis_host: str
    redis_port: int
    run_dir: str
    transport: Transport
    # the run's route key (hex): rtmgr signs route tables with it, and every RMR endpoint of
    # the run (platform and xApps, OCTORIC_RMR_RT_KEY) installs only signed ones
    rt_key: str = ""
    # the run's API token (contracts.auth): state-changing REST calls and A1 must carry it
    api_token: str = ""
    # the run's Redis user and its password file (octoric.redis_server.RedisAuth); empty: none
    redis_username: str = ""
    redis_password_file: str = ""

    def redis_auth(self) -> RedisAuth:
        return RedisAuth(self.redis_username, self.redis_password_file)

    @property
    def rt_key_bytes(self) -> bytes:
        return bytes.fromhex(self.rt_key) if self.rt_key else b""

    @property
    def seed_file(self) -> Path:
        return Path(self.run_dir) / "routes.rt"

    def write(self, path: Path) -> None:
        """Readable by this user only: it holds the route key and the API token."""
        write_private(path, json.dumps(asdict(self), indent=2))

    @classmethod
    def read(cls, path: Path) -> RicRuntime:
        d = json.loads(path.read_text())
        d["ric"] = RicConfig(**d["ric"])
        return cls(**d)

    def platform_endpoints(self) -> Any:
        from octoric.ric.routing import PlatformEndpoints

        return PlatformEndpoints(
            e2term=f"{HOST}:{self.ric.e2term_rmr_port}",
            submgr=f"{HOST}:{self.ric.submgr_rmr_port}",
            a1=f"{HOST}:{self.ric.a1_rmr_port}",
        )

    def platform_control(self) -> list[str]:
        ports = (self.ric.e2term_rmr_port, self.ric.submgr_rmr_port, self.ric.a1_rmr_port)
        return [f"{HOST}:{p + 1}" for p in ports]

    def http_port(self, component: str) -> int:
        return {
            "platform": self.ric.appmgr_port,
            "e2term": self.ric.e2term_http_port,
            "submgr": self.ric.submgr_rest_port,
            "a1": self.ric.a1_rest_port,
        }[component]


# Levels, not counts: exported as gauges. Every other number a component keeps only grows and
# is exported as a counter (``<name>_total``), as Prometheus' conventions want.
GAUGES = {"connected_nodes", "half_open", "sdl_healthy", "subscriptions"}
HELP = {
    "connected_nodes": "E2 nodes with an E2 connection now",
    "half_open": "E2 connections waiting for E2 Setup now",
    "sdl_healthy": "1 while Redis (the SDL) is reachable, else 0",
    "subscriptions": "subscriptions held now",
    "sdl_reseeds": "times Redis came back empty and this process wrote its state back",
    "sdl_errors": "SDL watchdog rounds that could not reach Redis",
    "rest_unauthorized": "REST calls refused for want of the run's API token",
    "rest_bad_host": "REST calls refused (421) for a Host header this listener does not serve",
    "sent": "RMR messages sent",
    "received": "RMR messages received",
    "send_failures": "RMR sends that failed after their retries",
    "receive_errors": "RMR receive errors",
    "waited": "RMR sends that waited for a full socket (retried)",
    "gave_up": "RMR messages given up",
    "indications": "RIC indications forwarded from E2 to RMR",
    "rest": "REST calls by kind",
    "errors": "errors by kind",
    "e2": "E2AP messages by kind",
    "pdus_in": "E2AP PDUs received, by kind",
    "pdus_out": "E2AP PDUs sent, by kind",
    "registered": "xApp registrations appmgr accepted",
    "deregistered": "xApp deregistrations appmgr accepted",
    "refused_full": "registrations (appmgr) or subscription routes (rtmgr) refused because "
    "their table is full",
    "rmr_refused": "RMR connections and frames the library refused, by kind (foreign peers, "
    "forged senders, replayed route tables, limits)",
    "rest_sdl_unavailable": "REST requests answered 503 because Redis (the SDL) was "
    "unreachable or too slow",
    "bad_requests": "malformed requests refused",
    "tables": "route tables built",
    "pushes": "route-table pushes that every endpoint took",
    "push_failures": "route-table pushes that an endpoint did not take",
    "requests": "A1 policy requests sent to xApps",
    "responses": "A1 policy status answers from xApps",
    "bad_responses": "malformed A1 answers from xApps",
    "forward_latency_seconds": "e2term's forwarding latency: an E2 RIC indication PDU in -> "
    "its RMR message out",
    "forward_latency_seconds_quantile": "e2term's forwarding latency, quantiles of the last "
    "100,000 indications (kept for the benchmarks; the histogram is for PromQL)",
}


@dataclass
class Quantiles:
    """Recent values of a latency in seconds, exported as a summary's quantiles."""

    values: list[float]
    total: float = 0.0
    count: int = 0


# e2term's forwarding latency (microseconds): buckets dense below its share of the loop's 1 ms
FORWARD_BUCKETS_US: tuple[float, ...] = (
    10, 25, 50, 75, 100, 150, 200, 300, 500, 750, 1000, 2000, 5000, 10_000, 100_000,
)  # fmt: skip


class BucketedLatencies(deque[float]):
    """e2term's recent forwarding latencies (us; the deque its stats keep) that also count each
    one into a histogram's buckets since start: PromQL's histogram_quantile over any window.
    e2term appends from its one event loop: no lock."""

    def __init__(self, maxlen: int, bounds_us: tuple[float, ...] = FORWARD_BUCKETS_US) -> None:
        super().__init__((), maxlen)
        self.bounds_us = bounds_us
        self.counts = [0] * (len(bounds_us) + 1)
        self.total_us = 0.0

    def append(self, v: float) -> None:
        super().append(v)
        self.counts[bisect.bisect_left(self.bounds_us, v)] += 1
        self.total_us += v

    def histogram(self) -> Histogram:
        out, acc = [], 0
        for bound, n in zip((*self.bounds_us, None), self.counts, strict=True):
            acc += n
            out.append(("+Inf" if bound is None else repr(bound / 1e6), float(acc)))
        return Histogram(out, self.total_us / 1e6)


@dataclass
class RecentQuantiles:
    """Recent values of a latency in seconds, exported as a gauge per quantile (0.5/0.9/0.99)."""

    values: list[float]


@dataclass
class Histogram:
    """Cumulative (le, count) pairs ending with +Inf, and the sum (seconds)."""

    buckets: list[tuple[str, float]]
    total: float


class StatsCollector(Collector):
    """Prometheus metrics from a component's stats dataclasses, read at scrape time: counters
    for what only grows (``_total``), gauges for the levels in ``GAUGES``, summaries for
    ``Quantiles`` (seconds), help texts from ``HELP``."""

    def __init__(self, prefix: str, sources: Callable[[], dict[str, Any]]) -> None:
        self.prefix, self.sources = prefix, sources

    def collect(self) -> Iterator[Metric]:
        for name, value in self.sources().items():
            full = f"{self.prefix}_{name}"
            doc = HELP.get(name, name.replace("_", " "))
            if isinstance(value, RecentQuantiles):
                g = GaugeMetricFamily(full, doc, labels=["quantile"])
                vals = sorted(value.values)
                for q in (0.5, 0.9, 0.99):
                    if vals:
                        g.add_metric([str(q)], vals[min(len(vals) - 1, int(q * len(vals)))])
                yield g
            elif isinstance(value, Histogram):
                h = HistogramMetricFamily(full, doc)
                h.add_metric([], value.buckets, value.total)
                yield h
            elif isinstance(value, Counter):
                fam = CounterMetricFamily(full, doc, labels=["kind"])
                for k, v in sorted(value.items()):
                    fam.add_metric([str(k)], float(v))
                yield fam
            elif isinstance(value, Quantiles):
                s = SummaryMetricFamily(full, doc)
                s.add_metric([], count_value=value.count, sum_value=value.total)
                yield s
                g = GaugeMetricFamily(f"{full}_quantile", f"{doc} (recent quantiles)",
                                      labels=["quantile"])  # fmt: skip
                vals = sorted(value.values)
                for q in (0.5, 0.9, 0.99):
                    if vals:
                        g.add_metric([str(q)], vals[min(len(vals) - 1, int(q * len(vals)))])
                yield g
            elif isinstance(value, (int, float)) and not isinstance(value, bool):
                if name in GAUGES:
                    g = GaugeMetricFamily(full, doc)
                    g.add_metric([], float(value))
                    yield g
                else:
                    c = CounterMetricFamily(full, doc)
                    c.add_metric([], float(value))
                    yield c


def _metrics_route(prefix: str, sources: Callable[[], dict[str, Any]]) -> web.RouteDef:
    registry = CollectorRegistry()
    registry.register(StatsCollector(prefix, sources))

    async def handler(request: web.Request) -> web.Response:
        return web.Response(body=generate_latest(registry), content_type="text/plain")

    return web.get("/metrics", handler)


@dataclass
class _SdlStats:
    sdl_reseeds: int
    sdl_errors: int
    sdl_healthy: int  # 1 / 0 (a gauge)
    rest_unauthorized: int  # requests refused without the run's token
    rest_sdl_unavailable: int  # requests answered 503: Redis unreachable or too slow
    rest_bad_host: int  # requests refused for their Host header (421)


def _sdl_stats(sdl: Sdl) -> _SdlStats:
    return _SdlStats(sdl.reseeds, sdl.errors, int(sdl.healthy), REST_AUTH["unauthorized"],
                     REST_SDL["unavailable"], REST_HOST["host"])  # fmt: skip


def _stats_dict(*objs: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for o in objs:
        for k, v in vars(o).items():
            if isinstance(v, (Counter, int, float)) and not isinstance(v, bool):
                out[k] = v
    return out


def write_private(path: Path, text: str) -> None:
    """A file only this user may read (secrets in the run folder)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.chmod(path, 0o600)  # an older file keeps its mode through O_TRUNC


REST_AUTH: Counter[str] = Counter()  # requests refused for want of the run's token
REST_HOST: Counter[str] = Counter()  # requests refused for a Host this listener does not serve


def host_middleware(policy: Callable[[], hosts.HostPolicy], refused: Counter[str]) -> Any:
    """Answer only the Host names ``policy()`` allows (``contracts.hosts``: loopback, the
    configured names): a DNS-rebinding page's requests name the attacker's host. 421 with the
    reason otherwise, counted in ``refused["host"]``. ``policy`` is read per request: a
    listener on port 0 knows its port only once it listens."""

    @web.middleware
    async def mw(request: web.Request, handler: Any) -> web.StreamResponse:
        host = request.headers.get("Host")
        p = policy()
        if not p.allows(host):
            refused["host"] += 1
            return web.json_response({"error": p.refusal(host), "reason": "bad_host"},
                                     status=hosts.STATUS)  # fmt: skip
        resp: web.StreamResponse = await handler(request)
        return resp

    return mw


REST_SDL: Counter[str] = Counter()  # requests answered 503 because Redis did not answer


def _auth_middleware(token: str) -> Any:
    """Every request that changes state (not GET/HEAD), and every A1-P request (policies are
    the operator's), must carry the run's token (``contracts.auth``); health and metrics are
    open. 401 otherwise, saying where the token is, counted."""

    @web.middleware
    async def mw(request: web.Request, handler: Any) -> web.StreamResponse:
        path = request.path
        open_path = path.startswith("/ric/v1/health") or path == "/metrics"
        guarded = request.method not in ("GET", "HEAD") or path.startswith(a1_paths.PREFIX + "/")
        if guarded and not open_path and not auth.authorized(request.headers, token):
            REST_AUTH["unauthorized"] += 1
            body = {"error": "this call needs the run's API token: header 'Authorization: "
                    f"Bearer <token>', the token in <run folder>/{auth.TOKEN_FILE} or "
                    f"${auth.TOKEN_ENV}"}  # fmt: skip
            return web.json_response(
                body, status=401, headers={"WWW-Authenticate": 'Bearer realm="octoric"'}
            )
        resp: web.StreamResponse = await handler(request)
        return resp

    return mw


@web.middleware
async def _sdl_unavailable_middleware(request: web.Request, handler: Any) -> web.StreamResponse:
    """A handler that could not reach Redis (refused, or no answer within the client's 2 s)
    answers 503 with a Retry-After, counted: the request was fine, the platform was not (a
    500 would tell the client its request broke the server). The state calls are idempotent,
    so a retry completes what the failed call may have begun."""
    try:
        resp: web.StreamResponse = await handler(request)
    except redis.exceptions.RedisError as e:
        REST_SDL["unavailable"] += 1
        if REST_SDL["unavailable"] in (1, 10, 100) or REST_SDL["unavailable"] % 1000 == 0:
            log.warning("%s %s: SDL unavailable (%s); 503 (%d so far)", request.method,
                        request.path, e, REST_SDL["unavailable"])  # fmt: skip
        body = {"error": f"SDL (Redis) unavailable: {e}; retry"}
        return web.json_response(body, status=503, headers={"Retry-After": "1"})
    return resp


def build_app(
    routes: list[web.RouteDef], sdl: Sdl | None = None, token: str = ""
) -> web.Application:
    """A component's HTTP application as it is served: ``routes``, the health routes, the
    1 MiB body limit; ``sdl``: ready (``/ric/v1/health/ready``) only while it reaches Redis;
    ``token``: the run's API token (empty: no check, for tests of the bare services). A
    request that cannot reach Redis gets a 503."""
    middlewares: list[Any] = [_sdl_unavailable_middleware]
    if token:
        middlewares.insert(0, _auth_middleware(token))
    app = web.Application(client_max_size=1 << 20, middlewares=middlewares)
    app.add_routes(routes)

    async def ready(request: web.Request) -> web.Response:
        if sdl is not None and not sdl.healthy:
            body = {"ready": False, "reason": f"SDL (Redis) unreachable: {sdl.last_error}"}
            return web.json_response(body, status=503)
        return web.Response(status=200)

    app.add_routes([web.get("/ric/v1/health/alive", _ok), web.get("/ric/v1/health/ready", ready)])
    return app


async def app_runner(app: web.Application) -> web.AppRunner:
    """``app`` set up as its server runs it (started up, frozen, no access log), not yet
    listening (``runner.server()`` makes the protocol of one connection)."""
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    return runner


async def _serve_app(
    app: web.Application, host: str, port: int, allowed_hosts: list[str] | None = None
) -> web.AppRunner:
    """``app`` served on ``host:port``, answering only the Host names ``contracts.hosts``
    allows there (``allowed_hosts``: ``ric.allowed_hosts``; None: ``$OCTORIC_ALLOWED_HOSTS``)."""
    listening = [hosts.policy(host, port, allowed_hosts)]
    app.middlewares.insert(0, host_middleware(lambda: listening[0], REST_HOST))
    runner = await app_runner(app)
    await web.TCPSite(runner, host, port, reuse_address=True).start()
    if port == 0 and runner.addresses:  # the port the system chose is the one a Host names
        listening[0] = hosts.HostPolicy(host, int(runner.addresses[0][1]), listening[0].extra)
    return runner


async def _serve_http(
    routes: list[web.RouteDef],
    host: str,
    port: int,
    sdl: Sdl | None = None,
    token: str = "",
    allowed_hosts: list[str] | None = None,
) -> web.AppRunner:
    """``build_app`` served on ``host:port``."""
    return await _serve_app(build_app(routes, sdl, token), host, port, allowed_hosts)


async def _ok(request: web.Request) -> web.Response:
    return web.Response(status=200)


async def _open_sdl(rt: RicRuntime, name: str, owned: list[str]) -> tuple[Sdl, asyncio.Task[None]]:
    """The process's SDL: its namespaces mirrored, Redis watched (re-seeded when it comes back
    empty; ``healthy`` for the ready check)."""
    sdl = Sdl(rt.redis_host, rt.redis_port, owned, name, rt.redis_auth())
    n = await sdl.load()
    log.info("%s: %d SDL keys mirrored", name, n)
    return sdl, asyncio.create_task(sdl.watch())


async def _close_sdl(sdl: Sdl, watch: asyncio.Task[None]) -> None:
    watch.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await watch
    await sdl.close()


def _endpoint(rt: RicRuntime, name: str, port: int) -> Any:
    from octoric.ric.rmr_endpoint import RmrEndpoint

    ep = RmrEndpoint(
        name, port, control_port=port + 1, seed_table=rt.seed_file, src_id=HOST,
        bind_if=rt.ric.bind_address, route_key=rt.rt_key,
    )  # fmt: skip
    ep.start()
    return ep


# --- the components ---------------------------------------------------------------------------
def platform_services(rt: RicRuntime, sdl: Sdl, push: Pusher) -> tuple[Appmgr, Rtmgr]:
    """appmgr-lite and rtmgr-lite as the platform process wires them: rtmgr's xApps are
    appmgr's registrations, and every registration change (or a re-seeded Redis) rebuilds the
    route table and pushes it with ``push``."""
    from octoric.ric.appmgr import Appmgr
    from octoric.ric.routing import XappRoutes
    from octoric.ric.rtmgr import Rtmgr

    appmgr = Appmgr(sdl)

    async def xapps() -> list[tuple[XappRoutes, str]]:
        out = []
        for x in await appmgr.xapps():
            routes = x.routes()
            host = routes.endpoint.rpartition(":")[0]
            ctl = _route_port(x.descriptor) or int(routes.endpoint.rpartition(":")[2]) + 1
            out.append((routes, f"{host}:{ctl}"))
        return out

    rtmgr = Rtmgr(sdl, rt.platform_endpoints(), rt.platform_control(), push,
                  rt.seed_file, xapps, key=rt.rt_key_bytes)  # fmt: skip

    async def on_change() -> None:
        await rtmgr.rebuild()

    appmgr.on_change = on_change
    sdl.on_reseed = on_change  # the routes again, from the re-seeded registrations
    return appmgr, rtmgr


def platform_apps(
    rt: RicRuntime, sdl: Sdl, appmgr: Appmgr, rtmgr: Rtmgr, ep: Any
) -> tuple[web.Application, web.Application]:
    """appmgr's and rtmgr's HTTP applications (``ep``: the RMR endpoint, for /metrics)."""
    metrics = _metrics_route(
        "octoric_platform",
        lambda: _stats_dict(appmgr.counters, rtmgr.stats, ep.counters, _sdl_stats(sdl)),
    )
    appmgr_app = build_app([*appmgr.routes(), metrics], sdl, rt.api_token)
    return appmgr_app, build_app(rtmgr.routes(), sdl, rt.api_token)


async def run_platform(rt: RicRuntime, stop: asyncio.Event) -> None:
    from octoric.ric import appmgr as appmgr_mod
    from octoric.ric import rtmgr as rtmgr_mod

    sdl, watch = await _open_sdl(rt, "platform", [appmgr_mod.NS, rtmgr_mod.NS])
    ep = _endpoint(rt, "rtmgr", rt.ric.rtmgr_rmr_port)
    appmgr, rtmgr = platform_services(rt, sdl, ep.wh_send_to)
    await rtmgr.start()
    appmgr_app, rtmgr_app = platform_apps(rt, sdl, appmgr, rtmgr, ep)
    bind = rt.ric.bind_address
    names = rt.ric.allowed_hosts
    # ricxappframe registers at O-RAN SC's appmgr Service name, through the proxy xapp_env
    # points at appmgr-lite: that Host is the legitimate one here (a name no DNS answers)
    appmgr_names = [*names, APPMGR_SERVICE] if names or hosts.is_loopback(bind) else names
    runners = [
        await _serve_app(appmgr_app, bind, rt.ric.appmgr_port, appmgr_names),
        await _serve_app(rtmgr_app, bind, rt.ric.rtmgr_rest_port, names),
    ]
    log.info("appmgr-lite on :%d, rtmgr-lite on :%d", rt.ric.appmgr_port, rt.ric.rtmgr_rest_port)
    await stop.wait()
    await rtmgr.stop()
    for r in runners:
        await r.cleanup()
    ep.close()
    await _close_sdl(sdl, watch)


def _route_port(descriptor: dict[str, Any]) -> int | None:
    for p in (descriptor.get("messaging") or {}).get("ports") or []:
        if isinstance(p, dict) and p.get("name") == "rmr-route" and isinstance(p.get("port"), int):
            return int(p["port"])
    return None


async def run_e2term(rt: RicRuntime, stop: asyncio.Event) -> None:
    from octoric.ric import nodes
    from octoric.ric.e2term import E2term, E2termConfig

    sdl, watch = await _open_sdl(rt, "e2term", [nodes.NS, nodes.RNIB_NS])
    ep = _endpoint(rt, "e2term", rt.ric.e2term_rmr_port)
    e2cfg = E2termConfig(
        rt.ric.bind_address,
        rt.ric.e2_port,
        rt.transport,
        setup_timeout_s=rt.ric.e2_setup_timeout_s,
        read_timeout_s=rt.ric.e2_read_timeout_s,
        max_half_open=rt.ric.e2_max_half_open,
        idle_takeover_s=rt.ric.e2_idle_takeover_s,
        submgr_endpoint=rt.platform_endpoints().submgr,
    )
    e2t = E2term(e2cfg, sdl, ep)
    # the same recent values, and a histogram since start (for /metrics)
    forward = BucketedLatencies(e2t.stats.forward_latency_us.maxlen or 100_000)
    e2t.stats.forward_latency_us = forward
    await e2t.start()
    realtime.freeze_startup_heap()  # no full collection walks the start-up heap on the path

    def stats() -> dict[str, Any]:
        d = _stats_dict(e2t.stats, ep.counters, _sdl_stats(sdl))
        d["connected_nodes"] = len(e2t.sessions)
        # E2 PDU in -> RMR message out: a histogram since start, and the recent quantiles
        # (the last 100k indications) the benchmarks read
        d["forward_latency_seconds"] = forward.histogram()
        d["forward_latency_seconds_quantile"] = RecentQuantiles([v / 1e6 for v in forward])
        return d

    runner = await _serve_http(
        [_metrics_route("octoric_e2term", stats)], rt.ric.bind_address, rt.ric.e2term_http_port,
        sdl, rt.api_token, rt.ric.allowed_hosts,
    )  # fmt: skip
    await stop.wait()
    await e2t.stop()
    await runner.cleanup()
    ep.close()
    await _close_sdl(sdl, watch)


def submgr_app(rt: RicRuntime, sdl: Sdl, sm: Submgr, ep: Any) -> web.Application:
    """submgr's HTTP application (``ep``: its RMR endpoint, for /metrics)."""
    metrics = _metrics_route(
        "octoric_submgr",
        lambda: {
            **_stats_dict(sm.stats, ep.counters, _sdl_stats(sdl)), "subscriptions": len(sm.subs)
        },
    )  # fmt: skip
    return build_app([*sm.routes(), metrics], sdl, rt.api_token)


async def run_submgr(rt: RicRuntime, stop: asyncio.Event) -> None:
    from octoric.ric import submgr as submgr_mod
    from octoric.ric.submgr import Submgr

    sdl, watch = await _open_sdl(rt, "submgr", [submgr_mod.NS])
    ep = _endpoint(rt, "submgr", rt.ric.submgr_rmr_port)
    http = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=3))
    rtmgr_url = f"http://{HOST}:{rt.ric.rtmgr_rest_port}/ric/v1/handles/xapp-subscription-handle"
    headers = auth.bearer(rt.api_token)

    async def route_hook(sub_id: int, endpoint: str, add: bool) -> bool:
        host, _, port = endpoint.rpartition(":")
        body = {"address": host, "port": int(port), "subscription_id": sub_id}
        for _ in range(20):  # the route manager may still be starting
            try:
                method = "POST" if add else "DELETE"
                async with http.request(method, rtmgr_url, json=body, headers=headers) as r:
                    return r.status < 300
            except (aiohttp.ClientError, OSError):
                await asyncio.sleep(0.25)
        return False

    sm = Submgr(sdl, ep, route_hook, token=rt.api_token)  # outcomes carry the token
    await sm.start()
    runner = await _serve_app(
        submgr_app(rt, sdl, sm, ep), rt.ric.bind_address, rt.ric.submgr_rest_port,
        rt.ric.allowed_hosts,
    )  # fmt: skip
    await stop.wait()
    await sm.stop()
    await runner.cleanup()
    await http.close()
    ep.close()
    await _close_sdl(sdl, watch)


def a1_service(sdl: Sdl, ep: Any) -> A1Service:
    """a1-lite sending its policy requests through the RMR endpoint ``ep``."""
    from octoric.ric.a1 import A1Service

    return A1Service(sdl, lambda mtype, payload, sub_id: ep.send(mtype, payload, sub_id=sub_id))


def a1_app(rt: RicRuntime, sdl: Sdl, a1: A1Service, ep: Any) -> web.Application:
    """a1's HTTP application (``ep``: its RMR endpoint, for /metrics)."""
    metrics = _metrics_route(
        "octoric_a1", lambda: _stats_dict(a1.counters, ep.counters, _sdl_stats(sdl))
    )
    return build_app([*a1.routes(), metrics], sdl, rt.api_token)


async def a1_rmr_loop(a1: A1Service, ep: Any) -> None:
    """a1's RMR side: each message to the A1 service, its answers back to the sender."""
    while True:
        msg = await ep.receive()
        try:
            for mtype, payload in await a1.on_rmr(msg.mtype, msg.payload):
                ep.wh_send_to(msg.src, mtype, payload)
        finally:
            ep.release(msg)


async def run_a1(rt: RicRuntime, stop: asyncio.Event) -> None:
    from octoric.ric import a1 as a1_mod

    sdl, watch = await _open_sdl(rt, "a1", [a1_mod.NS])
    ep = _endpoint(rt, "a1", rt.ric.a1_rmr_port)
    a1 = a1_service(sdl, ep)

    task = asyncio.create_task(a1_rmr_loop(a1, ep))
    runner = await _serve_app(
        a1_app(rt, sdl, a1, ep), rt.ric.bind_address, rt.ric.a1_rest_port, rt.ric.allowed_hosts
    )
    await stop.wait()
    task.cancel()
    await runner.cleanup()
    ep.close()
    await _close_sdl(sdl, watch)


RUNNERS = {"platform": run_platform, "e2term": run_e2term, "submgr": run_submgr, "a1": run_a1}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="octoric ric serve")
    ap.add_argument("component", choices=COMPONENTS)
    ap.add_argument("--state", required=True, help="the ric.json written by `octoric ric up`")
    args = ap.parse_args(argv)
    return serve(args.component, Path(args.state))


# what a warm spare (octoric.spare) of each component imports before it waits
PRELOAD = {
    "e2term": ("octoric.ric.e2term", "octoric.ric.nodes", "octoric.ric.rmr_endpoint"),
    "submgr": ("octoric.ric.submgr", "octoric.ric.rmr_endpoint"),
    "a1": ("octoric.ric.a1", "octoric.ric.rmr_endpoint"),
    "platform": ("octoric.ric.appmgr", "octoric.ric.rtmgr", "octoric.ric.rmr_endpoint"),
}


def _preload(component: str) -> None:
    import importlib

    for module in PRELOAD[component]:
        importlib.import_module(module)


def serve(component: str, state: Path) -> int:
    from octoric.spare import wait_if_spare

    octolog.configure(f"ric-{component}")
    wait_if_spare(lambda: _preload(component))
    # e2term is on the indication path (octoric/realtime.py); submgr, a1 and the platform are on
    # the subscription and policy paths the xApps wait on: left at normal priority beside a
    # 4-cell gNB on 2 cores, submgr answered so late that the xApps' subscriptions timed out
    # and churned (a 75 s testbed run never got the handover xApp's active, 2026-11-28)
    realtime.apply_from_env(component)
    rt = RicRuntime.read(state)

    async def go() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await RUNNERS[component](rt, stop)

    asyncio.run(go())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
