"""Where webhooks may be delivered (issue #43).

The API token lets a caller make the xApp POST to any URL; without a rule that reached the
services only the host can reach: Redis on 127.0.0.1, a cloud metadata address, the pod
network. So a URL whose host resolves to an address that is not globally routable
(loopback, link-local, private, shared, unspecified, reserved, multicast; an IPv4-mapped IPv6
address counts as its IPv4 address) is refused, unless the allow-list (``controls.
webhook_allow``) names it:

- ``ADDRESS`` or ``CIDR`` (any port): ``127.0.0.1``, ``10.0.0.0/8``, ``fd00::/8``;
- ``ADDRESS:PORT`` or ``CIDR:PORT``: ``127.0.0.1:9000``, ``10.1.0.0/16:8080``, and in brackets
  for IPv6: ``[::1]:9000``, ``[fd00::/8]:443``.

Every address the name resolves to must pass, at registration (403 ``target_not_allowed``)
and again when a delivery connects (a name re-pointed after registration: the connection
goes to the checked address, never to a second lookup's).
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

IpNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class TargetRefused(OSError):
    """The URL's host is, or resolves to, an address webhooks may not reach."""


@dataclass(frozen=True)
class AllowEntry:
    net: IpNetwork
    port: int | None  # None: any port

    def admits(self, ip: IpAddress, port: int) -> bool:
        return ip.version == self.net.version and ip in self.net and self.port in (None, port)


def parse_entry(text: str) -> AllowEntry:
    """One allow-list entry (module docstring); ValueError saying what is wrong."""
    t, port_text = text.strip(), ""
    if t.startswith("["):
        inner, sep, rest = t[1:].partition("]")
        if not sep or (rest and not rest.startswith(":")):
            raise ValueError(f"{text!r}: an IPv6 entry is [ADDRESS or CIDR] or [...]:PORT")
        t, port_text = inner, rest[1:]
    elif t.count(":") == 1:  # IPv4 or CIDR with a port (a bare IPv6 has more colons)
        t, _, port_text = t.partition(":")
    try:
        net = ipaddress.ip_network(t, strict=False)
    except ValueError:
        raise ValueError(f"{text!r}: not an IP address or CIDR (names are resolved, so list "
                         "the addresses they resolve to)") from None  # fmt: skip
    port = None
    if port_text:
        if not port_text.isdigit() or not 0 < int(port_text) < 65536:
            raise ValueError(f"{text!r}: the port must be 1..65535")
        port = int(port_text)
    return AllowEntry(net, port)


def _unmapped(ip: IpAddress) -> IpAddress:
    return (ip.ipv4_mapped or ip) if isinstance(ip, ipaddress.IPv6Address) else ip


def restricted(ip: IpAddress) -> bool:
    """Not a globally routable unicast address (what needs the allow-list)."""
    ip = _unmapped(ip)
    return not ip.is_global or ip.is_multicast or ip.is_unspecified


@dataclass(frozen=True)
class TargetPolicy:
    allow: tuple[AllowEntry, ...] = ()

    @classmethod
    def of(cls, entries: tuple[str, ...] | list[str]) -> TargetPolicy:
        return cls(tuple(parse_entry(e) for e in entries))

    def admits(self, ip: IpAddress, port: int) -> bool:
        ip = _unmapped(ip)
        return not restricted(ip) or any(e.admits(ip, port) for e in self.allow)

    def resolve(self, host: str, port: int) -> list[tuple[IpAddress, Any]]:
        """Every address ``host`` resolves to, with its socket address; TargetRefused (saying
        which address and how to allow it) if any may not be reached."""
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError as e:
            raise TargetRefused(f"cannot resolve {host!r}: {e}") from None
        out = []
        for family, _, _, _, sockaddr in infos:
            ip = ipaddress.ip_address(str(sockaddr[0]).split("%")[0])
            if not self.admits(ip, port):
                where = f"[{ip}]:{port}" if ip.version == 6 else f"{ip}:{port}"
                raise TargetRefused(
                    f"{host!r} resolves to {ip}, a loopback, link-local or private address "
                    f"webhooks may not reach unless controls.webhook_allow lists it (e.g. "
                    f"{where!r})"
                )
            out.append((ip, (family, sockaddr)))
        return out

    def check_url(self, url: str) -> None:
        u = urlsplit(url)
        port = u.port or (443 if u.scheme == "https" else 80)
        self.resolve(u.hostname or "", port)

    def connector(self) -> Any:
        """A replacement for ``http.client``'s ``socket.create_connection``: it connects
        only to an address this policy admits, the very one it checked."""

        def create_connection(
            address: tuple[str, int], timeout: Any = None, source_address: Any = None
        ) -> socket.socket:
            host, port = address
            last: OSError | None = None
            for _, (family, sockaddr) in self.resolve(host, port):
                sock = socket.socket(family, socket.SOCK_STREAM)
                try:
                    if isinstance(timeout, int | float):  # else socket's default sentinel
                        sock.settimeout(timeout)
                    if source_address:
                        sock.bind(source_address)
                    sock.connect(sockaddr)
                    return sock
                except OSError as e:
                    sock.close()
                    last = e
            raise last or OSError(f"no address for {host!r}")

        return create_connection
