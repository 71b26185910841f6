"""An external xApp that listens to OCC's per-UE available bandwidth (OCTORIC_ABW_REPORT,
RMR message type 30500), written on unmodified ricxappframe 3.2.2.

It gets the reports through the platform's routes: its descriptor lists
``OCTORIC_ABW_REPORT`` in ``rxMessages``; when ricxappframe registers the xApp with appmgr
(a couple of seconds after start), the route manager adds it to the 30500 route.

Beside ``make run`` (or ``octoric ric up``)::

    .venv/bin/python examples/abw_listener.py --embedded            # one line per report
    .venv/bin/python examples/abw_listener.py --embedded --json     # the raw JSON

``--embedded`` builds the environment an O-RAN SC pod would have (octoric.deploy.xapp_env)
for the RIC running here and restarts itself in it. On Kubernetes, deploy it with a
descriptor like the one ``--write-descriptor`` prints and run it without ``--embedded``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

NAME = "abw-listener"


def descriptor(rmr_port: int) -> dict[str, Any]:
    return {
        "name": NAME,
        "xapp_name": NAME,
        "version": "1.0.0",
        "containers": [{"name": NAME, "image": {"registry": "local", "name": NAME, "tag": "dev"}}],
        "messaging": {
            "ports": [
                {"name": "rmr-data", "container": NAME, "port": rmr_port,
                 "rxMessages": ["OCTORIC_ABW_REPORT"], "txMessages": [], "policies": [],
                 "description": "rmr data port"},
                {"name": "rmr-route", "container": NAME, "port": rmr_port + 1,
                 "description": "rmr route port"},
            ]
        },
    }  # fmt: skip


def embedded_env(rmr_port: int, http_port: int) -> dict[str, str]:
    """The environment to join the embedded RIC running on this machine."""
    from octoric.deploy.xapp_env import xapp_environment
    from octoric.ric.launcher import current_runtime

    cfg = Path(tempfile.mkdtemp(prefix="abw-listener-")) / "config-file.json"
    cfg.write_text(json.dumps(descriptor(rmr_port)))
    return xapp_environment(current_runtime(), NAME, rmr_port, http_port, cfg)


def summary_line(report: dict[str, Any]) -> str:
    ues = " ".join(
        f"ue{u['ue']}={(u['target_bps'] or 0) / 1e6:.2f}{'*' if u['fallback'] else ''}"
        for u in report.get("ues", [])
    )
    return f"{report.get('meid')} sn={report.get('sn')} t={report.get('t_ms')} Mbit/s: {ues}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rmr-port", type=int, default=4600)
    ap.add_argument("--http-port", type=int, default=8100)
    ap.add_argument("--embedded", action="store_true", help="join the RIC running here")
    ap.add_argument("--json", action="store_true", help="print each report's JSON")
    ap.add_argument("--count", type=int, default=0, help="exit after this many reports")
    ap.add_argument("--timeout", type=float, default=0, help="exit after this many seconds")
    ap.add_argument("--write-descriptor", action="store_true", help="print the descriptor")
    args = ap.parse_args()
    if args.write_descriptor:
        print(json.dumps(descriptor(args.rmr_port), indent=2))
        return 0
    if args.embedded and "CONFIG_FILE" not in os.environ:
        from octoric.errors import OctoricError

        try:
            env = embedded_env(args.rmr_port, args.http_port)
        except OctoricError as e:  # no RIC here: one line, not a traceback
            print(f"{NAME}: {e}", file=sys.stderr)
            return 2
        argv = [sys.executable, __file__, *[a for a in sys.argv[1:] if a != "--embedded"]]
        os.execve(sys.executable, argv, env)

    import octoric.rmr  # noqa: F401  (octoric's librmr_si.so, before ricxappframe)

    from ricxappframe.xapp_frame import RMRXapp, rmr

    from octoric.contracts.message_types import OCTORIC_ABW_REPORT

    seen = {"n": 0, "bad": 0}

    def on_report(xapp: RMRXapp, summary: dict[str, Any], sbuf: Any) -> None:
        try:
            report = json.loads(summary[rmr.RMR_MS_PAYLOAD])
            seen["n"] += 1
            print(json.dumps(report) if args.json else summary_line(report), flush=True)
        except ValueError as e:
            seen["bad"] += 1
            print(f"# undecodable report: {e}", file=sys.stderr, flush=True)
        finally:
            xapp.rmr_free(sbuf)

    def other(xapp: RMRXapp, summary: dict[str, Any], sbuf: Any) -> None:
        xapp.rmr_free(sbuf)

    xapp = RMRXapp(other, rmr_port=args.rmr_port, use_fake_sdl=False)
    xapp.register_callback(on_report, OCTORIC_ABW_REPORT)
    xapp.run(thread=True, rmr_timeout=1)
    print(
        f"# {NAME} listening on RMR {args.rmr_port} for OCTORIC_ABW_REPORT",
        file=sys.stderr,
        flush=True,
    )
    t_end = time.monotonic() + args.timeout if args.timeout else None
    while not (args.count and seen["n"] >= args.count):
        if t_end is not None and time.monotonic() > t_end:
            break
        time.sleep(0.05)
    sys.stdout.flush()
    # leave the platform's routes as we found them: appmgr drops the xApp and the route manager
    # its 30500 route (RMRXapp.stop() would too, after a 10 s wait)
    try:
        xapp.deregister()
    except Exception as e:  # the RIC went first: nothing to deregister from
        print(f"# {NAME}: deregistration failed: {e}", file=sys.stderr, flush=True)
    os._exit(0 if seen["n"] else 1)


if __name__ == "__main__":
    raise SystemExit(main())
