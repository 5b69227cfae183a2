"""Which nodes a user may see: every provider's node, and the user's own trial agents. A
buyer's trial agent is that buyer's to see: to anyone else it does not exist. The catalogue
(GET /api/v1/nodes) and a webhook's watched nodes ask here."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.db.models import Q, QuerySet

from fleet.models import Node


def visible_to(user: Any) -> QuerySet[Node]:
    mine = (Q(trial_buyer=user) if isinstance(user, User) and user.is_authenticated
            else Q(pk__in=[]))
    return Node.objects.filter(Q(trial_of__isnull=True) | mine)
