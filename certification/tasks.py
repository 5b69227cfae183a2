"""Platform-side Celery tasks of the certification app: thin wrappers over services."""

from __future__ import annotations

from celery import shared_task

from certification.services import issuing


@shared_task(name="certification.renew_certificates", ignore_result=True)
def renew_certificates() -> int:
    # The re-run is requested on behalf of one of the node's provider's owners.
    return issuing.renew_due(lambda node: node.provider.owners.order_by("id").first())
