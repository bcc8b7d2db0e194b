"""Where a webhook may go: a host on the allow-list, at an address outside loopback and
private ranges unless those are allowed too (`allow_private_networks`), as LangGraph's
server refuses loopback hosts. Checked when a run names its webhook and again before
every delivery, against the addresses the name resolves to then.
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

from service.notifications.settings import Notifications


class HostRefusedError(ValueError):
    """A webhook URL the server will not call, and why."""


def check_url(url: str, settings: Notifications) -> None:
    """HostRefusedError unless `url` may be called now."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    if parts.scheme not in ("http", "https") or not host:
        raise HostRefusedError(f"{url[:80]!r} is not an http(s) URL")
    if not allowed(host, settings.allow_hosts):
        listed = ", ".join(settings.allow_hosts) or "none"
        msg = f"host {host!r} is not on the allow-list (notifications.allow_hosts: {listed})"
        raise HostRefusedError(msg)
    if settings.allow_private_networks:
        return
    for address in addresses(host, parts.port or (443 if parts.scheme == "https" else 80)):
        if not address.is_global:
            msg = (
                f"host {host!r} is at {address}, a loopback, private or reserved address "
                "(notifications.allow_private_networks is false)"
            )
            raise HostRefusedError(msg)


def allowed(host: str, patterns: tuple[str, ...]) -> bool:
    """`example.com` matches itself, `*.example.com` its subdomains, `*` any host."""
    for pattern in patterns:
        if pattern in ("*", host):
            return True
        if pattern.startswith("*.") and host.endswith(pattern[1:]):
            return True
    return False


def addresses(host: str, port: int) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    try:
        literal = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        pass
    else:
        return [literal]
    try:
        found = socket.getaddrinfo(host, port, proto=socket.IPPROTO_TCP)
    except OSError as error:
        raise HostRefusedError(f"host {host!r} does not resolve: {error}") from None
    return [ipaddress.ip_address(info[4][0]) for info in found]
