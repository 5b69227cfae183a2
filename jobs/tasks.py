"""Platform-side Celery tasks: thin wrappers over services."""

from __future__ import annotations

from dataclasses import asdict

from celery import shared_task
from django.utils import timezone

from jobs.services import retests, sweeper


@shared_task(name="jobs.sweep", ignore_result=True)
def sweep() -> dict[str, int]:
    return asdict(sweeper.sweep())


@shared_task(name="jobs.retests", ignore_result=True)
def run_retests() -> dict[str, int]:
    return asdict(retests.tick(timezone.now()))
