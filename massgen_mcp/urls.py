"""Is an address on this machine? One answer for endpoints and bind addresses alike."""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit


def is_loopback_host(host: str) -> bool:
    """`localhost`, `127.0.0.0/8` and `::1` (brackets allowed): only this machine can reach
    them. `0.0.0.0` is not: binding it listens on every interface."""
    host = host.strip().strip("[]").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False
    return ip.is_loopback


def is_loopback_url(url: str) -> bool:
    """Does this endpoint URL point at this machine (`http://localhost:11434/v1`, ...)?"""
    try:
        host = urlsplit(url if "://" in url else f"//{url}").hostname
    except ValueError:
        return False
    if not host:
        return False
    # Connecting to the unspecified address reaches this machine.
    return is_loopback_host(host) or host in {"0.0.0.0", "::"}
