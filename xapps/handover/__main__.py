"""``python -m octoric.xapps.handover [--rmr-port 4580] [--http-port 8091]``: the handover xApp.

The environment and the signal handling are every xApp's: ``octoric.xapps.base.main``.
"""

from __future__ import annotations

import sys

from octoric import log as octolog
from octoric.contracts import ports
from octoric.xapps.base.main import parse_args, run_forever


def main(argv: list[str] | None = None) -> int:
    args = parse_args("handover", ports.HANDOVER_RMR, ports.HANDOVER_HTTP, argv)
    octolog.configure("xapp-handover")
    # an RMR message waits for the GIL behind any running thread (webhook deliveries, HTTP,
    # discovery) for up to the switch interval, 5 ms by default: the detection latency's tail
    sys.setswitchinterval(0.0005)
    from octoric.spare import wait_if_spare
    from octoric.xapps.handover.xapp import HandoverXapp

    wait_if_spare()  # a warm spare (octoric.spare) waits here, past its imports

    xapp = HandoverXapp(args.rmr_port, args.http_port, args.host)
    return run_forever("handover", xapp)


if __name__ == "__main__":
    raise SystemExit(main())
