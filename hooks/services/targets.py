"""Where a webhook may point: checked when it is registered and again at every delivery.

A webhook makes the platform send requests to an address a buyer chose, from inside the
platform's network. Without these rules it is a way in: the cloud's metadata service
(169.254.169.254), the platform's own Redis and PostgreSQL (loopback, private ranges),
anything else behind the firewall. The rules are enrolment's (fleet.services.enrolment.
address_error) made stricter, since here the address is dialled by the platform itself:

- link-local, multicast, unspecified and reserved addresses: never;
- loopback, private and shared ranges (RFC 1918, 100.64/10, fc00::/7): only where
  WEBHOOK_ALLOW_PRIVATE_TARGETS says so (development and the tests; off in production);
- a name is resolved and every address it resolves to is checked, at registration and at
  each delivery, and the delivery connects to the address that was checked: a name that
  resolves elsewhere later (DNS rebinding) cannot lead the platform inside.
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.conf import settings

IP = ipaddress.IPv4Address | ipaddress.IPv6Address


class Refused(Exception):
    """The URL, or what its name resolves to now, is not a place the platform sends to."""


@dataclass(frozen=True)
class Target:
    scheme: str
    host: str  # as written: the Host header and, for https, the certificate's name
    port: int
    path: str  # with the query
    address: str  # the checked address the delivery connects to


def address_error(ip: IP) -> str | None:
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped  # ::ffff:127.0.0.1 is 127.0.0.1
    # ::1 sits in IPv6's reserved ::/8: loopback is judged below, as 127.0.0.1 is.
    if ip.is_link_local or ip.is_multicast or ip.is_unspecified or (
            ip.is_reserved and not ip.is_loopback):
        return f"{ip} is link-local, multicast, unspecified or reserved"
    if not ip.is_global and not settings.WEBHOOK_ALLOW_PRIVATE_TARGETS:
        return f"{ip} is a loopback, private or shared address: not reachable from the internet"
    return None


def parse(url: str) -> Target:
    """The URL's parts, before any name is resolved (address left empty)."""
    parts = urlsplit(url)
    allowed = ("https",) if settings.WEBHOOK_REQUIRE_HTTPS else ("https", "http")
    if parts.scheme not in allowed:
        raise Refused(f"the URL must start with {' or '.join(f'{s}://' for s in allowed)}")
    if parts.username or parts.password:
        raise Refused("no credentials in the URL: the signature tells the receiver it was us")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise Refused("the URL's port is not a number from 1 to 65535") from None
    if not parts.hostname:
        raise Refused("the URL names no host")
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return Target(parts.scheme, parts.hostname, port, path, "")


def resolve(url: str) -> Target:
    """The URL with the address to connect to, every address of its name checked."""
    target = parse(url)
    try:
        found = socket.getaddrinfo(target.host, target.port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise Refused(f"{target.host} does not resolve: {exc}") from None
    addresses = list(dict.fromkeys(ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in found))
    for ip in addresses:  # one bad address refuses the name: the resolver picks, not us
        problem = address_error(ip)
        if problem:
            raise Refused(f"{target.host} resolves to {problem}")
    if not addresses:
        raise Refused(f"{target.host} resolves to no address")
    return Target(target.scheme, target.host, target.port, target.path, str(addresses[0]))
