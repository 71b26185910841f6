"""Starting the embedded RIC: its four processes as supervisor components, plus status queries.

Used by ``octoric ric up`` and by ``octoric run`` (``octoric.deploy.embedded``). The runtime file
``<run_dir>/ric.json`` tells each process where Redis is and which ports to use;
``<state dir>/current.json`` (``state_dir()``) points to the RIC that is running now, for
``octoric ric status`` from any working directory.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import sys
import time
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from octoric import lifeline
from octoric.config import RicConfig
from octoric.contracts import auth
from octoric.e2sm.transport import resolve
from octoric.errors import OctoricError
from octoric.ric.services import COMPONENTS, HOST, RicRuntime, write_private
from octoric.supervisor import ChildProcess, RunContext


def state_dir() -> Path:
    """Where the running RIC leaves its pointers, the same from any working directory:
    ``$OCTORIC_STATE_DIR``, else ``$XDG_STATE_HOME/octoric``, else ``~/.local/state/octoric``."""
    explicit = os.environ.get("OCTORIC_STATE_DIR")
    if explicit:
        return Path(explicit).absolute()
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base).absolute() / "octoric"


def _current() -> Path:
    return state_dir() / "current.json"


def _http_ok(url: str, timeout: float = 0.5) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return bool(r.status < 300)
    except OSError:
        return False


def busy_port_check(ric: RicConfig) -> None:
    """Fail at once, naming the port and its setting, when one the RIC needs is taken (each RMR
    endpoint also listens on its port + 1), instead of a process that dies and restarts."""
    import socket

    wanted: list[tuple[int, str]] = []
    for name, value in asdict(ric).items():
        if name.endswith("_port") and isinstance(value, int):
            wanted.append((value, f"ric.{name}"))
            if name.endswith("_rmr_port"):
                wanted.append((value + 1, f"ric.{name} + 1, its route port"))
    for port, what in wanted:
        with socket.socket() as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind((ric.bind_address, port))
            except OSError as e:
                holder = lifeline.describe_holder(port)
                who = (
                    f"held by {holder[0]}"
                    if holder is not None
                    else f"is another octoric running? `ss -ltnp 'sport = :{port}'` names the owner"
                )
                raise OctoricError(
                    f"port {port} ({what}) on {ric.bind_address} is in use ({e.strerror}): "
                    f"{who}; choose another with --set {what.split()[0]}=PORT"
                ) from None


class RicComponent:
    """The embedded RIC as one supervisor component: four child processes, started in order."""

    name = "ric"

    def __init__(self) -> None:
        self.children: list[ChildProcess] = []
        self.rt: RicRuntime | None = None
        self.summary: dict[str, Any] = {}
        self._poll: asyncio.Task[None] | None = None

    async def start(self, ctx: RunContext) -> None:
        ric = ctx.config.ric
        busy_port_check(ric)
        self.rt = RicRuntime(
            ric,
            ctx.redis_host,
            ctx.redis_port,
            str(ctx.run_dir.resolve()),
            resolve(ric.e2_transport),
            secrets.token_hex(32),  # this run's route key
            os.environ.get(auth.TOKEN_ENV) or auth.new_token(),  # this run's API token
            ctx.redis_auth.username,
            ctx.redis_auth.password_file,
        )
        state = ctx.run_dir / "ric.json"
        self.rt.write(state)
        write_private(ctx.run_dir / auth.TOKEN_FILE, self.rt.api_token + "\n")
        _current().parent.mkdir(parents=True, exist_ok=True)
        _current().write_text(json.dumps({"state": str(state.resolve())}))
        for comp in COMPONENTS:
            child = ChildProcess(
                f"ric-{comp}",
                [sys.executable, "-m", "octoric.ric.services", comp, "--state", str(state)],
                max_restarts=5,  # as Kubernetes restarts a platform pod; state is in Redis
                # e2term is on the indication path (what it misses while it restarts is
                # lost), so it restarts from a warm spare (octoric.spare)
                spare=comp == "e2term" and ctx.config.warm_spares,
            )
            await child.start(ctx)
            self.children.append(child)
            url = f"http://{HOST}:{self.rt.http_port(comp)}/ric/v1/health/alive"
            deadline = time.monotonic() + 90  # generous: a loaded 2-core CI machine
            while not await asyncio.to_thread(_http_ok, url):
                why = child.failed()
                if why:
                    raise OctoricError(why)
                if time.monotonic() > deadline:
                    raise OctoricError(f"ric {comp} did not become healthy in 90 s")
                await asyncio.sleep(0.1)
        self._poll = asyncio.create_task(self._poll_status())

    async def _poll_status(self) -> None:
        assert self.rt is not None
        while True:
            try:
                self.summary = await ric_status(self.rt)
            except Exception as e:  # status is best effort; the run goes on
                self.summary = {"error": str(e)}
            await asyncio.sleep(1.0)

    async def stop(self) -> None:
        if self._poll:
            self._poll.cancel()
        for child in reversed(self.children):
            await child.stop()
        if _current().exists():
            _current().unlink()

    def status(self) -> str:
        s = self.summary
        if not s or "error" in s:
            return "ric starting"
        up = sum(1 for n in s["nodes"] if n["connected"])
        return f"ric {up} nodes, {len(s['subscriptions'])} subs, {len(s['xapps'])} xApps"

    def report(self) -> dict[str, Any]:
        return {
            "components": {c.name: c.report() for c in self.children},
            "transport": self.rt.transport if self.rt else None,
            "last_status": self.summary,
        }

    def failed(self) -> str | None:
        for c in self.children:
            why = c.failed()
            if why:
                return why
        return None


@dataclass
class Health:
    component: str
    url: str
    healthy: bool


@dataclass
class RicStatus:
    nodes: list[dict[str, Any]] = field(default_factory=list)
    subscriptions: list[dict[str, Any]] = field(default_factory=list)
    xapps: list[dict[str, Any]] = field(default_factory=list)
    routes: list[str] = field(default_factory=list)
    health: list[Health] = field(default_factory=list)


async def ric_status(rt: RicRuntime) -> dict[str, Any]:
    from octoric.ric import appmgr, nodes, submgr
    from octoric.ric.sdl import Sdl

    sdl = Sdl(rt.redis_host, rt.redis_port, auth=rt.redis_auth())
    try:
        st = RicStatus()
        for n in await nodes.load_all(sdl):
            st.nodes.append(
                {
                    "meid": n.meid,
                    "connected": n.connected,
                    "peer": n.peer,
                    "transport": n.transport,
                    "setups": n.setups,
                    "ran_functions": [
                        {"id": f.ran_function_id, "oid": f.oid, "revision": f.revision}
                        for f in n.ran_functions
                    ],
                }
            )
        for v in (await sdl.all_json(submgr.NS, "sub.")).values():
            st.subscriptions.append(
                {
                    "e2_instance_id": v["instance_id"],
                    "meid": v["meid"],
                    "ran_function_id": v["ran_function_id"],
                    "state": v["state"],
                    "clients": [f"{c['host']}:{c['rmr_port']}" for c in v["clients"]],
                }
            )
        for v in (await sdl.all_json(appmgr.NS)).values():
            st.xapps.append(
                {
                    "name": v["name"],
                    "instance": v["instance"],
                    "rmr": v["rmr_endpoint"],
                    "http": v["http_endpoint"],
                }
            )
    finally:
        await sdl.close()
    table = await asyncio.to_thread(
        _get_text, f"http://{HOST}:{rt.ric.rtmgr_rest_port}/ric/v1/routes"
    )
    st.routes = [ln for ln in (table or "").splitlines() if ln.startswith("mse|")]
    for comp in COMPONENTS:
        # ready, not just alive: a component that cannot reach the SDL is not healthy
        url = f"http://{HOST}:{rt.http_port(comp)}/ric/v1/health/ready"
        st.health.append(Health(comp, url, await asyncio.to_thread(_http_ok, url)))
    return asdict(st)


def _get_text(url: str) -> str | None:
    try:
        with urllib.request.urlopen(url, timeout=1) as r:
            return str(r.read().decode())
    except OSError:
        return None


def current_runtime() -> RicRuntime:
    if not _current().exists():
        raise OctoricError("no embedded RIC is running here (start one with `octoric ric up`)")
    state = Path(json.loads(_current().read_text())["state"])
    if not state.exists():
        raise OctoricError(f"the running RIC's state file {state} is gone; restart the RIC")
    return RicRuntime.read(state)
