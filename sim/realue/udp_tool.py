"""A paced UDP sender and a counting receiver for the real-UE path (run them inside its
namespaces with ``ip netns exec``; the path's status file names them).

    python -m octoric.sim.realue.udp_tool send --to 10.77.1.1 --mbps 40 --seconds 10
    python -m octoric.sim.realue.udp_tool recv --seconds 12 --out recv.json
    python -m octoric.sim.realue.udp_tool echo --seconds 10          # in the server's
    python -m octoric.sim.realue.udp_tool ping --to 10.77.0.1 -n 10  # in a UE's namespace

``send --octopus`` marks every packet with the Octopus header (docs/octopus-header.md):
messages of ``--msg-packets`` packets whose priority cycles through ``--priorities``;
``--bitrate-kbps P:K`` gives priority P's messages a drop-by-bitrate threshold of K kbit/s.
The receiver prints (or writes) one JSON object: packets, IP bytes (payload + 28), the
arrival time of every packet (``time.monotonic_ns``, the clock the simulator schedules on)
and, for marked packets, each message's packet count by priority, so whole-message drops
can be told from partial ones.
"""

from __future__ import annotations

import argparse
import json
import socket
import struct
import sys
import time
from pathlib import Path
from typing import Any

from octoric.contracts.octopus_header import OctopusHeader, OctopusHeaderError, parse
from octoric.sim.realue.netns import SERVER_ADDR, ue_addr

IP_UDP = 28  # IPv4 + UDP header bytes on the wire beside the payload
# Linux's SO_TIMESTAMPNS (= SCM_TIMESTAMPNS; Python does not name it): the kernel stamps each
# datagram when it reaches the socket, so a receiver that is scheduled late still reports
# when the packet arrived
SO_TIMESTAMPNS = 35


def send(args: argparse.Namespace) -> dict[str, Any]:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
    size = args.size
    gap = (size + IP_UDP) * 8 / (args.mbps * 1e6)
    prios = [int(p) for p in args.priorities.split(",")]
    thresholds = dict((int(a), int(b)) for a, b in (x.split(":") for x in args.bitrate_kbps))
    body = bytes(size)
    t0 = time.monotonic()
    n = errors = 0
    msg = 0
    while True:
        now = time.monotonic()
        if now - t0 >= args.seconds and not (args.octopus and n % args.msg_packets):
            break  # (a message is finished first: a cut one would look like a partial drop)
        due = int((now - t0) / gap) + 1
        while n < due:
            data = body
            if args.octopus:
                k = n % args.msg_packets
                prio = prios[(n // args.msg_packets) % len(prios)]
                h = OctopusHeader(
                    stream_id=1, msg_id=msg, first=k == 0, last=k == args.msg_packets - 1,
                    priority=prio, bitrate_threshold_kbps=thresholds.get(prio, 0),
                )  # fmt: skip
                data = h.encode() + body[16:]
                if h.last:
                    msg += 1
            try:
                s.sendto(data, (args.to, args.port))
            except OSError:
                errors += 1  # the TUN's queue is full: the sender outruns the cell
            n += 1
        time.sleep(min(gap, 0.0005))
    return {"sent": n, "send_errors": errors, "messages": msg}


def recv(args: argparse.Namespace) -> dict[str, Any]:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 << 20)
    s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    s.bind(("0.0.0.0", args.port))
    s.settimeout(0.2)
    # the kernel's stamps are CLOCK_REALTIME; arrivals are reported on CLOCK_MONOTONIC
    mono_minus_real = time.monotonic_ns() - time.time_ns()
    arrivals: list[int] = []
    sizes: list[int] = []
    msgs: dict[int, list[int]] = {}  # msg id -> [priority, packets, first seen, last seen]
    malformed = 0
    end = time.monotonic() + args.seconds
    while time.monotonic() < end:
        try:
            d, anc, _, _ = s.recvmsg(65535, 64)
        except TimeoutError:
            continue
        stamp = next((c[2] for c in anc if c[0] == socket.SOL_SOCKET and c[1] == SO_TIMESTAMPNS
                      and len(c[2]) >= 16), None)  # fmt: skip
        if stamp is not None:
            sec, nsec = struct.unpack_from("qq", stamp)
            arrivals.append(sec * 1_000_000_000 + nsec + mono_minus_real)
        else:
            arrivals.append(time.monotonic_ns())
        sizes.append(len(d) + IP_UDP)
        if d[:2] == b"OC":
            try:
                h = parse(d)
            except OctopusHeaderError:
                malformed += 1
                continue
            m = msgs.setdefault(h.msg_id, [h.priority, 0, 0, 0])
            m[1] += 1
            m[2] |= h.first
            m[3] |= h.last
    return {
        "packets": len(arrivals), "bytes": sum(sizes), "arrival_ns": arrivals,
        "sizes": sizes, "malformed": malformed,
        "messages": {str(k): v for k, v in msgs.items()},
    }  # fmt: skip


def echo(args: argparse.Namespace) -> dict[str, Any]:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("0.0.0.0", args.port))
    s.settimeout(0.2)
    n = 0
    end = time.monotonic() + args.seconds
    while time.monotonic() < end:
        try:
            d, peer = s.recvfrom(65535)
        except TimeoutError:
            continue
        s.sendto(d, peer)
        n += 1
    return {"echoed": n}


