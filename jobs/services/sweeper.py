"""The sweeper: what Redis lost or a dead worker left behind is recovered from the database."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Exists, Max, OuterRef
from django.utils import timezone

from config import isolated
from fleet.models import Node
from fleet.services import broker, revocation
from jobs.models import Attempt, BenchmarkJob, Run
from jobs.services import lifecycle, partitions, reference_records
from jobs.services.dispatch import publish_run

log = logging.getLogger(__name__)


@dataclass
class SweepReport:
    expired: int = 0
    given_up: int = 0
    republished: int = 0
    timed_out: int = 0
    stuck: int = 0
    suspended: int = 0
    seen: int = 0  # nodes whose liveness key was set since the last pass
    trials_ended: int = 0  # buyers' trial agents revoked at their trial's end
    records_pruned: int = 0  # reference records past REFERENCE_RECORDS_KEEP_HOURS
    settled: int = 0  # jobs whose lost job_finished was sent again
    months_made: int = 0  # the samples table's month partitions made ahead
    months_rolled: int = 0  # months of samples rolled up past SAMPLES_RAW_KEEP_MONTHS
    brokers_down: list[str] = field(default_factory=list)


def sweep() -> SweepReport:
    report = SweepReport()
    now = timezone.now()
    up = []
    for name, node_broker in broker.brokers().items():
        try:
            restarted = broker.ensure_lock_script(node_broker.client())
        except Exception as exc:  # noqa: BLE001 - that broker down: the next sweep tries again
            log.warning("broker %s unreachable, its runs wait for the next sweep: %s", name, exc)
            report.brokers_down.append(name)
            continue
        up.append(name)
        if restarted:
            # Scripts do not survive a restart, and neither may the queues: publish every
            # run queued on that broker again (the others' queues are intact). A duplicate
            # delivery is harmless, the claim refuses it.
            Run.objects.filter(status=Run.Status.QUEUED, node__broker=name).update(
                dispatched_at=None)
    # Each phase on its own (config.isolated): a broker answering nonsense to the budget
    # check must not stop expired leases from being recovered, nor queued runs from going out.
    report.seen = isolated.step(lambda: refresh_liveness(up, now), "sweep: liveness")
    isolated.step(lambda: expire_leases(now, report), "sweep: expired leases")
    report.suspended = isolated.step(lambda: enforce_broker_budgets(up), "sweep: broker budgets")
    report.trials_ended = isolated.step(lambda: end_trials(now), "sweep: ended trials")
    report.timed_out = isolated.step(lambda: fail_unstarted(now), "sweep: unstarted runs")
    report.stuck = isolated.step(lambda: forget_stuck_dispatches(now), "sweep: stuck dispatches")
    report.republished = isolated.step(lambda: republish(up, now), "sweep: republishing")
    report.settled = isolated.step(lambda: settle_lost(now), "sweep: lost job_finished")
    report.records_pruned = isolated.step(lambda: reference_records.prune(now.timestamp()),
                                          "sweep: old reference records")
    # Two catalog reads a pass; the DDL runs once a month (partitions.py).
    report.months_made = isolated.step(lambda: partitions.ensure(now), "sweep: months ahead")
    report.months_rolled = isolated.step(lambda: partitions.roll_up(now), "sweep: months rolled up")
    if report.expired or report.given_up or report.republished or report.timed_out \
            or report.stuck or report.suspended or report.trials_ended or report.settled \
            or report.months_made or report.months_rolled or report.brokers_down:
        log.info("sweep: %s", report)
    return report


def expire_leases(now: datetime, report: SweepReport) -> int:
    """Runs whose node stopped renewing the lease: queued again, or failed after the last
    attempt. Each run in its own savepoint."""
    def expire(run: Run) -> None:
        if run.current_attempt is not None:
            Attempt.objects.filter(pk=run.current_attempt, finished_at__isnull=True).update(
                finished_at=now, outcome="expired")
        gave_up = run.attempts >= settings.RUN_MAX_ATTEMPTS
        if gave_up:
            run.status = Run.Status.FAILED
            run.error = (f"gave up after {run.attempts} attempts: the node stopped "
                         "renewing its lease each time")
            run.finished_at = now
        else:
            run.status = Run.Status.QUEUED
            run.dispatched_at = None
        run.current_attempt = None
        run.lease_expires_at = None
        run.save()
        if gave_up:
            lifecycle.settle([run.job_id])
        # Counted once the run's savepoint holds (a run that raised is not recovered).
        report.given_up += gave_up
        report.expired += not gave_up

    with transaction.atomic():
        stale = list(Run.objects.select_for_update(skip_locked=True).filter(
            status=Run.Status.RUNNING, lease_expires_at__lte=now))
        return len(stale) - isolated.each(stale, expire, "sweep: expired lease of run")


def republish(brokers: list[str], now: datetime) -> int:
    """Publish the queued runs that have no message on their broker."""
    pending = list(Run.objects.filter(status=Run.Status.QUEUED, node__status=Node.Status.ACTIVE,
                                      node__broker__in=brokers, dispatched_at__isnull=True)
                   .values_list("pk", "node_id", "node__broker")[:1000])
    Run.objects.filter(pk__in=[run_id for run_id, _, _ in pending]).update(dispatched_at=now)
    return sum(1 for run_id, node_id, broker_name in pending
               if publish_run(run_id, node_id, broker_name))


# One statement for every sighting of the pass; never moves a node's last sighting back
# (a node request may have stamped a later one).
_SEEN_SQL = """
UPDATE fleet_node AS n SET last_seen_at = v.seen
FROM unnest(%s::bigint[], %s::timestamptz[]) AS v(id, seen)
WHERE n.id = v.id AND (n.last_seen_at IS NULL OR n.last_seen_at < v.seen)
"""


def refresh_liveness(brokers: list[str], now: datetime) -> int:
    """Record when each active node's worker last set its liveness key: one pipelined pass
    per broker and one UPDATE, whatever the fleet's size. Returns how many were seen."""
    seen: dict[int, datetime] = {}
    for name in brokers:
        ids = list(Node.objects.filter(status=Node.Status.ACTIVE, broker=name)
                   .values_list("pk", flat=True))
        for node_id, idle in broker.take_liveness(ids, name).items():
            seen[node_id] = now - timedelta(seconds=idle)
    if seen:
        with connection.cursor() as cursor:
            cursor.execute(_SEEN_SQL, [list(seen), list(seen.values())])
    return len(seen)


