"""Platform-side Celery tasks of the leaderboard app: thin wrappers over services."""

from __future__ import annotations

from celery import shared_task

from leaderboard.services import certification


@shared_task(name="leaderboard.renew_certificates", ignore_result=True)
def renew_certificates() -> int:
    # The re-run is requested on behalf of one of the node's provider's owners.
    return certification.renew_due(lambda node: node.provider.owners.order_by("id").first())
