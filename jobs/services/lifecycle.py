"""A run's life: claimed by one attempt under a lease, progressed, finished or cancelled.

Every state change is a row lock or a conditional UPDATE, so two workers (or a late
worker and the sweeper) never both believe they own a run.
"""

from __future__ import annotations

import json
import logging
import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from config.errors import Conflict, Forbidden, Invalid, NotFound, Unprocessable
from contract.run_spec import PeerSpec, RunSpec
from contract.suites import SUITES, resolve_params
from fleet.models import Node, ReferenceEndpoint
from jobs.models import Attempt, BenchmarkJob, Run
from jobs.services import (
    coordination,
    evidence,
    intake,
    observability,
    reference_records,
    webhook_events,
)
from jobs.signals import job_finished, run_stored

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Claim:
    run: Run
    attempt: Attempt
    runs_in_job: int | None = None  # known when the claim read it: 1 needs no mesh query

    def spec(self) -> RunSpec:
        """What the node needs to run it; chosen by the platform, not the host."""
        job = self.run.job
        # The token lets the reference's echo server keep its own record of this run's RTT.
        token = evidence.echo_token(self.attempt.id)
        peers = [PeerSpec(**e.as_peer(), token=token)
                 for e in ReferenceEndpoint.for_node(self.run.node)]
        nodes = ([coordination.mesh_entry(0, self.run.node)] if self.runs_in_job == 1
                 else coordination.mesh(job))
        params = resolve_params(job.params, job.profile)
        if "seed" not in job.params:
            # Every run carries a seed, as the platform's own runs do: the host cannot tell
            # a certification or a re-test by its spec.
            params["seed"] = int(evidence.echo_token(f"seed:{self.attempt.id}")[:8], 16) % 2**31
        return RunSpec(
            run_id=self.run.pk,
            attempt_id=str(self.attempt.id),
            suite=job.suite,
            profile=job.profile,
            probes=list(SUITES[job.suite]),
            params=params,
            peers=peers,
            lease_seconds=settings.RUN_LEASE_SECONDS,
            mesh=nodes,
            node_rank=next(n["rank"] for n in nodes if n["node_id"] == self.run.node_id),
            rendezvous=coordination.rendezvous(job, nodes),
        )


def _lease_end() -> Any:
    return timezone.now() + timedelta(seconds=settings.RUN_LEASE_SECONDS)


def _node_run(node: Node, run_id: int) -> Run:
    # Another node's run answers exactly like a missing one: nothing to learn from probing ids.
    # Only the run's row is locked: FOR UPDATE over the join also locked the job (every run
    # of a job queued behind it) and the node (behind its last-seen update).
    run = (Run.objects.select_for_update(of=("self",))
           .select_related("job")
           .filter(pk=run_id, node=node).first())
    if run is None:
        raise NotFound("no such run for this node")
    run.node = node  # the authenticated node: no need to read it again
    return run


# A fresh run's claim as one statement: the run taken, its attempt written, its job read.
# Through the ORM it was BEGIN, SELECT .. FOR UPDATE, INSERT, UPDATE and COMMIT, the
# largest share of the dispatch latency after the submission itself (make bench).
_CLAIM_QUEUED_SQL = """
WITH claimed AS (
    UPDATE jobs_run SET status = 'running', attempts = attempts + 1, current_attempt = %(attempt)s,
           lease_expires_at = %(lease)s, started_at = COALESCE(started_at, %(now)s),
           progress = '{}'::jsonb
    WHERE id = %(run)s AND node_id = %(node)s AND status = 'queued'
          AND current_attempt IS NULL AND attempts < %(max_attempts)s
          AND NOT EXISTS (SELECT 1 FROM jobs_run o WHERE o.node_id = %(node)s
                          AND o.status = 'running')
    RETURNING id, job_id, attempts, queued_at, started_at
), attempt AS (
    INSERT INTO jobs_attempt (id, run_id, number, claimed_at, outcome)
    SELECT %(attempt)s, id, attempts, %(now)s, '' FROM claimed
)
SELECT c.job_id, c.attempts, c.queued_at, c.started_at, j.suite, j.profile, j.params,
       (SELECT count(*) FROM jobs_run o WHERE o.job_id = c.job_id)
FROM claimed c JOIN jobs_benchmarkjob j ON j.id = c.job_id
"""


