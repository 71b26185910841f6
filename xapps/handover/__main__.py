"""``python -m octoric.xapps.handover [--rmr-port 4580] [--http-port 8091]``: the handover xApp.

The environment and the signal handling are every xApp's: ``octoric.xapps.base.main``.
"""

from __future__ import annotations

from octoric import log as octolog
from octoric.contracts import ports
from octoric.xapps.base.main import parse_args, run_forever


def main(argv: list[str] | None = None) -> int:
    args = parse_args("handover", ports.HANDOVER_RMR, ports.HANDOVER_HTTP, argv)
    octolog.configure("xapp-handover")
    from octoric.xapps.handover.xapp import HandoverXapp

    xapp = HandoverXapp(args.rmr_port, args.http_port, args.host)
    return run_forever("handover", xapp)


if __name__ == "__main__":
    raise SystemExit(main())
