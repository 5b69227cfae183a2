"""A test delivery the owner asks for (POST /api/v1/webhooks/ID/ping): to that webhook
only, signed and logged as any event, so a buyer checks the receiver and its signature
check before an event comes."""

from __future__ import annotations

import uuid

from config.errors import Conflict
from hooks.models import Delivery, Webhook
from hooks.services import outbox
from hooks.services.events import PING


def ping(webhook: Webhook) -> Delivery:
    if not webhook.active:
        # Nothing is sent to a webhook that is off: the ping would wait in the log unsent.
        raise Conflict("the webhook is off: switch it on (PATCH active: true) first",
                       code="inactive")
    [pk] = outbox.queue([webhook.pk], PING, f"ping:{uuid.uuid4().hex}",
                        {"webhook": webhook.pk, "url": webhook.url,
                         "message": "a test delivery you asked for"})
    return Delivery.objects.get(pk=pk)
