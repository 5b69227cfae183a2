"""Which network interface holds the address a node was enrolled with.

Gloo and NCCL pick an interface by themselves (often loopback, or the wrong NIC on a
multi-homed host); the worker tells them the one its peers reach it through.
"""

from __future__ import annotations

import ipaddress
import os

from benchmarks import runner

SOCKET_IFNAME_VARS = ("GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME")


def interface_for(address: str, ip_addr_show: str) -> str | None:
    """The interface in ``ip -o addr show`` output that carries ``address``."""
    try:
        wanted = ipaddress.ip_address(address)
    except ValueError:
        return None
    for line in ip_addr_show.splitlines():
        fields = line.split()
        if len(fields) < 4 or fields[2] not in ("inet", "inet6"):
            continue
        try:
            if ipaddress.ip_interface(fields[3]).ip == wanted:
                return fields[1].split("@", 1)[0]
        except ValueError:
            continue
    return None


def set_socket_ifname(address: str) -> str | None:
    """Set GLOO/NCCL_SOCKET_IFNAME for ``address`` unless the operator already did."""
    if not address:
        return None
    try:
        shown = runner.run(["ip", "-o", "addr", "show"], timeout=10).stdout
    except (runner.CommandNotFound, runner.CommandTimeout):
        return None  # gloo and NCCL pick an interface themselves
    name = interface_for(address, shown)
    if name:
        for var in SOCKET_IFNAME_VARS:
            os.environ.setdefault(var, name)
    return name
