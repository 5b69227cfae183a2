"""A buyer registers, lists and removes webhooks."""

from __future__ import annotations

import secrets

from django.conf import settings
from django.contrib.auth.models import User

from config.errors import Conflict, Invalid
from hooks.models import Webhook
from hooks.services import targets
from hooks.services.events import EVENTS


def register(owner: User, url: str, events: list[str]) -> Webhook:
    """A new webhook; its ``secret`` is read from the returned row once, by the caller that
    shows it to the buyer (the API answers it at creation, and never again)."""
    unknown = sorted(set(events) - set(EVENTS))
    if unknown:
        raise Invalid(f"unknown event {unknown[0]!r}; the events are {', '.join(EVENTS)}",
                      field="events")
    if not events:
        raise Invalid("name at least one event", field="events")
    try:
        targets.resolve(url)
    except targets.Refused as exc:
        raise Invalid(str(exc), field="url") from None
    # A bound on the fan-out of public events (every certificate issued): each webhook is a
    # request per event from the platform's workers.
    if Webhook.objects.filter(owner=owner).count() >= settings.WEBHOOK_MAX_PER_USER:
        raise Conflict(f"you have {settings.WEBHOOK_MAX_PER_USER} webhooks "
                       "(WEBHOOK_MAX_PER_USER): delete one first", code="webhook_limit")
    return Webhook.objects.create(owner=owner, url=url, events=sorted(set(events)),
                                  secret=f"whsec_{secrets.token_hex(24)}")
