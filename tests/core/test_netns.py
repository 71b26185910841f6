"""The network-namespace helper: two test hosts of our own that reach each other over veth."""

from __future__ import annotations

import subprocess
import sys

import pytest
from testkit.netns import NetnsPair

pytestmark = [pytest.mark.integration, pytest.mark.netns]

SERVER = """
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], 40000))
print("ready", flush=True)
data, peer = s.recvfrom(100)
s.sendto(data.upper(), peer)
"""

CLIENT = """
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(5)
s.sendto(b"octoric", (sys.argv[1], 40000))
print(s.recvfrom(100)[0].decode())
"""


def test_udp_crosses_the_veth(netns_pair: NetnsPair) -> None:
    server = subprocess.Popen(
        netns_pair.exec_argv(netns_pair.b, [sys.executable, "-c", SERVER, netns_pair.addr_b]),
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None and server.stdout.readline().strip() == "ready"
        out = subprocess.run(
            netns_pair.exec_argv(netns_pair.a, [sys.executable, "-c", CLIENT, netns_pair.addr_b]),
            capture_output=True,
            text=True,
            timeout=10,
        )
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == "OCTORIC"
    finally:
        server.kill()
        server.wait()


def test_namespaces_are_removed(netns_pair: NetnsPair) -> None:
    names = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert netns_pair.a in names
    netns_pair.delete()
    names = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert netns_pair.a not in names and netns_pair.b not in names
