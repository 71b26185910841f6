"""An application server that learns of its users' handovers from octoric's handover xApp
and adapts, as Octopus (ToN'22) proposes: a video server that holds its bitrate through a
handover (DASH-H) and a TCP-like sender that keeps its bandwidth estimate (BBR-H).

It uses only ``octoric.xapps.handover.client`` (standard library; a real server copies that
one file): it registers a signed webhook with the xApp, verifies every delivery, keeps per-UE
state, and prints what it would decide. Beside ``make run``::

    make run RUN_ARGS='--set xapps.controls.handover.webhook_allow=["127.0.0.1:9000"]'
    .venv/bin/python examples/handover_server.py --port 9000  # the run's token from build/run
    .venv/bin/python examples/handover_server.py --ue 1000 --ue 1001 --stream   # SSE instead

The handover xApp delivers to loopback and private addresses only where its
``controls.webhook_allow`` lists them (docs/handover.md), hence the ``--set``. Ctrl-C deletes
the subscription. The token is the run's (``<run folder>/api-token``;
``--token`` or ``$OCTORIC_API_TOKEN`` otherwise).
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import signal
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout
from xapps.handover import client

XAPP = "http://127.0.0.1:8091"  # the handover xApp's HTTP port (contracts.ports)
OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def find_token(arg: str | None) -> str:
    if arg:
        return arg
    if os.environ.get("OCTORIC_API_TOKEN"):
        return os.environ["OCTORIC_API_TOKEN"]
    runs = sorted(Path("build/run").glob("*/api-token"), key=lambda p: p.stat().st_mtime)
    if not runs:
        raise SystemExit("no API token: start `make run` first, or give --token")
    return runs[-1].read_text().strip()


def call(method: str, url: str, token: str, body: Any = None) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data, {"Authorization": f"Bearer {token}"}, method=method)
    try:
        with OPENER.open(req, timeout=5) as r:
            raw = r.read()
            return r.status, json.loads(raw) if raw else None
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")
    except OSError as e:
        raise SystemExit(
            f"the handover xApp at {url} is not reachable ({e}): is `make run` up?"
        ) from None


class Server:
    """What a video server keeps: its state and, per UE, the bitrate it streams at."""

    def __init__(self) -> None:
        self.state = client.HandoverState()
        self.bitrate_kbps: dict[int, float] = {}
        self.lock = threading.Lock()

    def on_event(self, ev: dict[str, Any]) -> None:
        with self.lock:
            if not self.state.on_event(ev):
                return  # the same event again (another path, a retry)
            ue, kind = ev["ue"], ev["event"]
            line = f"UE {ue}: handover {kind}"
            if kind == "start":
                line += f" {ev.get('source_cell')} -> {ev.get('target_cell') or '?'}"
            if kind in ("complete", "failure"):
                line += f" after {ev.get('interruption_ms', '?')} ms at the RAN"
                # what DASH-H would do if the player's ABR now asked to halve the bitrate
                cur = self.bitrate_kbps.setdefault(ue, 4000.0)
                keep = client.dash_h_bitrate(cur, cur / 2, True, buffer_s=6.0)
                line += f"; DASH-H: {'keep' if keep == cur else 'lower to'} {keep:.0f} kbit/s"
            if kind == "ping_pong":
                line += " (back where it came from)"
            print(line, flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--xapp", default=XAPP, help="the handover xApp's HTTP base URL")
    ap.add_argument("--token", help="the run's API token (default: the latest run's)")
    ap.add_argument("--ue", type=int, action="append", default=[], help="only these UEs")
    ap.add_argument("--stream", action="store_true", help="follow the SSE stream, no webhook")
    ap.add_argument("--port", type=int, default=9000, help="the webhook's port on 127.0.0.1")
    args = ap.parse_args()
    token = find_token(args.token)
    server = Server()
    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    if args.stream:
        q = "&".join(f"ue={u}" for u in args.ue)
        sse = client.SseClient(f"{args.xapp}/handover/v1/events?{q}", token=token)

        def follow() -> None:
            for e in sse.events():
                server.on_event(e)

        threading.Thread(target=follow, daemon=True).start()
        print("following the handover event stream; Ctrl-C stops", flush=True)
        stop.wait()
        sse.stop()
        return 0
    secret = secrets.token_hex(32)
    recv = client.WebhookReceiver(secret, server.on_event, port=args.port)
    body = {"url": recv.url, "secret": secret, "filters": {"ues": args.ue}}
    code, made = call("POST", f"{args.xapp}/handover/v1/subscriptions", token, body)
    if code == 403 and "target_not_allowed" in str(made):  # loopback needs the allow-list
        recv.close()
        allow = f'xapps.controls.handover.webhook_allow=["127.0.0.1:{args.port}"]'
        raise SystemExit(f"{made}\nstart the run with --set '{allow}'")
    if code != 201:
        raise SystemExit(f"subscription refused ({code}): {made}")
    print(f"webhook {made['id']} at {recv.url}; waiting for handovers (Ctrl-C stops)", flush=True)
    try:
        stop.wait()
    finally:
        call("DELETE", f"{args.xapp}/handover/v1/subscriptions/{made['id']}", token)
        recv.close()
        if recv.rejected:
            print(f"{recv.rejected} deliveries did not verify and were refused", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
