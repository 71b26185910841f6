"""A test xApp on unmodified ricxappframe 3.2.2 that handles A1 policies: every
A1_POLICY_REQ (20010) is printed as JSON and answered with A1_POLICY_RESP (20011) by RMR
return-to-sender, status OK (or ERROR when the policy says {"reject": true}).

Usage: policy_xapp.py RMR_PORT
"""

from __future__ import annotations

import json
import sys
import time

import octoric.rmr  # noqa: F401  (our librmr_si.so, before ricxappframe binds it)

from ricxappframe.xapp_frame import RMRXapp, rmr


def main() -> int:
    port = int(sys.argv[1])

    def on_policy(xapp: RMRXapp, summary: dict, sbuf: object) -> None:
        req = json.loads(summary[rmr.RMR_MS_PAYLOAD])
        print(
            json.dumps({"event": "policy", "sub_id": summary[rmr.RMR_MS_SUB_ID], **req}), flush=True
        )
        status = "ERROR" if req["payload"].get("reject") else "OK"
        if req["operation"] == "DELETE":
            status = "DELETED"
        answer = {
            "policy_type_id": req["policy_type_id"],
            "policy_instance_id": req["policy_instance_id"],
            "handler_id": "policy_xapp",
            "status": status,
        }
        xapp.rmr_rts(sbuf, new_payload=json.dumps(answer).encode(), new_mtype=20011)
        xapp.rmr_free(sbuf)

    def default(xapp: RMRXapp, summary: dict, sbuf: object) -> None:
        xapp.rmr_free(sbuf)

    xapp = RMRXapp(default, rmr_port=port, use_fake_sdl=False)
    xapp.register_callback(on_policy, 20010)
    xapp.run(thread=True)
    print(json.dumps({"event": "started"}), flush=True)
    while True:
        time.sleep(1)


if __name__ == "__main__":
    sys.exit(main())
