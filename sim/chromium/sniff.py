"""Kernel-timestamped packet records at one end of the emulated cell (run it in a namespace).

    ip netns exec NS python -m octoric.sim.chromium.sniff --out FILE [--dev octoric0]

The real-UE path counts packets but keeps no per-packet latency for a real flow (only its
release thread's scheduling error). To measure each packet's one-way latency across the cell,
one of these runs at each end: in the server namespace it sees a downlink packet when the
sender's kernel hands it to the server TUN (before the simulator reads it), in the UE's when
the simulator writes it into the UE's TUN (after its slot's grant). The simulator forwards the
IPv4 packet unchanged, so the two records of one packet carry the same bytes: each line is
``<kernel time ns> <crc32 of the packet> <bytes> <dst>``, for UDP packets between the server
(10.77.0.1) and a real UE (10.77.1.*); both namespaces read the same kernel clock
(CLOCK_REALTIME, the socket's SO_TIMESTAMPNS). SIGTERM ends it (the file is flushed).
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import socket
import struct
import sys
import zlib
from pathlib import Path
from types import FrameType

ETH_P_ALL = 0x0003
SO_TIMESTAMPNS = 35  # Linux's SCM_TIMESTAMPNS (Python does not name it)
_TS = struct.Struct("qq")


def _stop(_sig: int, _frame: FrameType | None) -> None:
    raise SystemExit(0)


def run(out: Path, dev: str) -> None:
    s = socket.socket(socket.AF_PACKET, socket.SOCK_DGRAM, socket.htons(ETH_P_ALL))
    s.bind((dev, 0))
    s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    signal.signal(signal.SIGTERM, _stop)
    with out.open("w", buffering=1 << 16) as f:
        print("ready", file=sys.stdout, flush=True)
        while True:
            data, anc, _flags, _addr = s.recvmsg(65535, 64)
            # IPv4, UDP, between the server and a real UE (not the pages' TCP, which also
            # crosses the cell but is not the call's media)
            if len(data) < 28 or data[0] >> 4 != 4 or data[9] != 17:
                continue
            if data[12:14] != b"\x0a\x4d" or data[16:18] != b"\x0a\x4d":
                continue
            ts = 0
            for level, kind, cdata in anc:
                if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
                    sec, nsec = _TS.unpack(cdata[: _TS.size])
                    ts = sec * 1_000_000_000 + nsec
            f.write(f"{ts} {zlib.crc32(data)} {len(data)} {socket.inet_ntoa(data[16:20])}\n")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--dev", default="octoric0")
    a = ap.parse_args(argv)
    with contextlib.suppress(SystemExit):
        run(a.out, a.dev)


if __name__ == "__main__":
    main()
