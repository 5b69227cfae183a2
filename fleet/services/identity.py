"""A host is its hardware, not its name: the keys that recognise it at enrolment.

A provider whose node was revoked could enrol the same machine again under a new name and
start clean. The keys are what cannot be renamed: the GPU boards' UUIDs and serials (NVML)
and the NICs' burned-in MAC addresses. Locally administered MACs (veths, bridges, most
virtual NICs: the second bit of the first octet) and the machine-id are not keys: a
hypervisor or a cloned image hands the same ones to many hosts, and a lab's namespaces
share one machine's. The machine-id is kept in the inventory beside them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fleet.models import Node

UNKNOWN = ("", "n/a", "[n/a]", "not supported", "unknown", "none")
ZERO_MAC = "00:00:00:00:00:00"


def keys(inventory: dict[str, Any]) -> set[str]:
    """The hardware keys an inventory names (empty for a host with none of them)."""
    found: set[str] = set()
    gpu = inventory.get("gpu")
    for device in (gpu.get("devices") or []) if isinstance(gpu, dict) else []:
        if not isinstance(device, dict):
            continue
        for field in ("uuid", "serial"):
            value = str(device.get(field) or "").strip()
            if value.lower() not in UNKNOWN:
                found.add(f"gpu-{field}:{value[:96]}")
    nics = inventory.get("nics")
    for nic in nics if isinstance(nics, list) else []:
        mac = str(nic.get("mac") or "").strip().lower() if isinstance(nic, dict) else ""
        if burned_in(mac):
            found.add(f"mac:{mac}")
    return found


def burned_in(mac: str) -> bool:
    """A globally administered, unicast MAC (a vendor's address, not a generated one)."""
    parts = mac.split(":")
    if len(parts) != 6 or mac == ZERO_MAC:
        return False
    try:
        first = int(parts[0], 16)
    except ValueError:
        return False
    return not first & 0b10 and not first & 0b1


MAX_LINEAGE = 16  # re-enrolments followed back: a chain is one host's, not a fleet's


def lineage(node_ids: list[int],
            predecessors: Mapping[int, int | None] | None = None) -> dict[int, list[int]]:
    """Each node with the nodes its host was enrolled as before (itself first): what a
    record of the host (its stability over the day) reads, whatever its current name.
    ``predecessors``: the nodes' own predecessor ids where the caller holds the nodes
    already (a board page): the first step without a query."""
    out = {n: [n] for n in node_ids}
    frontier = {n: n for n in node_ids}  # the oldest id reached -> the node asked for
    for step in range(MAX_LINEAGE):
        if step == 0 and predecessors is not None:
            parents = {n: p for n in frontier if (p := predecessors.get(n)) is not None}
        else:
            parents = dict(Node.objects.filter(pk__in=list(frontier), predecessor__isnull=False)
                           .values_list("pk", "predecessor_id"))
        if not parents:
            break
        frontier = {parent: frontier[child] for child, parent in parents.items()
                    if parent not in out[frontier[child]]}
        for parent, asked in frontier.items():
            out[asked].append(parent)
    return out
