"""What jobs tells buyers' webhooks (hooks' outbox): a job of theirs has finished.

Sent where job_finished is, after the last run's transaction commits (which run is last is
only known then, jobs.services.lifecycle._after_run); the outbox keeps one delivery per job
and webhook when two runs ending together both report it.
"""

from __future__ import annotations

import logging

from django.conf import settings

from hooks.services import outbox
from jobs.models import BenchmarkJob, Run

log = logging.getLogger(__name__)


def job_finished(job: BenchmarkJob) -> None:
    try:
        runs = list(Run.objects.filter(job_id=job.pk).values("id", "node_id", "status", "error"))
        outbox.emit("job.finished", f"job:{job.pk}", {
            "job": job.pk, "status": job.overall_status(), "suite": job.suite,
            "profile": job.profile,
            "url": f"{settings.PUBLIC_API_URL}/api/v1/benchmarks/{job.pk}",
            "runs": [{"id": r["id"], "node": r["node_id"], "status": r["status"],
                      "error": r["error"][:500]} for r in runs],
        }, owner=job.owner_id)
    except Exception:  # noqa: BLE001 - the result is stored; a webhook must not fail its post
        log.exception("job %s finished: its webhook deliveries could not be written", job.pk)