def _claim_queued(node: Node, run_id: int, now: Any) -> Claim | None:
    """The common case, a queued run never claimed before; None for any other."""
    attempt_id = uuid.uuid4()
    lease = _lease_end()
    with connection.cursor() as cursor:
        cursor.execute(_CLAIM_QUEUED_SQL, {
            "attempt": attempt_id, "lease": lease, "now": now, "run": run_id, "node": node.pk,
            "max_attempts": settings.RUN_MAX_ATTEMPTS})
        row = cursor.fetchone()
    if row is None:
        return None
    job_id, attempts, queued_at, started_at, suite, profile, params, runs_in_job = row
    job = BenchmarkJob(pk=job_id, suite=suite, profile=profile,
                       params=json.loads(params) if isinstance(params, str) else params)
    run = Run(pk=run_id, job=job, node=node, status=Run.Status.RUNNING, attempts=attempts,
              current_attempt=attempt_id, lease_expires_at=lease, queued_at=queued_at,
              started_at=started_at, progress={})
    return Claim(run=run, attempt=Attempt(id=attempt_id, run=run, number=attempts,
                                          claimed_at=now), runs_in_job=runs_in_job)


def claim(node: Node, run_id: int) -> Claim:
    """The node's run, now running under a new attempt. A node runs one run at a time (the
    one_running_run_per_node constraint decides two claims at once)."""
    now = timezone.now()
    try:
        with transaction.atomic():
            fast = _claim_queued(node, run_id, now)
            if fast is None:
                fast = _claim_slow(node, run_id, now)
    except IntegrityError:
        raise _node_busy(node, run_id, now) from None
    _log_claim(fast, node)
    return fast


def _node_busy(node: Node, run_id: int, now: Any) -> Conflict:
    other = (Run.objects.filter(node=node, status=Run.Status.RUNNING).exclude(pk=run_id)
             .values_list("pk", "lease_expires_at").first())
    other_id, lease = other if other is not None else (None, None)
    # A dead attempt's run is queued again by the sweeper once its lease runs out.
    wait = ((lease - now).total_seconds() if lease is not None and lease > now else 0.0) \
        + settings.SWEEP_INTERVAL_SECONDS
    return Conflict(f"this node is running run {other_id}: a node runs one run at a time; "
                    "claim this one when that one has finished", code="node_busy",
                    retry_after=wait)


def _claim_slow(node: Node, run_id: int, now: Any) -> Claim:
    run = _node_run(node, run_id)
    lease_over = run.lease_expires_at is not None and run.lease_expires_at <= now
    if run.status == Run.Status.RUNNING and not lease_over:
        assert run.lease_expires_at is not None
        # A live attempt holds it (or a dead one whose lease has not run out yet).
        raise Conflict(f"run {run_id} is leased by another attempt", code="leased",
                       retry_after=(run.lease_expires_at - now).total_seconds())
    if run.status not in (Run.Status.QUEUED, Run.Status.RUNNING):
        raise Conflict(f"run {run_id} is {run.status} and cannot be claimed", code=run.status)
    if Run.objects.filter(node=node, status=Run.Status.RUNNING).exclude(pk=run.pk).exists():
        raise _node_busy(node, run_id, now)
    if run.attempts >= settings.RUN_MAX_ATTEMPTS:
        _finish(run, Run.Status.FAILED,
                f"gave up after {run.attempts} attempts (leases expired)", now)
        raise Conflict(f"run {run_id} failed after {run.attempts} attempts")
    if run.current_attempt is not None:
        Attempt.objects.filter(pk=run.current_attempt, finished_at__isnull=True).update(
            finished_at=now, outcome="expired")
    attempt = Attempt.objects.create(run=run, number=run.attempts + 1)
    run.status = Run.Status.RUNNING
    run.attempts += 1
    run.current_attempt = attempt.id
    run.lease_expires_at = _lease_end()
    run.started_at = run.started_at or now
    run.progress = {}
    run.save()
    return Claim(run=run, attempt=attempt)


def _log_claim(claimed: Claim, node: Node) -> None:
    run, attempt = claimed.run, claimed.attempt
    log.info("run %s claimed by node %s (attempt %s)", run.pk, node.pk, attempt.number,
             extra={"run_id": run.pk, "job_id": run.job_id, "node_id": node.pk,
                    "attempt_id": attempt.id})


def renew(node: Node, run_id: int, attempt_id: uuid.UUID, progress: dict[str, Any] | None) -> None:
    """Heartbeat while a probe runs: extend the lease, record where it is."""
    updates: dict[str, Any] = {"lease_expires_at": _lease_end()}
    if progress is not None:
        updates["progress"] = progress
    renewed = Run.objects.filter(pk=run_id, node=node, status=Run.Status.RUNNING,
                                 current_attempt=attempt_id).update(**updates)
    if not renewed:
        _explain_stale(node, run_id, attempt_id)


