"""#30: background tasks isolate their items. One row that raises (a bug, data no one foresaw)
used to abort the whole walk: one multi-node certificate stopped every renewal. Each test here
makes one item fail for the first time it is met and checks that the others were done.

The fault is injected at the seam the walk calls per item (a bug there is what is guarded
against); everything else is the real service on PostgreSQL and the private Redis."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.utils import timezone

from fleet.models import Node
from fleet.services import broker, revocation
from jobs.models import Retest, Run
from jobs.services import retests, submission, sweeper


def failing_for(real: Any, bad: Any, key: Any = lambda *a, **k: a[0]) -> Any:
    """``real``, except that it raises for the item ``key`` picks out as ``bad``."""
    def call(*args: Any, **kwargs: Any) -> Any:
        if key(*args, **kwargs) == bad:
            raise RuntimeError("an unforeseen fault of this one row")
        return real(*args, **kwargs)
    return call


def test_a_re_test_that_raises_is_skipped_and_the_others_start(
        enrol_node: Any, settings: Any, monkeypatch: Any) -> None:
    settings.RETEST_PER_DAY = 0
    nodes = [enrol_node(f"hz-{i}", address=f"10.0.8.{i + 2}") for i in range(3)]
    Node.objects.update(last_seen_at=timezone.now())
    now = timezone.now()
    due = [Retest.objects.create(node=e.node, due_at=now - timedelta(seconds=10 - i))
           for i, e in enumerate(nodes)]
    bad = nodes[1].node.pk
    monkeypatch.setattr(submission, "submit", failing_for(
        submission.submit, bad, key=lambda user, node_ids, *a, **k: node_ids[0]))

    tick = retests.tick(now)

    assert tick.submitted == 2 and tick.skipped == 1
    statuses = {r.node.name: (r.status, r.reason) for r in Retest.objects.filter(
        pk__in=[r.pk for r in due]).select_related("node")}
    assert statuses["hz-0"][0] == statuses["hz-2"][0] == Retest.Status.SUBMITTED
    # The platform's fault: skipped (not counted against the node), not missed, and not
    # tried again each tick.
    assert statuses["hz-1"] == (Retest.Status.SKIPPED, "the platform could not start it: "
                                "RuntimeError: an unforeseen fault of this one row")
    assert retests.tick(now + timedelta(seconds=1)).skipped == 0


def test_a_sweep_recovers_every_other_run_and_phase_past_one_that_raises(
        buyer: Any, enrol_node: Any, settings: Any, monkeypatch: Any, caplog: Any) -> None:
    settings.RUN_QUEUE_TIMEOUT_SECONDS = 1
    a, b, c = (enrol_node(f"hz-{i}") for i in range(3))
    jobs = [submission.submit(buyer.user, [e.node.pk], "noop")[0] for e in (a, b, c)]
    Run.objects.update(queued_at=timezone.now() - timedelta(seconds=5))
    bad = jobs[0].runs.get().pk
    real_settle = sweeper.lifecycle.settle
    monkeypatch.setattr(sweeper.lifecycle, "settle", failing_for(
        real_settle, jobs[0].pk, key=lambda job_ids: job_ids[0]))
    # A whole phase that raises: the broker budget check before the unstarted runs.
    def broker_answers_nonsense(*args: Any) -> Any:
        raise RuntimeError("CLIENT LIST came back as nonsense")

    monkeypatch.setattr(broker, "broker_use", broker_answers_nonsense)

    report = sweeper.sweep()

    assert "sweep: broker budgets failed" in caplog.text
    assert report.timed_out == 2 and report.suspended == 0
    status = {r.node.name: r.status for r in Run.objects.select_related("node")}
    assert status == {"hz-0": "queued", "hz-1": "failed", "hz-2": "failed"}
    # The next sweep, the fault gone, fails the one left: nothing was lost.
    monkeypatch.setattr(sweeper.lifecycle, "settle", real_settle)
    assert sweeper.sweep().timed_out == 1
    assert Run.objects.get(pk=bad).status == "failed"


def test_a_trial_whose_revocation_raises_does_not_keep_the_others_open(
        buyer: Any, enrol_node: Any, monkeypatch: Any) -> None:
    agents = [enrol_node(f"trial-{i}") for i in range(3)]
    Node.objects.filter(pk__in=[e.node.pk for e in agents]).update(
        trial_ends_at=timezone.now() - timedelta(minutes=1))
    bad = agents[0].node.pk
    monkeypatch.setattr(revocation, "revoke", failing_for(
        revocation.revoke, bad, key=lambda node, **k: node.pk))

    assert sweeper.end_trials(timezone.now()) == 2
    status = dict(Node.objects.values_list("name", "status"))
    assert status == {"trial-0": "active", "trial-1": "revoked", "trial-2": "revoked"}
