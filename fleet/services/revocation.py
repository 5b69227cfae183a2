"""Revoking a node: its key, its Redis user and its open runs, all at once."""

from __future__ import annotations

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from fleet.models import Node
from fleet.services import broker, generation
from fleet.signals import node_revoked, node_revoking


def revoke(node: Node, reason: str) -> None:
    with transaction.atomic():
        Node.objects.filter(pk=node.pk).update(status=Node.Status.REVOKED,
                                                revoked_at=timezone.now(),
                                                revoked_reason=reason[:255])
        generation.changed()  # off the board at once, not when a kept page expires
        # Jobs fails the node's open runs (it connects in its ready(): jobs depends on
        # fleet, not back).
        node_revoking.send(Node, node=node, reason=reason)
        if settings.NODE_BROKER_ACL and node.broker_user:
            broker.delete_node_user(node.pk, node.broker)
        # Certification revokes the node's certificates: a revoked host vouches for nothing.
        transaction.on_commit(lambda: node_revoked.send(Node, node=node, reason=reason))
