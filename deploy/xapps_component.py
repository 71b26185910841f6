"""The xApps in ``octoric run``: one supervisor component per enabled xApp that exists
(``xapps.enabled``), each a child process in the RIC's environment (``deploy.xapp_env``,
built from ``<run_dir>/ric.json``), restarted if it dies. Ports are chosen when the component
is built, before anything starts, so the simulator learns the OCC xApp's real port.

``XappComponent.status()`` is the live-summary fragment, from the xApp's status endpoint
polled once a second. For occ (``/occ/v1/status``) it shows the per-UE target rates by UE
("occ 8 UEs, ABW Mbit/s ue1000 12.3 ue1001 8.1 ..."); for handover (``/handover/v1/status``)
the handovers it saw ("handover 12 HO starts, 11 complete, 2 subs"); then, only when there are
any, what needs a look (``attention()``: rejected indications, failed RMR sends, shed
messages). A message nobody subscribes to (RMR "no route") is not a failure: it is said as
such, without a growing count. ``abw_by_ue()`` gives OCC's rates keyed by
AMF-UE-NGAP-ID, so a summary can set them beside the simulator's true capacity per UE.
``report()`` holds the final per-UE state.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import octoric.xapps
from octoric.contracts import message_types, ports
from octoric.errors import OctoricError
from octoric.supervisor import ChildProcess, RunContext

log = logging.getLogger("xapps.run")
XAPPS_DIR = Path(octoric.xapps.__file__).resolve().parent
_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


@dataclass(frozen=True)
class XappSpec:
    name: str
    module: str  # python -m <module>
    rmr_port: int
    http_port: int
    status_path: str
    # controls that name a file of this run: (control, file name in the run folder)
    run_files: tuple[tuple[str, str], ...] = ()

    @property
    def descriptor_file(self) -> Path:
        return XAPPS_DIR / self.name / "config-file.json"


# xApps that run as several replicas sharing the E2 nodes (--set xapps.replicas.<name>=N)
SHARDED = ("occ",)
MAX_REPLICAS = 16

# Embedded defaults (contracts.ports).
KNOWN: dict[str, XappSpec] = {
    "occ": XappSpec("occ", "octoric.xapps.occ", *ports.XAPP_PORTS["occ"], "/occ/v1/status"),
    "handover": XappSpec(
        "handover",
        "octoric.xapps.handover",
        *ports.XAPP_PORTS["handover"],
        "/handover/v1/status",
        run_files=(("event_log", "handover-events.jsonl"),),
    ),
    "octopus": XappSpec(
        "octopus", "octoric.xapps.octopus", *ports.XAPP_PORTS["octopus"], "/octopus/v1/status"
    ),
}


def descriptor_for(
    spec: XappSpec, rmr_port: int, http_port: int, controls: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The xApp's descriptor with the ports of this run and ``controls`` over its own."""
    d: dict[str, Any] = json.loads(spec.descriptor_file.read_text())
    by_name = {"http": http_port, "rmr-data": rmr_port, "rmr-route": rmr_port + 1}
    for p in (d.get("messaging") or {}).get("ports") or []:
        if p.get("name") in by_name:
            p["port"] = by_name[p["name"]]
    if controls:
        d["controls"] = {**(d.get("controls") or {}), **controls}
    return d


def port_free(port: int, host: str = "127.0.0.1") -> bool:
    import socket

    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def pick_ports(spec: XappSpec) -> tuple[int, int]:
    """The ARCHITECTURE.md ports (RMR, RMR + 1 for routes, HTTP) when free; otherwise free
    ones (e.g. a second run on this machine), which ``<run_dir>/xapps.json`` records."""
    if all(port_free(p) for p in (spec.rmr_port, spec.rmr_port + 1, spec.http_port)):
        return spec.rmr_port, spec.http_port
    from octoric.redis_server import free_port

    for _ in range(100):
        rmr = free_port()
        if rmr < 65000 and port_free(rmr + 1):
            http = free_port()
            if http not in (rmr, rmr + 1):
                log.warning(
                    "%s: default ports %d/%d busy, using RMR %d, HTTP %d",
                    spec.name, spec.rmr_port, spec.http_port, rmr, http,
                )  # fmt: skip
                return rmr, http
    raise OctoricError(f"{spec.name}: no free ports")


