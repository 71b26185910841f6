"""A complete KPM xApp on plain O-RAN SC ricxappframe: it subscribes to one gNB's E2SM-KPM
report service through the RIC's subscription REST API (submgr) and prints every indication,
one line per UE (docs/ric.md, "A KPM xApp in one file").

    .venv/bin/python examples/kpm_subscriber.py gnb_001_001_00019b --embedded

``--embedded`` restarts it in the environment Kubernetes gives an xApp on O-RAN SC, made for
the RIC that ``octoric ric up`` runs on this machine; in a pod that environment is there.
"""

import argparse
import json
import os
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import requests
from ricxappframe.xapp_frame import RMRXapp, rmr

from octoric.contracts import kpm as K  # the KPM measurement names
from octoric.contracts.message_types import RIC_INDICATION  # 12050
from octoric.e2sm import kpm  # octoric's E2SM-KPM encoders (event trigger, action definition)
from octoric.e2sm.indication import parse_ric_indication  # the OCC xApp's indication decoder

MEASUREMENTS = [K.PRB_USED_DL, K.MCS_DL, K.UE_THP_DL, K.DL_BUFFER_BYTES]
ap = argparse.ArgumentParser(description="print a gNB's KPM indications")
ap.add_argument("meid", help="the gNB (`octoric ric nodes` lists them)")
ap.add_argument("--rmr-port", type=int, default=4620)
ap.add_argument("--http-port", type=int, default=8120)
ap.add_argument("--count", type=int, default=0, help="stop after this many indications")
ap.add_argument("--embedded", action="store_true", help="join the RIC running here")
args = ap.parse_args()

if args.embedded:  # routes, route key, API token, submgr's URL, appmgr (deploy/xapp_env.py)
    from octoric.deploy.xapp_env import descriptor, xapp_environment
    from octoric.ric.launcher import current_runtime

    cfg = Path(tempfile.mkdtemp()) / "config-file.json"  # the xApp descriptor
    cfg.write_text(json.dumps(descriptor("kpm-subscriber", args.rmr_port, ["RIC_INDICATION"], [])))
    rt = current_runtime()
    env = xapp_environment(rt, "kpm-subscriber", args.rmr_port, args.http_port, cfg)
    os.execve(sys.executable, [sys.executable, *[a for a in sys.argv if a != "--embedded"]], env)


class Outcome(BaseHTTPRequestHandler):  # submgr POSTs the subscription's outcome here
    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        print("subscribed:", json.dumps(body["SubscriptionInstances"]), flush=True)
        self.send_response(200)
        self.end_headers()

    def log_message(self, *_: object) -> None:
        pass


received = threading.Semaphore(0)


def on_indication(xapp: RMRXapp, summary: dict, sbuf: object) -> None:
    ind, cols = parse_ric_indication(summary[rmr.RMR_MS_PAYLOAD])
    meid = summary[rmr.RMR_MS_MEID].decode()
    per_ue = cols.values.mean(axis=2)  # UE x measurement, the mean over the report's granules
    for ue, row in zip(cols.ue_ids, per_ue, strict=True):
        m = dict(zip(cols.metrics, row, strict=True))
        print(f"{meid} sn={ind.sn} ue={ue.amf_ue_ngap_id} prb={m[K.PRB_USED_DL]:.1f} "
              f"mcs={m[K.MCS_DL]:.0f} thp={m[K.UE_THP_DL] / 1000:.2f}Mbit/s "
              f"buffer={m[K.DL_BUFFER_BYTES]:.0f}B", flush=True)  # fmt: skip
    xapp.rmr_free(sbuf)
    received.release()


xapp = RMRXapp(lambda xapp, summary, sbuf: xapp.rmr_free(sbuf), rmr_port=args.rmr_port)
xapp.register_callback(on_indication, RIC_INDICATION)
xapp.run(thread=True)
server = HTTPServer(("127.0.0.1", args.http_port), Outcome)
threading.Thread(target=server.serve_forever, daemon=True).start()

trigger = kpm.encode_kpm(kpm.KpmEventTrigger(1000))  # a report every 1000 ms
action = kpm.encode_kpm(kpm.action_definition_style4(MEASUREMENTS, granularity_ms=100))
url = os.environ["SUBMGR_URL"]  # O-RAN SC's submgr service; set by the platform
auth = {"Authorization": f"Bearer {os.environ['OCTORIC_API_TOKEN']}"}
body = {
    "ClientEndpoint": {"Host": "127.0.0.1", "HTTPPort": args.http_port, "RMRPort": args.rmr_port},
    "Meid": args.meid,
    "RANFunctionID": kpm.RAN_FUNCTION_ID,  # 2: E2SM-KPM
    "E2SubscriptionDirectives": {"E2TimeoutTimerValue": 2, "E2RetryCount": 2,
                                 "RMRRoutingNeeded": True},
    "SubscriptionDetails": [{"XappEventInstanceId": 1, "EventTriggers": list(trigger),
                             "ActionToBeSetupList": [{"ActionID": 1, "ActionType": "report",
                                                      "ActionDefinition": list(action),
                                                      "SubsequentAction": {
                                                          "SubsequentActionType": "continue",
                                                          "TimeToWait": "zero"}}]}],
}  # fmt: skip
sid = requests.post(url, json=body, headers=auth, timeout=5).json()["SubscriptionId"]
try:
    n = 0
    while not args.count or n < args.count:
        received.acquire()
        n += 1
except KeyboardInterrupt:
    pass
requests.delete(f"{url}/{sid}", headers=auth, timeout=5)  # the gNB stops reporting
xapp.deregister()  # appmgr forgets us (RMRXapp.stop() would also wait 10 s)
os._exit(0)