def finish(node: Node, run_id: int, attempt_id: uuid.UUID, succeeded: bool,
           samples: list[dict[str, Any]], error: str, inventory: dict[str, Any]) -> bool:
    """Record an attempt's outcome once. Returns False when it was already recorded.

    A succeeded result is reviewed before anything of it is stored: metrics its probes do
    not produce are a 400; the reference endpoints' own records make figures verified (or
    refute them), and the consistency rules refuse what physics does not allow (422, the
    run failed with the reason, nothing of the result kept).
    """
    # The node's references, read once: the wait, the evidence and the loopback exemption.
    network = succeeded and any(s["metric"].startswith("network.") for s in samples)
    references = evidence.references_by_peer(node) if network else {}
    if references:
        intake.await_reference_records(references, samples)
    now = timezone.now()
    refused: intake.Refused | None = None
    with transaction.atomic():
        run = _node_run(node, run_id)
        current = run.status == Run.Status.RUNNING and run.current_attempt == attempt_id
        # The current attempt of a running run cannot have finished: only another attempt
        # needs reading (a retried post of a stored result, or a late one).
        attempt = None if current else Attempt.objects.filter(pk=attempt_id, run=run).first()
        if not current and attempt is None:
            raise NotFound("unknown attempt for this run")
        if attempt is not None and attempt.finished_at is not None and attempt.outcome in (
                Run.Status.SUCCEEDED, Run.Status.FAILED):
            return False  # the same attempt posted twice (a retry): stored once already
        if not current:
            log.warning("rejected late result for run %s from attempt %s (run is %s)",
                        run_id, attempt_id, run.status,
                        extra={"run_id": run_id, "job_id": run.job_id, "node_id": node.pk,
                               "attempt_id": attempt_id})
            raise Conflict(
                f"attempt {attempt_id} is no longer current for run {run_id} "
                f"(run is {run.status}); result not stored")
        if succeeded:
            try:
                intake.review(run, node, attempt_id, samples, inventory, now, references)
            except intake.Refused as exc:
                refused = exc
        fault = "" if succeeded else _platform_fault(run, node, now)
        if refused is not None:
            _finish(run, Run.Status.FAILED, f"inconsistent result: {refused}"[:4000], now)
            Attempt.objects.filter(pk=attempt_id).update(finished_at=now,
                                                         outcome=Run.Status.FAILED)
        elif fault and run.job.node_count == 1 and run.attempts < settings.RUN_MAX_ATTEMPTS:
            _again_later(run, attempt_id, error, now)
        else:
            run.fault = fault
            _store(run, node, attempt_id, succeeded, samples, error, inventory, now)
    if refused is not None:
        for violation in refused.found:
            observability.count_rejection(f"inconsistent:{violation.check}")
        log.warning("run %s refused: %s", run.pk, refused, extra={"run_id": run.pk,
                                                                  "node_id": node.pk})
        raise Unprocessable(f"inconsistent result, not stored: {refused}", code="inconsistent",
                            errors={v.check: v.message for v in refused.found})
    return True


def _store(run: Run, node: Node, attempt_id: uuid.UUID, succeeded: bool,
           samples: list[dict[str, Any]], error: str, inventory: dict[str, Any],
           now: Any) -> None:
    status = Run.Status.SUCCEEDED if succeeded else Run.Status.FAILED
    stored = intake.store_samples(run, samples)
    run.inventory = inventory
    _finish(run, status, "" if succeeded else (error or "probe failed"), now)
    Attempt.objects.filter(pk=attempt_id).update(finished_at=now, outcome=status)
    # The board's projection (board.latest) commits with the run.
    run_stored.send(Run, run=run, samples=stored, succeeded=succeeded)
    webhook_events.figures_changed(run)
    log.info("run %s %s", run.pk, status, extra={"run_id": run.pk, "job_id": run.job_id,
                                                 "node_id": node.pk, "attempt_id": attempt_id})
    intake.record_inventory(node, inventory)


def _again_later(run: Run, attempt_id: uuid.UUID, error: str, now: Any) -> None:
    """A one-node run that failed while the platform's reference was down failed by the
    platform's fault: it goes back to the queue, and the sweeper sends it again once the
    node has been quiet for RUN_REDISPATCH_SECONDS, not at once into the same outage. It
    fails as any run does after RUN_MAX_ATTEMPTS."""
    Attempt.objects.filter(pk=attempt_id).update(finished_at=now, outcome="reference")
    run.status, run.current_attempt, run.lease_expires_at = Run.Status.QUEUED, None, None
    run.dispatched_at = now  # sent again by the sweeper (forget_stuck_dispatches)
    run.error = (f"attempt {run.attempts} failed while the platform's reference was down; "
                 f"it is tried again later: {error}")[:4000]
    run.save(update_fields=["status", "current_attempt", "lease_expires_at", "dispatched_at",
                            "error"])
    log.info("run %s queued again: its reference was down", run.pk,
             extra={"run_id": run.pk, "node_id": run.node_id, "attempt_id": attempt_id})