def _free_ports() -> tuple[int, int]:
    """Free RMR (and RMR + 1) and HTTP ports."""
    from octoric.redis_server import free_port

    for _ in range(100):
        rmr = free_port()
        if rmr < 65000 and port_free(rmr + 1):
            http = free_port()
            if http not in (rmr, rmr + 1):
                return rmr, http
    raise OctoricError("no free ports")


def _get_json(url: str, timeout: float = 1.0) -> Any:
    with _NO_PROXY.open(url, timeout=timeout) as r:
        return json.loads(r.read())


def _record_ports(run_dir: Path, name: str, rmr: int, http: int, status_url: str) -> None:
    """``<run_dir>/xapps.json``: where each xApp of this run listens (for other components,
    e.g. the simulator registering its OCC-fed flows)."""
    path = run_dir / "xapps.json"
    try:
        data = json.loads(path.read_text()) if path.exists() else {}
    except ValueError:
        data = {}
    data[name] = {"rmr_port": rmr, "http_port": http, "status_url": status_url}
    path.write_text(json.dumps(data, indent=2))


class XappComponent:
    """One xApp process under the supervisor."""

    def __init__(
        self, spec: XappSpec, rmr_port: int | None = None, http_port: int | None = None,
        replica: int | None = None,
    ) -> None:  # fmt: skip
        self.spec = spec
        # replica i of a sharded xApp: ``occ-i`` (the first keeps the xApp's own name and ports:
        # senders and tools find it as before)
        self.replica = replica
        self.key = spec.name if not replica else f"{spec.name}-{replica}"
        self.name = f"xapp-{self.key}"
        if rmr_port is None or http_port is None:
            rmr_port, http_port = pick_ports(spec) if not replica else _free_ports()
        self.rmr_port, self.http_port = rmr_port, http_port
        self.child: ChildProcess | None = None
        self.last_status: dict[str, Any] = {}
        self._unrouted: tuple[int, ...] = ()  # RMR types sent with no route since the last poll
        self._poll: asyncio.Task[None] | None = None

    @property
    def status_url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}{self.spec.status_path}"

    async def start(self, ctx: RunContext) -> None:
        from octoric.deploy.xapp_env import xapp_environment
        from octoric.ric.services import RicRuntime

        state = ctx.run_dir / "ric.json"
        if not state.exists():
            raise OctoricError(
                f"{self.name}: no embedded RIC runtime at {state} (start the RIC first)"
            )
        rt = RicRuntime.read(state)
        if self.spec.name == "octopus":
            await asyncio.to_thread(ensure_octopus_policy_type, rt)
        _record_ports(ctx.run_dir, self.key, self.rmr_port, self.http_port, self.status_url)
        cfg = ctx.run_dir / f"{self.key}-config-file.json"
        controls = {k: str(ctx.run_dir / f) for k, f in self.spec.run_files}
        controls.update(ctx.config.xapps.controls.get(self.spec.name, {}))
        d = descriptor_for(self.spec, self.rmr_port, self.http_port, controls)
        cfg.write_text(json.dumps(d, indent=2))
        env = xapp_environment(rt, self.spec.name, self.rmr_port, self.http_port, cfg)
        env.setdefault("OCTORIC_LOG_FORMAT", "json")
        if self.replica is not None:
            from octoric.xapps.occ.shards import ENV as REPLICA_ENV

            env[REPLICA_ENV] = f"{self.spec.name}-{self.replica}"
        argv = [sys.executable, "-m", self.spec.module,
                "--rmr-port", str(self.rmr_port), "--http-port", str(self.http_port)]  # fmt: skip
        self.child = ChildProcess(
            self.name, argv, env=env, max_restarts=5, spare=ctx.config.warm_spares
        )
        await self.child.start(ctx)
        self._poll = asyncio.create_task(self._poll_status())

    async def _poll_status(self) -> None:
        while True:
            with contextlib.suppress(OSError, ValueError):  # (re)starting: keep the last one
                now = await asyncio.to_thread(_get_json, self.status_url)
                self._unrouted = unrouted_since(self.last_status, now)
                self.last_status = now
            await asyncio.sleep(1.0)

    async def stop(self) -> None:
        if self._poll is not None:
            self._poll.cancel()
        with contextlib.suppress(OSError, ValueError):  # the final state, for the report
            self.last_status = await asyncio.to_thread(_get_json, self.status_url)
        if self.child is not None:
            await self.child.stop()

    def abw_by_ue(self) -> dict[int, float]:
        """Latest target rate (bit/s) per UE (AMF-UE-NGAP-ID)."""
        return {
            int(u["ue"]): float(u["target_bps"])
            for u in self.last_status.get("ues", [])
            if isinstance(u.get("target_bps"), (int, float))
        }

    def status(self) -> str:
        if self.child is None:
            return f"{self.key} -"
        if self.child.proc is None or self.child.proc.returncode is not None:
            return f"{self.key} down"
        if not self.last_status:
            return f"{self.key} starting"
        return "; ".join([self._what_it_does(), *attention(self.last_status, self._unrouted)])

    def _what_it_does(self) -> str:
        st = self.last_status
        if "policies" in st:  # the octopus xApp
            pols = st["policies"]
            on = sum(1 for p in pols if p.get("state") == "enforced")
            return f"{self.key} {len(pols)} policies, {on} enforced"
        subs = len(st.get("subscriptions") or [])
        if "ho_events" in st:  # the handover xApp: handovers of the RAN, not errors of its own
            ev = st["ho_events"]
            failed = int(ev.get("failure", 0))
            return (
                f"{self.key} {ev.get('start', 0)} HO starts, {ev.get('complete', 0)} "
                f"complete{f', {failed} HO failures' if failed else ''}, {subs} subs"
            )
        abw = self.abw_by_ue()
        if not abw:
            return f"{self.key} 0 UEs, {subs} subs"
        rates = " ".join(f"ue{u} {abw[u] / 1e6:.1f}" for u in sorted(abw)[:8])
        more = f" +{len(abw) - 8}" if len(abw) > 8 else ""
        return f"{self.key} {len(abw)} UEs, ABW Mbit/s {rates}{more}"

    def report(self) -> dict[str, Any]:
        s = self.last_status
        return {
            "process": self.child.report() if self.child else None,
            "rmr_port": self.rmr_port,
            "http_port": self.http_port,
            "ues": s.get("ues", []),
            "subscriptions": s.get("subscriptions", []),
            "flows": s.get("flows"),
            "counters": s.get("counters", {}),
            "rejected_indications": s.get("rejected_indications", {}),
            "ue_samples_per_s": s.get("ue_samples_per_s"),
            "latency_ms": s.get("latency_ms"),
            **({"ho_events": s["ho_events"], "detector": s.get("detector", {})}
               if "ho_events" in s else {}),
            **({"policies": s["policies"], "controls": s.get("controls", {})}
               if "policies" in s else {}),
        }  # fmt: skip

    def failed(self) -> str | None:
        return self.child.failed() if self.child else None


