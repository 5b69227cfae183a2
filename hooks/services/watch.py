"""Watched nodes (node.figures_changed): which nodes a webhook may watch, and which of a
run's figures moved enough from the node's previous ranked run to tell its watchers.

The bounds are data (hooks/data/watch.yaml); the comparison is a pure function, fed by
jobs.services.webhook_events with the run's samples and the previous ones.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from django.contrib.auth.models import User

from config.errors import Invalid
from contract import rules
from fleet.services import catalogue
from hooks.models import Webhook
from hooks.services.events import WATCHED

BOUNDS = rules.load_bounds(Path(__file__).resolve().parents[1] / "data" / "watch.yaml")
CHANGE_FRACTION = BOUNDS["change_fraction"].value
MAX_NODES = int(BOUNDS["max_nodes"].value)

K = TypeVar("K")


def check(owner: User, nodes: list[int], events: list[str]) -> list[int]:
    """The nodes to watch, sorted, once each; Invalid names the first one the owner may not
    see. An unknown node and another buyer's trial agent read the same: the refusal tells
    nothing of what exists."""
    wanted = sorted(set(nodes))
    if wanted and not WATCHED & set(events):
        raise Invalid(f"nodes are watched for {', '.join(sorted(WATCHED))}: add it to events",
                      field="nodes")
    if WATCHED & set(events) and not wanted:
        raise Invalid(f"name the nodes to watch for {', '.join(sorted(WATCHED))}",
                      field="nodes")
    if len(wanted) > MAX_NODES:
        raise Invalid(f"a webhook watches at most {MAX_NODES} nodes", field="nodes")
    seen = set(catalogue.visible_to(owner).filter(pk__in=wanted).values_list("pk", flat=True))
    unseen = [pk for pk in wanted if pk not in seen]
    if unseen:
        raise Invalid(f"no node {unseen[0]} that you may watch", field="nodes")
    return wanted


def watched(node_id: int) -> bool:
    """Whether an active webhook watches the node: one query, so a run nobody watches (most
    of them) costs no comparison."""
    # A webhook names nodes only with a watched event (check()).
    return Webhook.objects.filter(active=True, nodes__contains=[node_id]).exists()


@dataclass(frozen=True)
class Change:
    key: Any  # what the figure is of: its metric (and peer), as the caller keys it
    before: float
    after: float

    @property
    def fraction(self) -> float:
        """Signed: -0.25 is a quarter lower than before."""
        return (self.after - self.before) / abs(self.before)


def changes(before: Mapping[K, float], after: Mapping[K, float],
            fraction: float = CHANGE_FRACTION) -> list[Change]:
    """Figures of ``after`` that moved by at least ``fraction`` of their value in ``before``.
    A figure with no earlier value, or an earlier value of 0 (no fraction of it), is not a
    change: it is the node's first."""
    moved = [Change(key, before[key], value) for key, value in after.items()
             if before.get(key)]
    # "At least": 11.0 after 10.0 is a 10% move, whatever the float rounding says.
    return [c for c in moved if abs(c.fraction) >= fraction - 1e-12]