def ping(args: argparse.Namespace) -> dict[str, Any]:
    """Round trips through the cell: the uplink first, the answer through the scheduler."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(args.timeout)
    rtts: list[float | None] = []
    errors: list[str] = []
    for i in range(args.count):
        t = time.monotonic_ns()
        try:
            s.sendto(i.to_bytes(4, "big") + t.to_bytes(8, "big"), (args.to, args.port))
        except OSError as e:  # e.g. the namespace's TUN is gone: the run ended
            errors.append(str(e))
            rtts.append(None)
            continue
        try:
            while True:  # skip late answers to earlier probes
                d = s.recv(64)
                if int.from_bytes(d[:4], "big") == i:
                    break
            rtts.append((time.monotonic_ns() - t) / 1e6)
        except TimeoutError:
            rtts.append(None)
        time.sleep(args.interval)
    return {"rtt_ms": rtts, "lost": sum(r is None for r in rtts), "send_errors": errors[:5]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m octoric.sim.realue.udp_tool",
                                 description=__doc__.split("\n\n")[0])  # fmt: skip
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("send", help="paced UDP at a constant bit rate (IP bytes)")
    a.add_argument("--to", default=ue_addr(0), help=f"the UE's address (default {ue_addr(0)})")
    a.add_argument("--port", type=int, default=9000)
    a.add_argument("--mbps", type=float, default=20.0, help="IP bit rate")
    a.add_argument("--size", type=int, default=1200, help="UDP payload bytes (>= 16)")
    a.add_argument("--seconds", type=float, default=10.0)
    a.add_argument("--octopus", action="store_true", help="mark packets with the Octopus header")
    a.add_argument("--msg-packets", type=int, default=5, help="packets per message")
    a.add_argument("--priorities", default="0", help="message priorities in turn, e.g. 0,3")
    a.add_argument("--bitrate-kbps", action="append", default=[], metavar="PRIO:KBPS",
                   help="drop-by-bitrate threshold of a priority's messages")  # fmt: skip
    b = sub.add_parser("recv", help="count what arrives")
    b.add_argument("--port", type=int, default=9000)
    b.add_argument("--seconds", type=float, default=10.0, help="how long to listen")
    b.add_argument("--out", type=Path, help="write the JSON here (default: stdout)")
    c = sub.add_parser("echo", help="answer every datagram (the server side of ping)")
    c.add_argument("--port", type=int, default=9001)
    c.add_argument("--seconds", type=float, default=10.0)
    e = sub.add_parser("ping", help="UDP round trips to an echo")
    e.add_argument("--to", default=SERVER_ADDR, help="the echo's address (default: the server)")
    e.add_argument("--port", type=int, default=9001)
    e.add_argument("-n", "--count", type=int, default=10)
    e.add_argument("--interval", type=float, default=0.1, help="seconds between probes")
    e.add_argument("--timeout", type=float, default=1.0, help="seconds to wait for an answer")
    args = ap.parse_args(argv)
    if args.cmd in ("echo", "ping"):
        print(json.dumps(echo(args) if args.cmd == "echo" else ping(args)))
        return 0
    if args.cmd == "send":
        if args.size < 16 or args.mbps <= 0 or args.msg_packets < 1:
            ap.error("--size must be >= 16, --mbps > 0, --msg-packets >= 1")
        print(json.dumps(send(args)))
        return 0
    out = json.dumps(recv(args), separators=(",", ":"))
    if args.out:
        args.out.write_text(out)
    else:
        sys.stdout.write(out + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