def end_trials(now: datetime) -> int:
    """Revoke the trial agents whose trial ended: their key already stopped working (the
    API refuses it); this fails their open runs and deletes their broker user too."""
    over = list(Node.objects.filter(status=Node.Status.ACTIVE, trial_ends_at__lte=now))
    return len(over) - isolated.each(
        over, lambda node: revocation.revoke(node, reason="the buyer's trial ended"),
        "sweep: ending the trial of node")


def enforce_broker_budgets(brokers: list[str]) -> int:
    """Switch off the Redis user of every node over its memory or connection budget."""
    if not settings.NODE_BROKER_ACL:
        return 0
    suspended = 0
    for name in brokers:
        nodes = dict(Node.objects.filter(status=Node.Status.ACTIVE, broker_suspended_reason="",
                                         broker=name)
                     .exclude(broker_user="").values_list("pk", "name"))
        if nodes:
            suspended += _suspend_over_budget(nodes, name)
    return suspended


def _suspend_over_budget(nodes: dict[int, str], broker_name: str) -> int:
    suspended = 0
    for use in broker.broker_use(list(nodes), broker_name):
        over = []
        if use.bytes > settings.NODE_BROKER_MAX_BYTES:
            over.append(f"{use.bytes} bytes in its broker keys (budget "
                        f"{settings.NODE_BROKER_MAX_BYTES}, NODE_BROKER_MAX_BYTES)")
        if use.connections > settings.NODE_BROKER_MAX_CONNECTIONS:
            over.append(f"{use.connections} broker connections (budget "
                        f"{settings.NODE_BROKER_MAX_CONNECTIONS}, NODE_BROKER_MAX_CONNECTIONS)")
        if not over:
            continue
        reason = f"broker user suspended: {'; '.join(over)}"[:255]
        broker.suspend_node_user(use.node_id, broker_name)
        Node.objects.filter(pk=use.node_id).update(broker_suspended_reason=reason)
        lifecycle.fail_open_runs(Node(pk=use.node_id), reason)
        log.warning("node %s (%s): %s", use.node_id, nodes[use.node_id], reason)
        suspended += 1
    return suspended