def attention(status: dict[str, Any], unrouted: tuple[int, ...] = ()) -> list[str]:
    """What in an xApp's status needs a look, as short phrases; none when all is well.
    ``unrouted``: RMR message types whose sends found no route since the last look (nobody
    subscribes to them, e.g. OCC's 30500 without a listener): a fact of the platform, not a
    fault, so said by type, never as a count that grows on a healthy row."""
    out = []
    for key, what in (("rejected_indications", "indications"), ("rejected", "messages")):
        rejected = {k: v for k, v in (status.get(key) or {}).items() if isinstance(v, int) and v}
        if rejected:
            why = ", ".join(f"{k} {v}" for k, v in sorted(rejected.items()))
            out.append(f"{sum(rejected.values())} {what} rejected ({why})")
    rmr = {k: v for k, v in (status.get("rmr") or {}).items() if isinstance(v, int) and v}
    failed = sum(v for k, v in rmr.items() if "_failed_" in k and not k.endswith("_no_route"))
    if failed:
        out.append(f"{failed} RMR sends failed")
    if status.get("overloaded"):
        out.append("overloaded (shedding messages)")
    if unrouted:
        names = ", ".join(f"{message_types.name(t)} ({t})" for t in unrouted)
        out.append(f"nobody subscribes to {names}")
    return out


