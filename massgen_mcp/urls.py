"""Is an address on this machine, and may a request name this server? One answer for
endpoints, bind addresses and the Host/Origin checks of the HTTP transport and the viewer.

Every spelling of an address is read the way the socket layer reads it before deciding:
`LOCALHOST`, `localhost.`, `127.1`, `0x7f.0.0.1`, `2130706433`, `[::1]`,
`0:0:0:0:0:0:0:1`, `::ffff:127.0.0.1`.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from urllib.parse import urlsplit

LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})
_UNSPECIFIED = frozenset({"0.0.0.0", "::"})
# What inet_aton takes: dotted parts in decimal, octal or hex (`127.1`, `0x7f.1`, `017700000001`).
_LEGACY_V4 = re.compile(r"^(0x[0-9a-f]+|[0-9]+)(\.(0x[0-9a-f]+|[0-9]+)){0,3}$")


def canonical_host(host: str) -> str:
    """One spelling per address: lower case, no brackets or trailing dot, IPv4 in dotted
    decimal (`127.1` -> `127.0.0.1`), IPv6 compressed, IPv4-mapped IPv6 as IPv4."""
    name = host.strip().lower()
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
    name = name.split("%", 1)[0] if ":" in name else name  # an IPv6 zone (`fe80::1%eth0`)
    name = name.rstrip(".") if name != "." else name
    try:
        ip = ipaddress.ip_address(name)
    except ValueError:
        if not _LEGACY_V4.match(name):
            return name
        try:
            ip = ipaddress.IPv4Address(socket.inet_aton(name))
        except OSError:
            return name
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return str(ip)


def is_loopback_host(host: str) -> bool:
    """`localhost`, `127.0.0.0/8` and `::1`, however spelled: only this machine can reach
    them. `0.0.0.0` is not: binding it listens on every interface."""
    name = canonical_host(host)
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def is_loopback_url(url: str) -> bool:
    """Does this endpoint URL point at this machine (`http://localhost:11434/v1`, ...)?"""
    try:
        host = urlsplit(url if "://" in url else f"//{url}").hostname
    except ValueError:
        return False
    if not host:
        return False
    # Connecting to the unspecified address reaches this machine.
    return is_loopback_host(host) or canonical_host(host) in _UNSPECIFIED


def host_of_header(header: str) -> str:
    """The host a `Host` header names, canonical: `Example.org:8765` -> `example.org`,
    `[::1]:8765` -> `::1`, `127.1` -> `127.0.0.1`. A header that is not `host[:port]`
    comes back as it is (lower case), which matches none of our names."""
    text = header.strip()
    if text.startswith("["):
        inside, _, rest = text[1:].partition("]")
        if rest and not (rest.startswith(":") and rest[1:].isdigit()):
            return text.lower()
        return canonical_host(inside)
    if text.count(":") == 1:
        text, _, port = text.partition(":")
        if port and not port.isdigit():
            return header.strip().lower()
    return canonical_host(text)


def served_names(bind: str, allowed: list[str] | None = None) -> frozenset[str]:
    """The host names a request may name for a server bound to `bind` (canonical): loopback,
    the bind address, `--allowed-host` values, and this machine's names when the server is
    exposed (bound beyond loopback)."""
    names = {*LOOPBACK_NAMES, bind, *(allowed or [])}
    if not is_loopback_host(bind):
        names |= {socket.gethostname(), socket.getfqdn()}
    return frozenset(host_of_header(n) for n in names if n) - _UNSPECIFIED


def host_allowed(header: str | None, names: frozenset[str]) -> bool:
    """May a request with this `Host` header be served? (A DNS-rebinding page sends its own
    name, which is not one of ours.) A loopback address literal is always ours."""
    if not header:
        return False
    host = host_of_header(header)
    return host in names or _loopback_literal(host)


def origin_allowed(origin: str | None, names: frozenset[str]) -> bool:
    """May a request from this `Origin` be served? Absent (not a browser, or same-origin
    GET) is fine; `null` (a sandboxed or file page) and foreign sites are not."""
    if origin is None:
        return True
    try:
        parts = urlsplit(origin.strip())
        host = parts.hostname
    except ValueError:
        return False
    if parts.scheme not in ("http", "https") or not host:
        return False
    host = canonical_host(host)
    return host in names or _loopback_literal(host)


def _loopback_literal(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
