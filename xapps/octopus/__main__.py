"""``python -m octoric.xapps.octopus [--rmr-port 4590] [--http-port 8092]``: the octopus xApp.

The environment and the signal handling are every xApp's: ``octoric.xapps.base.main``.
"""

from __future__ import annotations

from octoric import log as octolog
from octoric.contracts import ports
from octoric.xapps.base.main import parse_args, run_forever


def main(argv: list[str] | None = None) -> int:
    args = parse_args("octopus", ports.OCTOPUS_RMR, ports.OCTOPUS_HTTP, argv)
    octolog.configure("xapp-octopus")
    from octoric.spare import wait_if_spare
    from octoric.xapps.octopus.xapp import OctopusXapp

    wait_if_spare()  # a warm spare (octoric.spare) waits here, past its imports

    xapp = OctopusXapp(args.rmr_port, args.http_port, args.host)
    return run_forever("octopus", xapp)


if __name__ == "__main__":
    raise SystemExit(main())
