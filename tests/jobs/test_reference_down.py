"""A run that failed while the platform's reference was down is the platform's failure: it
is queued again and sent later, and only its last attempt fails it. "Down" is what the
platform saw on its side when the failure came in (the reference's agent silent), never
what the host says: a host that fails beside a live reference fails its run at once."""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

from django.utils import timezone

from fleet.models import Node, ReferenceEndpoint
from jobs.models import Attempt, Run
from jobs.services import lifecycle, submission, sweeper


def fail(e: Any, run: Run) -> None:
    claim = lifecycle.claim(e.node, run.pk)
    lifecycle.finish(e.node, run.pk, claim.attempt.id, False, [],
                     "iperf3 to reference:hangzhou:ref1 failed: Connection refused", {})


def reference(e: Any, silent_s: float) -> ReferenceEndpoint:
    return ReferenceEndpoint.objects.create(region=e.node.region, name="ref1", host="10.0.0.9",
                                            key_digest="0" * 64,
                                            records_through=time.time() - silent_s)


def test_a_run_failed_in_a_reference_outage_is_queued_again_and_sent_later(
        buyer: Any, enrol_node: Any, settings: Any) -> None:
    settings.RUN_MAX_ATTEMPTS = 2
    e = enrol_node("hz-1", address="10.0.7.2")
    reference(e, silent_s=settings.REFERENCE_AGENT_SILENT_S + 60)
    job, _ = submission.submit(buyer.user, [e.node.pk], "network")
    run = job.runs.get()
    fail(e, run)
    run.refresh_from_db()
    assert run.status == Run.Status.QUEUED and run.fault == ""
    assert "reference was down" in run.error and "tried again later" in run.error
    assert Attempt.objects.get(run=run).outcome == "reference"
    # Not sent again into the same outage at once: once the node has been quiet.
    Node.objects.filter(pk=e.node.pk).update(last_seen_at=timezone.now())
    assert sweeper.forget_stuck_dispatches(timezone.now()) == 0
    later = timezone.now() + timedelta(seconds=settings.RUN_REDISPATCH_SECONDS + 1)
    Node.objects.filter(pk=e.node.pk).update(last_seen_at=later)
    assert sweeper.forget_stuck_dispatches(later) == 1
    fail(e, run)  # the last attempt, still in the outage: it fails, as the platform's fault
    run.refresh_from_db()
    assert (run.status, run.fault, run.attempts) == (Run.Status.FAILED, "reference", 2)


def test_a_failure_beside_a_live_reference_fails_the_run_at_once(
        buyer: Any, enrol_node: Any) -> None:
    e = enrol_node("hz-1", address="10.0.7.2")
    reference(e, silent_s=0)
    job, _ = submission.submit(buyer.user, [e.node.pk], "network")
    fail(e, job.runs.get())
    run = job.runs.get()
    assert (run.status, run.fault, run.attempts) == (Run.Status.FAILED, "", 1)
