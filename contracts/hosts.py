"""Which ``Host`` headers an octoric HTTP listener answers (issue #43: DNS rebinding).

A web page from ``http://evil.example`` whose name the attacker re-points at 127.0.0.1 may
read a loopback listener from the victim's browser as same-origin; its requests still say
``Host: evil.example``. So every listener answers only:

- loopback names and addresses (``localhost``, ``127.0.0.0/8``, ``[::1]``) with the listener's
  own port or none;
- the names configured for it (``ric.allowed_hosts`` in ``octoric run``'s config, or
  ``$OCTORIC_ALLOWED_HOSTS``, comma-separated): ``name`` (any port), ``name:port``, or ``*``
  (any Host at all);
- when nothing is configured and the listener binds a non-loopback address (``0.0.0.0``, a pod
  IP): any Host, so a cluster's Service names and pod IPs keep working without configuration.

A request without a Host header (HTTP/1.0 tools) is answered: no browser sends one.
Standard library only (the xApps, the RIC and the dashboard share it).
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

HOSTS_ENV = "OCTORIC_ALLOWED_HOSTS"
STATUS = 421  # Misdirected Request: this server is not the one the name should reach


def _norm(name: str) -> str:
    """Lower case, no trailing dot, an IP address in its canonical form."""
    name = name.strip().lower().rstrip(".").strip("[]")
    try:
        return str(ipaddress.ip_address(name))
    except ValueError:
        return name


def _split(value: str) -> tuple[str, int | None] | None:
    """``name[:port]`` (``[v6][:port]``, or a bare IPv6 address such as a pod IP) ->
    (normalised name, port); None if malformed."""
    try:
        return str(ipaddress.ip_address(value.strip())), None
    except ValueError:
        pass
    try:
        u = urlsplit(f"//{value.strip()}")
        port = u.port
    except ValueError:
        return None
    if not u.hostname or u.path or u.query or u.fragment or u.username is not None:
        return None
    return _norm(u.hostname), port


def is_loopback(name: str) -> bool:
    name = _norm(name)
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def configured(environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The names ``$OCTORIC_ALLOWED_HOSTS`` lists (empty: none configured)."""
    env = os.environ if environ is None else environ
    return tuple(x.strip() for x in env.get(HOSTS_ENV, "").split(",") if x.strip())


@dataclass(frozen=True)
class HostPolicy:
    """What one listener (``bind``:``port``) answers; ``extra``: the configured names."""

    bind: str
    port: int
    extra: tuple[str, ...] = ()

    @property
    def any_host(self) -> bool:
        return "*" in self.extra or (not self.extra and not is_loopback(self.bind))

    def allows(self, host: str | None) -> bool:
        if host is None or self.any_host:
            return True
        got = _split(host)
        if got is None:
            return False
        name, port = got
        if is_loopback(name) and port in (None, self.port):
            return True
        for entry in self.extra:
            want = _split(entry)
            if want is not None and want[0] == name and want[1] in (None, port):
                return True
        return False

    def refusal(self, host: str | None) -> str:
        """The body of a refusal: what was asked, what is answered, how to allow more."""
        return (
            f"Host {host!r} is not served here: this listener answers localhost, 127.0.0.1 "
            f"and [::1] (port {self.port} or none)"
            + (f" and {', '.join(self.extra)}" if self.extra else "")
            + f"; allow more names with ric.allowed_hosts or ${HOSTS_ENV} (DNS-rebinding guard)"
        )


def policy(bind: str, port: int, extra: Iterable[str] | None = None) -> HostPolicy:
    """The policy of a listener; ``extra`` None: ``$OCTORIC_ALLOWED_HOSTS``."""
    names = configured() if extra is None else tuple(x.strip() for x in extra if x.strip())
    return HostPolicy(bind, port, names)