def _platform_fault(run: Run, node: Node, now: Any) -> str:
    """"reference" when a run that measures against the node's references failed while one
    of them was down (its agent silent), as the platform's own records say; else ""."""
    if "network" not in SUITES.get(run.job.suite, ()):
        return ""
    down = reference_records.silent(ReferenceEndpoint.for_node(node), now.timestamp())
    return "reference" if down else ""


def _finish(run: Run, status: str, error: str, now: Any) -> None:
    run.status = status
    run.error = error
    run.finished_at = now
    run.lease_expires_at = None
    run.save()
    job, requested_by = run.job, run.requested_by
    transaction.on_commit(lambda: _after_run(job, requested_by))


def _after_run(job: BenchmarkJob, requested_by: str) -> None:
    """Once a job's last run is in: job_finished (the board records its links and cluster,
    certification judges on it). A single-node job is finished with its run: no query."""
    if job.node_count > 1 and Run.objects.filter(job_id=job.pk).exclude(
            status__in=Run.FINISHED).exists():
        return
    job_finished.send(BenchmarkJob, job_id=job.pk, requested_by=requested_by)
    # Only now does the job read as finished: its receivers have recorded what they derive.
    if job.finished_at is None:
        job.finished_at = timezone.now()
        BenchmarkJob.objects.filter(pk=job.pk, finished_at=None).update(
            finished_at=job.finished_at)
    webhook_events.job_finished(job)


def _explain_stale(node: Node, run_id: int, attempt_id: uuid.UUID) -> None:
    run = Run.objects.filter(pk=run_id, node=node).first()
    if run is None:
        raise NotFound("no such run for this node")
    raise Conflict(
        f"attempt {attempt_id} is no longer current for run {run_id} (run is {run.status})")


def cancel(job: BenchmarkJob, by_platform: bool = False) -> int:
    """Cancel every run of the job that has not finished; returns how many.

    A job the platform asked for (certification, re-tests) is the platform's: its
    requester cannot cancel it (a provider stopping its own renewal while it goes badly
    kept its old certificate). Cancelled, a job is finished like any other (job_finished),
    so a certification request on it fails and revokes what it was renewing.
    """
    if not by_platform and Run.objects.filter(
            job=job, requested_by=Run.RequestedBy.PLATFORM).exists():
        raise Forbidden("this job was asked for by the platform (certification or a re-test): "
                        "only the platform can cancel it")
    cancelled = Run.objects.filter(job=job).exclude(status__in=Run.FINISHED).update(
        status=Run.Status.CANCELLED, finished_at=timezone.now(), lease_expires_at=None,
        error="cancelled by the requester")
    if cancelled:
        settle([job.pk])
    return cancelled


def settle(job_ids: list[int]) -> None:
    """After runs were finished in bulk (cancel, a revoked or suspended node, the sweeper):
    each job whose last run is now in gets its job_finished, on commit."""
    def after() -> None:
        done = (BenchmarkJob.objects.filter(pk__in=set(job_ids))
                .exclude(runs__status__in=[Run.Status.QUEUED, Run.Status.RUNNING]))
        for job in done:
            settle_now(job)

    if job_ids:
        transaction.on_commit(after)


def settle_now(job: BenchmarkJob) -> None:
    """job_finished for a job whose runs are all in, now (the sweeper's, for a lost one)."""
    requested_by = (Run.objects.filter(job=job).values_list("requested_by", flat=True)
                    .first() or Run.RequestedBy.BUYER)
    _after_run(job, requested_by)


def fail_open_runs(node: Node, reason: str) -> int:
    open_runs = Run.objects.filter(node=node).exclude(status__in=Run.FINISHED)
    job_ids = list(open_runs.values_list("job_id", flat=True))
    failed = open_runs.update(status=Run.Status.FAILED, finished_at=timezone.now(),
                              lease_expires_at=None, error=reason)
    settle(job_ids)
    return failed


def barrier(node: Node, run_id: int, attempt_id: uuid.UUID, name: str) -> coordination.BarrierState:
    run = Run.objects.select_related("job").filter(pk=run_id, node=node).first()
    if run is None:
        raise NotFound("no such run for this node")
    if run.status != Run.Status.RUNNING or run.current_attempt != attempt_id:
        raise Conflict(f"attempt {attempt_id} is no longer current for run {run_id}")
    problem = coordination.name_error(run.job, name)
    if problem:
        raise Invalid(problem)
    return coordination.arrive(run, name)