def unrouted_since(before: dict[str, Any], now: dict[str, Any]) -> tuple[int, ...]:
    """RMR message types whose no-route count (``tx_<type>_failed_no_route``, xapps.base.shell)
    grew from one status to the next."""
    old, new = before.get("rmr") or {}, now.get("rmr") or {}
    grew = {
        int(k.split("_")[1])
        for k, v in new.items()
        if re.fullmatch(r"tx_\d+_failed_no_route", k) and isinstance(v, int) and v > old.get(k, 0)
    }
    return tuple(sorted(grew))


def ensure_octopus_policy_type(rt: Any) -> None:
    """Create A1 policy type 30500 in the run's a1 (as an operator would before using the
    octopus xApp); an existing one is left alone."""
    from octoric.contracts import a1, auth
    from octoric.contracts.octopus_policy import policy_type
    from octoric.contracts.schemas import OCTOPUS_POLICY_TYPE_ID

    path = a1.policy_type_path(OCTOPUS_POLICY_TYPE_ID)
    url = f"http://127.0.0.1:{rt.ric.a1_rest_port}{path}"
    headers = {"Content-Type": "application/json", **auth.bearer(rt.api_token)}
    try:
        with _NO_PROXY.open(urllib.request.Request(url, headers=headers), timeout=5):
            return  # there already
    except urllib.error.HTTPError as e:
        if e.code != 404:
            raise OctoricError(f"a1: GET policy type 30500 answered {e.code}") from None
    except OSError as e:
        raise OctoricError(f"a1 not reachable at {url}: {e}") from None
    body = json.dumps(policy_type()).encode()
    req = urllib.request.Request(url, data=body, headers=headers, method="PUT")
    try:
        with _NO_PROXY.open(req, timeout=5):
            log.info("A1 policy type 30500 (octopus-drop-policy) created")
    except urllib.error.HTTPError as e:
        raise OctoricError(f"a1 refused policy type 30500: {e.code} {e.read()[:300]!r}") from None


def components(ctx: RunContext) -> list[XappComponent]:
    out: list[XappComponent] = []
    for name in ctx.config.xapps.controls:
        if name not in ctx.config.xapps.enabled:
            raise OctoricError(
                f"xapps.controls.{name}: no such xApp in xapps.enabled "
                f"({', '.join(ctx.config.xapps.enabled) or 'none'})"
            )
    replicas = ctx.config.xapps.replicas
    for name, n in replicas.items():
        if name not in SHARDED:
            raise OctoricError(f"xapps.replicas.{name}: only {', '.join(SHARDED)} runs as "
                               "replicas")  # fmt: skip
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_REPLICAS:
            raise OctoricError(f"xapps.replicas.{name}: 1..{MAX_REPLICAS}, got {n!r}")
    for name in ctx.config.xapps.enabled:
        spec = KNOWN.get(name)
        if spec is None:
            log.info("xApp %s is enabled but not built yet; skipped", name)
            continue
        n = replicas.get(name, 1)
        if n == 1:
            out.append(XappComponent(spec))
            continue
        out += [XappComponent(spec, replica=i) for i in range(n)]
    return out