def fail_unstarted(now: datetime) -> int:
    """Queued runs their node never started within RUN_QUEUE_TIMEOUT_SECONDS fail, saying why."""
    limit = settings.RUN_QUEUE_TIMEOUT_SECONDS
    failed = 0
    stale = list(Run.objects.filter(status=Run.Status.QUEUED,
                                    queued_at__lte=now - timedelta(seconds=limit))
                 .select_related("node", "job"))

    def fail(run: Run) -> None:
        nonlocal failed
        node = run.node
        seen = node.last_seen_at.isoformat(timespec="seconds") if node.last_seen_at else "never"
        done = Run.objects.filter(pk=run.pk, status=Run.Status.QUEUED).update(
            status=Run.Status.FAILED, finished_at=now,
            error=f"not started within {limit} s: node {node.name} is offline "
                  f"(last seen {seen})" if not node.online else
                  f"not started within {limit} s: node {node.name} did not take it")
        if done:
            # The job's last run in: its links (what the other nodes measured still counts)
            # and a certification on it fails, saying why.
            lifecycle.settle([run.job_id])
        failed += done

    isolated.each(stale, fail, "sweep: failing the unstarted run")
    return failed


def forget_stuck_dispatches(now: datetime) -> int:
    """Mark for republishing the queued runs of nodes that are online but have done nothing
    for RUN_REDISPATCH_SECONDS: their messages were lost on the way (the web process died
    between its commit and its publish, say). A duplicate message is harmless: the second
    claim of a run is refused."""
    quiet_since = now - timedelta(seconds=settings.RUN_REDISPATCH_SECONDS)
    node_busy = Run.objects.filter(node=OuterRef("node"), status=Run.Status.RUNNING)
    node_worked = Run.objects.filter(node=OuterRef("node"), finished_at__gte=quiet_since)
    online_since = now - timedelta(seconds=settings.NODE_OFFLINE_AFTER_SECONDS)
    return (Run.objects.filter(status=Run.Status.QUEUED, dispatched_at__lt=quiet_since,
                               node__status=Node.Status.ACTIVE,
                               node__last_seen_at__gte=online_since)
            .exclude(Exists(node_busy)).exclude(Exists(node_worked))
            .update(dispatched_at=None))


def settle_lost(now: datetime) -> int:
    """Send job_finished again for the jobs whose last run is in but whose job_finished never
    ran (the process died between the last run's commit and its on-commit hook): without it a
    multi-node job would have no links or cluster and read as running for ever, and a
    certification on it would never be judged. Its receivers are idempotent."""
    lost_before = now - timedelta(seconds=settings.JOB_FINISHED_LOST_AFTER_SECONDS)
    open_run = Run.objects.filter(job=OuterRef("pk")).exclude(status__in=Run.FINISHED)
    lost = list(BenchmarkJob.objects.filter(finished_at=None, created_at__lt=lost_before)
                .exclude(Exists(open_run)).annotate(last=Max("runs__finished_at"))
                .filter(last__lt=lost_before))
    return len(lost) - isolated.each(lost, lifecycle.settle_now, "sweep: a lost job_finished")
