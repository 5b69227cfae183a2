"""Which of a node's runs the platform itself ran beside others on the same machine (#32 item 1).

A board value pools runs measured alike. The platform knows what it ran: a run that
overlapped another run of the platform's on the same machine (another node whose enrolled
inventory names the same machine-id, as a lab's namespaces or a host sliced into several
nodes do, or a trial agent on the node itself) shared its CPUs, disks and uplink with it.
Such a run is kept apart from a median of runs measured alone (board.latest): hz-a100-01's
IOPS was the mean of 28,333 (beside three other nodes' suites) and 94,593 (alone).

Only what the platform ran counts. The host's own load figures (steal, iowait: the probes'
conditions) are its word, shown and named but never used to drop a run, since a provider
could claim load on its slow runs. A provider that names one machine-id for all its nodes
only keeps its overlapping runs apart, so its value comes from runs measured alone, which is
what a board value is; one that hides a shared machine pools its slower shared runs, to its
own cost. A machine is one provider's: another provider naming the same machine-id cannot
time its runs beside a rival's good ones to keep them out.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from django.db.models import Q

from fleet.models import Node
from jobs.models import Run

Window = tuple[int, datetime | None, datetime | None]  # run id, started, finished


def machine_nodes(node_id: int) -> set[int]:
    """The nodes on the node's machine as the platform was told: its provider's nodes whose
    enrolled inventory names its machine-id, and its own trial agents (they run on it)."""
    found = Node.objects.filter(pk=node_id).values_list("inventory", "provider_id").first()
    inventory, provider = found if found else ({}, None)
    machine = str((inventory or {}).get("machine_id") or "").strip()
    same = Q(trial_of_id=node_id) | Q(pk=node_id)
    if machine:
        # One provider's machine: another provider naming the same machine-id (a cloned
        # image, or on purpose, to time its runs beside a rival's) shares nothing with it.
        same |= Q(inventory__machine_id=machine, provider_id=provider)
    return set(Node.objects.filter(same).values_list("pk", flat=True))


def shared(node_id: int, runs: Iterable[Window]) -> set[int]:
    """Of these runs (of the node or its trial agents), those another run of the platform's on
    the same machine overlapped in time."""
    mine = [(pk, start, end) for pk, start, end in runs if start is not None and end is not None]
    if not mine:
        return set()
    first = min(start for _, start, _ in mine)
    last = max(end for _, _, end in mine)
    others = list(Run.objects.filter(node_id__in=machine_nodes(node_id), started_at__lt=last)
                  .filter(Q(finished_at__gt=first) | Q(finished_at__isnull=True))
                  .values_list("pk", "started_at", "finished_at"))
    found = set()
    for pk, start, end in mine:
        if any(other != pk and o_start is not None and o_start < end
               and (o_end is None or o_end > start) for other, o_start, o_end in others):
            found.add(pk)
    return found
