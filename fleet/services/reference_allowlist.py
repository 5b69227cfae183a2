"""Who may reach a reference's servers: the addresses of the platform's enrolled nodes.

A reference's iperf3 and echo servers serve one test at a time (jobs.services.reference_slots)
and log every client; open to the whole Internet, anyone can hold them busy or fill their
logs. Its agent (`benchctl reference-agent --firewall-ports`) fetches this list and lets in
new connections from these addresses only.
"""

from __future__ import annotations

import ipaddress

from fleet.models import Node


def addresses() -> list[str]:
    """Every active node's known addresses (enrolled and observed), trial agents' included,
    as IP literals, sorted and unique. A revoked node's are left out: its tests count for
    nothing any more. An enrolled ``address`` that is a host name is left out too: a
    firewall matches addresses, and the node's tests still come from its observed one."""
    found: set[str] = set()
    for node in Node.objects.filter(status=Node.Status.ACTIVE).only("address",
                                                                     "observed_address"):
        for address in node.known_addresses():
            try:
                found.add(str(ipaddress.ip_address(address.strip())))
            except ValueError:
                continue
    return sorted(found)
