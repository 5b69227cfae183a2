"""Trials: a buyer rents an instance of a provider's node for a short while and measures it
with an agent whose key only the buyer holds. Its figures are buyer-measured: the rung of the
evidence ladder between the platform's own records and what a provider's host reports.

What keeps them the buyer's:
- the token is asked for by a buyer account that is not one of the node's provider's owners,
  and the agent's key is returned to that buyer's `benchctl enroll --trial` only;
- only that buyer may ask the agent for runs, and the key stops working when the trial ends;
- the agent must be on the node itself: an instance whose hardware keys (GPU UUIDs and
  serials, burned-in MACs) are none of the node's, or whose GPU model is another, is refused,
  so a provider cannot hand the buyer a better machine than the one on the board.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.utils import timezone

from config.errors import Conflict, Forbidden, TooMany
from fleet.models import EnrolmentToken, Node
from fleet.services import identity, secrets


def create_token(node: Node, buyer: User, hours: int) -> tuple[EnrolmentToken, str]:
    """A one-time token for an agent on an instance of ``node`` that ``buyer`` rents for
    ``hours``; the plain token is returned here and never again."""
    if node.is_trial_agent:
        raise Conflict("this node is a trial agent; ask for a trial of the provider's node "
                       f"{node.trial_of_id}")
    if node.status != Node.Status.ACTIVE:
        raise Conflict("this node was revoked; it cannot be rented for a trial")
    if node.provider.owners.filter(pk=buyer.pk).exists():
        # Its own provider measuring it would be a host report under a buyer's label.
        raise Forbidden("a node's own provider cannot measure it as a buyer: its figures "
                        "are host-reported (ask a buyer to run the trial)")
    now = timezone.now()
    today = EnrolmentToken.objects.filter(created_by=buyer, trial_of__isnull=False,
                                          created_at__gte=now - timedelta(days=1)).count()
    if today >= settings.TRIAL_TOKENS_PER_DAY:
        raise TooMany(f"at most {settings.TRIAL_TOKENS_PER_DAY} trial tokens a day per buyer; "
                      "use the ones you have, or try again tomorrow")
    ends = now + timedelta(hours=hours)
    plain = secrets.new_secret()
    token = EnrolmentToken.objects.create(
        provider=node.provider, region=node.region,
        node_name=f"{node.name}.trial-{secrets.new_secret()[:8].lower()}"[:128],
        token_hash=secrets.digest(plain), created_by=buyer, trial_of=node, trial_ends_at=ends,
        expires_at=min(ends, now + timedelta(hours=settings.ENROLMENT_TOKEN_TTL_HOURS)))
    return token, plain


def check_instance(node: Node, inventory: dict[str, Any]) -> None:
    """Refuse an agent whose instance is not ``node``'s hardware (Conflict says why)."""
    enrolled = set(node.host_keys.values_list("key", flat=True))
    shown = identity.keys(inventory)
    if enrolled and not enrolled & shown:
        raise Conflict(f"this instance is not node {node.pk} ({node.name}): none of its GPU "
                       "UUIDs, serials or NIC addresses is the node's; ask the provider for an "
                       "instance of the node on the board")
    model = Node.gpu_model_of(inventory)
    if node.gpu_model and model != node.gpu_model:
        raise Conflict(f"this instance has {model!r}, but node {node.pk} enrolled with "
                       f"{node.gpu_model!r}: it is not the node on the board")


def ended(node: Node, now: datetime | None = None) -> bool:
    """A trial agent past its trial's end (its key no longer works)."""
    return bool(node.trial_ends_at and node.trial_ends_at <= (now or timezone.now()))
