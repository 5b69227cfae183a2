"""Parse ``ss -Htn state established`` (iproute2 6.1): the peers of a port's connections.

Line shapes (no header with -H; with a state filter the State column is left out)::

    0      0      127.0.0.1:5201 10.213.0.2:47720
    0      0      [::ffff:127.0.0.1]:5201 [::ffff:10.213.0.2]:56590
    0      0      [::1]:5201 [::1]:42620

Columns: Recv-Q, Send-Q, local address:port, peer address:port. An IPv4 client of a
dual-stack server shows as an IPv4-mapped IPv6 address; it is given as the IPv4 address the
platform enrolled, so it compares equal to it.
"""

from __future__ import annotations

import ipaddress


def established_peers(text: str) -> set[str]:
    """The peer addresses of the listed connections (a line that is not one is passed over)."""
    peers = set()
    for line in text.splitlines():
        fields = line.split()
        if len(fields) != 4:
            continue
        host = fields[3].rpartition(":")[0].strip("[]").split("%", 1)[0]
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            continue
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        peers.add(str(address))
    return peers
