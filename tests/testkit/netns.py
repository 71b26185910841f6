"""Network namespaces for tests that cross a network: test hosts we create ourselves.

Each ``NetnsPair`` makes two namespaces joined by a veth pair with addresses from a
documentation-style private /30 that exists only inside those namespaces. Never other hosts.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from dataclasses import dataclass, field
from types import TracebackType


def netns_unavailable() -> str | None:
    """Why namespace tests cannot run here, or None when they can."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    if not shutil.which("ip"):
        return "`ip` (iproute2) is not installed"
    probe = f"octoric-probe-{uuid.uuid4().hex[:6]}"
    r = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if r.returncode != 0:
        return f"`ip netns add` failed: {r.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


def _ip(*args: str) -> None:
    r = subprocess.run(["ip", *args], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {r.stderr.strip()}")


@dataclass
class NetnsPair:
    """Two namespaces ``a`` and ``b`` linked by veth; ``addr_a``/``addr_b`` are their IPs."""

    subnet: int = 0  # picks 10.213.<subnet>.0/30
    tag: str = field(default_factory=lambda: uuid.uuid4().hex[:6])

    def __post_init__(self) -> None:
        self.a = f"octo-a-{self.tag}"
        self.b = f"octo-b-{self.tag}"
        self.addr_a = f"10.213.{self.subnet}.1"
        self.addr_b = f"10.213.{self.subnet}.2"

    def create(self) -> NetnsPair:
        va, vb = f"va{self.tag}", f"vb{self.tag}"
        _ip("netns", "add", self.a)
        _ip("netns", "add", self.b)
        _ip("link", "add", va, "type", "veth", "peer", "name", vb)
        _ip("link", "set", va, "netns", self.a)
        _ip("link", "set", vb, "netns", self.b)
        for ns, dev, addr in ((self.a, va, self.addr_a), (self.b, vb, self.addr_b)):
            _ip("-n", ns, "addr", "add", f"{addr}/30", "dev", dev)
            _ip("-n", ns, "link", "set", dev, "up")
            _ip("-n", ns, "link", "set", "lo", "up")
        return self

    def exec_argv(self, ns: str, argv: list[str]) -> list[str]:
        """argv that runs ``argv`` inside namespace ``ns``."""
        return ["ip", "netns", "exec", ns, *argv]

    def delete(self) -> None:
        for ns in (self.a, self.b):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)

    def __enter__(self) -> NetnsPair:
        return self.create()

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.delete()
