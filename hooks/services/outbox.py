"""Events into the outbox: one Delivery row per webhook that asked, written in the caller's
transaction, handed to a worker once it commits. The rows are the record: a broker that
loses the message, or a worker that is down, delays a delivery (the sweeper sends it) but
never loses it."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from hooks.models import Delivery, Webhook
from hooks.services.events import EVENTS, OWN, WATCHED


def emit(event: str, subject: str, data: dict[str, Any], owner: User | int | None = None,
         node: int | None = None) -> int:
    """Queue ``event`` about ``subject`` ("job:12") for every active webhook that asked for it
    (only ``owner``'s for an event about the caller's own things, only those watching
    ``node`` for an event about a node). Returns how many rows were written; an event
    already queued for a webhook is not queued twice."""
    assert event in EVENTS, event
    webhooks = Webhook.objects.filter(active=True, events__contains=[event])
    if event in OWN:
        if owner is None:
            return 0
        webhooks = webhooks.filter(owner=owner)
    if event in WATCHED:
        if node is None:
            return 0
        webhooks = webhooks.filter(nodes__contains=[node])
    return len(queue(webhooks.values_list("pk", flat=True), event, subject, data))


def queue(webhook_ids: Iterable[int], event: str, subject: str,
          data: dict[str, Any]) -> list[int]:
    """One delivery of ``event`` to each of ``webhook_ids``, but none a second time: the ids
    of those written now."""
    now = timezone.now()
    rows = [Delivery(webhook_id=pk, event=event, subject=subject, next_attempt_at=now,
                     enqueued_at=now, payload={"event": event, "created_at": now.isoformat(),
                                               "data": data})
            for pk in webhook_ids]
    if not rows:
        return []
    with transaction.atomic():
        created = Delivery.objects.bulk_create(rows, ignore_conflicts=True)
        # ignore_conflicts leaves pk unset: read back what this event wrote.
        ids = list(Delivery.objects.filter(event=event, subject=subject, enqueued_at=now,
                                           webhook_id__in=[r.webhook_id for r in created])
                   .values_list("pk", flat=True))
        # robust: a broker that is down must not fail the event; the sweeper sends it later.
        transaction.on_commit(lambda: _enqueue(ids), robust=True)
    return ids


def _enqueue(ids: list[int]) -> None:
    from hooks import tasks  # the task module imports the services, not the other way

    for pk in ids:
        tasks.deliver.delay(pk)
