"""``octoric ric``: up, down, status, nodes, subs (and ``serve``, which the launcher uses)."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from octoric import config as cfgmod
from octoric.errors import OctoricError
from octoric.ric.launcher import state_dir


def _pidfile() -> Path:
    return state_dir() / "ric.pid"


def _logfile() -> Path:
    return state_dir() / "ric.log"


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("ric", help="the embedded near-RT RIC (up, down, status, nodes, subs)")
    rs = p.add_subparsers(dest="ric_command", metavar="ACTION", required=True)

    up = rs.add_parser("up", help="start Redis and the RIC (e2term, submgr, a1, appmgr, rtmgr)")
    up.add_argument("-c", "--config", help="YAML config (the `octoric run` format)")
    up.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a config key")
    up.add_argument("--detach", action="store_true", help="run in the background")
    up.add_argument("--duration", type=float, help="stop after SECONDS")
    up.set_defaults(func=_up)

    down = rs.add_parser("down", help="stop a RIC started with --detach")
    down.set_defaults(func=_down)

    st = rs.add_parser("status", help="nodes, RAN functions, subscriptions, xApps, routes")
    st.add_argument("--json", action="store_true")
    st.set_defaults(func=_status)

    nd = rs.add_parser("nodes", help="connected E2 nodes")
    nd.set_defaults(func=_nodes)
    sb = rs.add_parser("subs", help="E2 subscriptions")
    sb.set_defaults(func=_subs)

    sv = rs.add_parser("serve", help="run one RIC component (used by `ric up`)")
    sv.add_argument("component", choices=["platform", "e2term", "submgr", "a1"])
    sv.add_argument("--state", required=True)
    sv.set_defaults(func=_serve)


def _up(args: argparse.Namespace) -> int:
    overrides = list(args.set or [])
    if args.duration is not None:
        overrides.append(f"duration={args.duration}")
    cfg = cfgmod.load(args.config, overrides)
    if args.detach:
        return _detach(args)
    from octoric import runner
    from octoric.ric.launcher import RicComponent

    return runner.run(cfg, lambda ctx: [RicComponent()], live=True)


def _detach(args: argparse.Namespace) -> int:
    if _pidfile().exists() and _alive(int(_pidfile().read_text())):
        raise OctoricError(f"a RIC is already running (pid {_pidfile().read_text().strip()})")
    argv = [sys.executable, "-m", "octoric.cli", "ric", "up"]
    if args.config:
        argv += ["-c", args.config]
    for s in args.set or []:
        argv += ["--set", s]
    if args.duration is not None:
        argv += ["--duration", str(args.duration)]
    _logfile().parent.mkdir(parents=True, exist_ok=True)
    with _logfile().open("ab") as log:
        p = subprocess.Popen(
            argv, stdout=log, stderr=log, stdin=subprocess.DEVNULL, start_new_session=True
        )
    _pidfile().write_text(str(p.pid))
    from octoric.ric.launcher import current_runtime

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if p.poll() is not None:
            raise OctoricError(f"the RIC exited with {p.returncode}; see {_logfile()}")
        try:
            current_runtime()
            health = asyncio.run(_fetch_status())["health"]
            assert isinstance(health, list)
            if all(h["healthy"] for h in health):
                print(f"RIC up (pid {p.pid}); logs: {_logfile()}; stop with `octoric ric down`")
                return 0
        except OctoricError:
            pass
        time.sleep(0.3)
    raise OctoricError(f"the RIC did not become healthy in 60 s; see {_logfile()}")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _down(args: argparse.Namespace) -> int:
    if not _pidfile().exists():
        print(f"no detached RIC to stop (no {_pidfile()})")
        return 0
    pid = int(_pidfile().read_text())
    if _alive(pid):
        os.kill(pid, signal.SIGTERM)
        for _ in range(300):
            if not _alive(pid):
                break
            time.sleep(0.1)
        else:
            os.killpg(pid, signal.SIGKILL)
    _pidfile().unlink()
    print(f"RIC stopped (pid {pid})")
    return 0


async def _fetch_status() -> dict[str, object]:
    from octoric.ric.launcher import current_runtime, ric_status

    return await ric_status(current_runtime())


def _status(args: argparse.Namespace) -> int:
    s = asyncio.run(_fetch_status())
    if args.json:
        print(json.dumps(s, indent=2))
        return 0
    _print_nodes(s)
    _print_subs(s)
    xapps = s["xapps"]
    assert isinstance(xapps, list)
    print(f"xApps: {', '.join(x['name'] for x in xapps) or 'none registered'}")
    routes = s["routes"]
    assert isinstance(routes, list)
    print(f"routes: {len(routes)} entries")
    health = s["health"]
    assert isinstance(health, list)
    print(
        "health: "
        + ", ".join(f"{h['component']} {'ok' if h['healthy'] else 'DOWN'}" for h in health)
    )
    return 0


def _print_nodes(s: dict[str, object]) -> None:
    nodes = s["nodes"]
    assert isinstance(nodes, list)
    print(f"{'node':<24} {'state':<12} {'peer':<22} RAN functions")
    for n in nodes:
        funcs = ", ".join(f"{f['id']} ({f['oid']})" for f in n["ran_functions"])
        state = "connected" if n["connected"] else "lost"
        print(f"{n['meid']:<24} {state:<12} {n['peer']:<22} {funcs}")
    if not nodes:
        print("(no E2 nodes yet)")


def _print_subs(s: dict[str, object]) -> None:
    subs = s["subscriptions"]
    assert isinstance(subs, list)
    print(f"{'E2 instance':<12} {'node':<24} {'RAN fn':<7} {'state':<10} clients")
    for x in subs:
        print(
            f"{x['e2_instance_id']:<12} {x['meid']:<24} {x['ran_function_id']:<7} "
            f"{x['state']:<10} {', '.join(x['clients'])}"
        )
    if not subs:
        print("(no subscriptions)")


def _nodes(args: argparse.Namespace) -> int:
    _print_nodes(asyncio.run(_fetch_status()))
    return 0


def _subs(args: argparse.Namespace) -> int:
    _print_subs(asyncio.run(_fetch_status()))
    return 0


def _serve(args: argparse.Namespace) -> int:
    from octoric.ric.services import serve

    return serve(args.component, Path(args.state))
