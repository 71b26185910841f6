"""Network namespaces and TUN devices for the real-UE path (root only).

One *server* namespace and one namespace per real UE, each with a TUN device whose file
descriptor stays with the simulator: an application in the server namespace that sends to a
UE's address writes into the server TUN, the simulator reads the packet, queues it in that
UE's RLC queue and, when the cell's scheduler has granted its bytes, writes it into the UE's
TUN, where the kernel delivers it to the UE's socket. The uplink is the way back. Nothing
else connects the namespaces: no veth, no bridge, no route in the host's namespace.

Addresses: server 10.77.0.1, UE ``i`` 10.77.1.``i+1`` (one /16 on every TUN, so each side
reaches the other on-link). IPv6 is off on the TUNs (no router solicitations in the queues).
The devices are created in this namespace, moved into theirs (the descriptor follows) and
disappear when the descriptors close; the namespaces are deleted by ``close()``, and
``remove_stale()`` deletes those a killed run left (their names carry its pid).
"""

from __future__ import annotations

import fcntl
import itertools
import os
import shutil
import struct
import subprocess
from dataclasses import dataclass, field

from octoric.sim.errors import SimError

_TUNSETIFF = 0x400454CA
_IFF_TUN = 0x0001
_IFF_NO_PI = 0x1000
PREFIX = "octoric-"
SERVER_ADDR = "10.77.0.1"
# the source of the OCC xApp's feedback relayed into the server namespace (no host has it)
RIC_ADDR = "10.77.0.254"
MAX_UES = 250
DEVICE = "octoric0"  # the TUN's name inside every namespace
_serial = itertools.count()


class NetnsError(SimError):
    """The namespaces cannot be set up here (not root, no ``ip``, no /dev/net/tun, ...)."""


def unavailable_reason() -> str | None:
    """Why the real-UE path cannot run on this machine, or None when it can."""
    if os.geteuid() != 0:
        return "the real-UE path creates network namespaces and TUN devices: run it as root"
    if shutil.which("ip") is None:
        return "the real-UE path needs iproute2's `ip` (apt-get install iproute2)"
    if not os.access("/dev/net/tun", os.R_OK | os.W_OK):
        return "the real-UE path needs /dev/net/tun (the tun kernel module)"
    return None


def ue_addr(i: int) -> str:
    return f"10.77.1.{i + 1}"


def ue_index(addr: bytes) -> int:
    """The real-UE index of a packed IPv4 address in 10.77.1.0/24, or -1."""
    if addr[0] == 10 and addr[1] == 77 and addr[2] == 1 and 0 < addr[3] <= MAX_UES:
        return addr[3] - 1
    return -1


def _ip(*args: str) -> None:
    r = subprocess.run(["ip", *args], capture_output=True, text=True, check=False)
    if r.returncode != 0:
        raise NetnsError(f"`ip {' '.join(args)}` failed: {r.stderr.strip() or r.returncode}")


def _open_tun() -> tuple[int, str]:
    """A new TUN device under a name the kernel picks (unique in this namespace)."""
    fd = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        ifr = fcntl.ioctl(fd, _TUNSETIFF, struct.pack("16sH", b"octun%d", _IFF_TUN | _IFF_NO_PI))
    except OSError as e:
        os.close(fd)
        raise NetnsError(f"cannot create a TUN device: {e}") from e
    return fd, ifr[:16].rstrip(b"\0").decode()


@dataclass
class Namespaces:
    """The server namespace and the real UEs' namespaces with their TUN descriptors."""

    tag: str
    server_ns: str
    server_fd: int
    ue_ns: list[str] = field(default_factory=list)
    ue_fds: list[int] = field(default_factory=list)

    @classmethod
    def create(cls, n_ues: int, tag: str | None = None) -> Namespaces:
        reason = unavailable_reason()
        if reason is not None:
            raise NetnsError(reason)
        if not 1 <= n_ues <= MAX_UES:
            raise NetnsError(f"{n_ues} real UEs: between 1 and {MAX_UES}")
        tag = tag or f"{os.getpid()}.{next(_serial)}"  # several paths in one process
        ns = cls(tag, f"{PREFIX}{tag}-srv", -1)
        try:
            ns.server_fd = ns._device(ns.server_ns, SERVER_ADDR)
            for i in range(n_ues):
                ns.ue_fds.append(ns._device(f"{PREFIX}{tag}-ue{i}", ue_addr(i)))
        except BaseException:
            ns.close()
            raise
        return ns

    def _device(self, netns: str, addr: str) -> int:
        _ip("netns", "add", netns)
        if netns != self.server_ns:
            self.ue_ns.append(netns)
        fd, tmp = _open_tun()
        dev = DEVICE
        try:
            _ip("link", "set", "dev", tmp, "netns", netns)
            inside = ("-n", netns)
            _ip(*inside, "link", "set", "dev", tmp, "name", dev)
            # no IPv6 on the TUN: its router solicitations would sit in the RLC queues
            subprocess.run(
                ["ip", "netns", "exec", netns, "sysctl", "-qw",
                 f"net.ipv6.conf.{dev}.disable_ipv6=1"],
                capture_output=True, check=False,
            )  # fmt: skip
            _ip(*inside, "addr", "add", f"{addr}/16", "dev", dev)
            _ip(*inside, "link", "set", "dev", dev, "mtu", "1500", "up")
            _ip(*inside, "link", "set", "dev", "lo", "up")
        except BaseException:
            os.close(fd)
            raise
        return fd

    def exec_argv(self, netns: str, argv: list[str]) -> list[str]:
        """``argv`` run inside ``netns`` (for subprocess)."""
        return ["ip", "netns", "exec", netns, *argv]

    def close(self) -> None:
        for fd in [self.server_fd, *self.ue_fds]:
            if fd >= 0:
                os.close(fd)
        self.server_fd, self.ue_fds = -1, []
        for name in [self.server_ns, *self.ue_ns]:
            subprocess.run(["ip", "netns", "del", name], capture_output=True, check=False)
        self.ue_ns = []


def remove_stale() -> list[str]:
    """Delete the namespaces of runs whose process is gone (named ``octoric-<pid>-...``)."""
    if shutil.which("ip") is None:
        return []
    r = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=False)
    gone = []
    for line in r.stdout.splitlines():
        name = line.split()[0] if line.strip() else ""
        if not name.startswith(PREFIX):
            continue
        pid = name[len(PREFIX) :].split("-")[0].split(".")[0]
        if pid.isdigit() and not os.path.exists(f"/proc/{pid}"):
            subprocess.run(["ip", "netns", "del", name], capture_output=True, check=False)
            gone.append(name)
    return gone
