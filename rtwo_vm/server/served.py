"""What one server serves: the Host names and origins it answers, and its connection bounds.

    Served.of("127.0.0.1", 8080, ["rtwo.example.org"])   # what rtwo-vm serve makes
    Served.of(None, None)                                 # an in-process app: loopback names, any port
    Limits.defaults()                                     # api.toml [bounds], unless the operator says

The Host rule (a page of another site whose name is rebound to this address sends its own
name as Host; DNS rebinding): a Host is served when it is

- one of api.toml ``headers.loopback_hosts`` (localhost, 127.0.0.1, [::1]) or the bound
  address, with the bound port (a Host without a port means port 80); the unspecified
  addresses (0.0.0.0, ::) are never names a client should use and are not served;
- a name given with ``--allow-host NAME`` (any port, or none: a reverse proxy's name) or
  ``--allow-host NAME:PORT`` (that port only).

Names compare without case; anything else (a user part, a path, a bare IPv6 address, a port
that is not a number, a trailing dot) is not a served Host. An *origin* is served when its
scheme is http or https and its host and port (the scheme's default port when it has none)
are served by the same rule; ``null`` never is.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from typing import Iterable

from rtwo_vm.server.api.codes import bounds, headers

_NAME = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,62})(?:\.[a-z0-9](?:[a-z0-9-]{0,62}))*$")
_PORT = re.compile(r"^[0-9]{1,5}$")
DEFAULT_PORTS = {"http": 80, "https": 443}


def authority(text: str) -> tuple[str, int | None] | None:
    """``name[:port]`` of a Host header or an origin, normalised (lowercase, IPv6 in
    brackets, compressed), or None when it is not one."""
    text = text.strip().lower()
    if text.startswith("["):
        end = text.find("]")
        if end < 0:
            return None
        try:
            name = f"[{ipaddress.IPv6Address(text[1:end]).compressed}]"
        except ValueError:
            return None
        rest = text[end + 1:]
    else:
        name, sep, port_text = text.partition(":")
        rest = sep + port_text
        if len(name) > 253 or not _NAME.match(name):
            return None
    if not rest:
        return name, None
    if not rest.startswith(":") or not _PORT.match(rest[1:]) or not 0 < int(rest[1:]) < 65536:
        return None
    return name, int(rest[1:])


def _bound_name(host: str) -> str | None:
    """The bound address as a Host names it (None for an unspecified address)."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        found = authority(host)
        return found[0] if found and found[1] is None else None
    if address.is_unspecified:
        return None
    return f"[{address.compressed}]" if address.version == 6 else address.compressed


@dataclass(frozen=True)
class Served:
    port: int | None                          # the bound port (None: any)
    names: frozenset[str]                     # served with the bound port
    allowed: frozenset[tuple[str, int | None]]   # --allow-host: (name, port or None: any)

    @classmethod
    def of(cls, bound_host: str | None, port: int | None,
           allow: Iterable[str] = ()) -> Served:
        """The rule of a server bound to ``bound_host``:``port`` with ``allow`` (each
        ``NAME`` or ``NAME:PORT``); ValueError names an ``allow`` entry that is not one."""
        names = set(headers().loopback_hosts)
        if bound_host is not None and (bound := _bound_name(bound_host)) is not None:
            names.add(bound)
        allowed = set()
        for entry in allow:
            found = authority(entry)
            if found is None:
                raise ValueError(f"{entry!r} is not a host name, an IP address or one of "
                                 "them with :PORT")
            allowed.add(found)
        return cls(port, frozenset(names), frozenset(allowed))

    def serves(self, name: str, port: int) -> bool:
        if name in self.names and (self.port is None or port == self.port):
            return True
        return (name, None) in self.allowed or (name, port) in self.allowed

    def host(self, value: str | None) -> bool:
        """Whether a request's Host header names this server."""
        found = authority(value) if value else None
        return found is not None and self.serves(found[0], found[1] or DEFAULT_PORTS["http"])

    def origin(self, value: str) -> bool:
        """Whether an Origin header is one of this server's origins."""
        scheme, sep, rest = value.strip().lower().partition("://")
        if not sep or scheme not in DEFAULT_PORTS:
            return False
        found = authority(rest)
        return found is not None and self.serves(found[0], found[1] or DEFAULT_PORTS[scheme])


@dataclass(frozen=True)
class Limits:
    """The connection bounds of one server (seconds, counts, bytes)."""

    header_timeout: float
    body_timeout: float
    max_connections: int
    keep_alive: int
    max_header_bytes: int

    @classmethod
    def defaults(cls, *, header_timeout: float | None = None, body_timeout: float | None = None,
                 max_connections: int | None = None) -> Limits:
        """api.toml's bounds, with those the operator gave in their place."""
        b = bounds()
        return cls(header_timeout=header_timeout or b.header_timeout_seconds,
                   body_timeout=body_timeout or b.body_timeout_seconds,
                   max_connections=max_connections or b.max_connections,
                   keep_alive=b.keep_alive_seconds, max_header_bytes=b.max_header_bytes)
