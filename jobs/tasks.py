"""Platform-side Celery tasks: thin wrappers over services."""

from __future__ import annotations

from dataclasses import asdict

from celery import shared_task

from jobs.services import sweeper


@shared_task(name="jobs.sweep", ignore_result=True)
def sweep() -> dict[str, int]:
    return asdict(sweeper.sweep())
