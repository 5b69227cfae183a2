"""A buyer registers, lists, switches on and off, and removes webhooks, and rotates their
secrets."""

from __future__ import annotations

import secrets

from django.conf import settings
from django.contrib.auth.models import User

from config.errors import Conflict, Invalid
from hooks.models import Webhook
from hooks.services import targets, watch
from hooks.services.events import EVENTS


def register(owner: User, url: str, events: list[str], nodes: list[int] | None = None) -> Webhook:
    """A new webhook; its ``secret`` is read from the returned row once, by the caller that
    shows it to the buyer (the API answers it at creation, and never again)."""
    unknown = sorted(set(events) - set(EVENTS))
    if unknown:
        raise Invalid(f"unknown event {unknown[0]!r}; the events are {', '.join(EVENTS)}",
                      field="events")
    if not events:
        raise Invalid("name at least one event", field="events")
    watched = watch.check(owner, nodes or [], events)
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
                                  nodes=watched, secret=new_secret())


def new_secret() -> str:
    return f"whsec_{secrets.token_hex(24)}"


def rotate_secret(webhook: Webhook) -> Webhook:
    """A new secret, at once: delivery signs when it sends (hooks.services.delivery.post), so
    every delivery from now on, a pending retry included, is signed with the new one and
    none with the old."""
    webhook.secret = new_secret()
    webhook.save(update_fields=["secret"])
    return webhook


def set_active(webhook: Webhook, active: bool) -> Webhook:
    """The owner switches a webhook on or off. On again starts the count of failed
    deliveries afresh and forgets why the platform turned it off; what was pending while it
    was off is sent as it falls due."""
    webhook.active = active
    if active:
        webhook.failed_in_a_row, webhook.disabled_reason, webhook.disabled_at = 0, "", None
    webhook.save(update_fields=["active", "failed_in_a_row", "disabled_reason", "disabled_at"])
    return webhook
