"""Platform-side Celery tasks of webhooks: thin wrappers over services."""

from __future__ import annotations

from celery import shared_task
from django.utils import timezone

from hooks.services import delivery


@shared_task(name="hooks.deliver", ignore_result=True)
def deliver(delivery_id: int) -> str | None:
    return delivery.attempt(delivery_id)


@shared_task(name="hooks.sweep", ignore_result=True)
def sweep() -> int:
    """Due retries, and deliveries whose message Redis lost or whose worker died; old log
    entries dropped."""
    now = timezone.now()
    delivery.prune(now)
    ids = delivery.due(now)
    for pk in ids:
        deliver.delay(pk)
    return len(ids)
