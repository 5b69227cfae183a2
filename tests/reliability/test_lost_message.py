"""A run committed but never published (the web process died between its commit and its
publish): the sweeper publishes it again once its online node has sat idle for a while."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from fleet.models import Node
from jobs.models import Attempt, BenchmarkJob, Run
from jobs.services import sweeper
from lab.procs import wait_for

pytestmark = pytest.mark.slow


def unpublished_run(buyer: Any, node: Any, dispatched_ago: float, status: str = "queued") -> Run:
    """A run as the crash leaves it: written with dispatched_at, never sent to Redis."""
    job = BenchmarkJob.objects.create(owner=buyer.user, suite="noop", params={})
    return Run.objects.create(job=job, node=node, status=status,
                              dispatched_at=timezone.now() - timedelta(seconds=dispatched_ago))


def test_an_idle_online_nodes_lost_run_is_published_again_and_runs_once(
        live_server: Any, buyer: Any, enrol_node: Any, worker_factory: Any, settings: Any,
        private_redis: Any) -> None:
    settings.NODE_HEARTBEAT_SECONDS = 1
    settings.RUN_REDISPATCH_SECONDS = 5
    one = enrol_node("hz-1", api_url=live_server.url)
    worker_factory(one.config_path, "w-lost-1")
    wait_for(lambda: Node.objects.get(pk=one.node.pk).online, 15, "the node to show online")

    recent = unpublished_run(buyer, one.node, dispatched_ago=1)
    lost = unpublished_run(buyer, one.node, dispatched_ago=60)
    assert private_redis.client().llen(f"node:{one.node.pk}:runs") == 0
    report = sweeper.sweep()
    assert report.stuck == 1 and report.republished == 1  # the recent one may still arrive

    wait_for(lambda: Run.objects.get(pk=lost.pk).status == "succeeded", 30, "the lost run")
    assert Attempt.objects.filter(run=lost).count() == 1
    assert Run.objects.get(pk=recent.pk).status == "queued"


def test_a_busy_or_recently_working_nodes_queue_is_left_alone(
        buyer: Any, enrol_node: Any, settings: Any) -> None:
    settings.RUN_REDISPATCH_SECONDS = 5
    busy, worked = enrol_node("hz-busy"), enrol_node("hz-worked")
    for enrolled in (busy, worked):
        enrolled.node.last_seen_at = timezone.now()
        enrolled.node.save()
    unpublished_run(buyer, busy.node, dispatched_ago=1, status="running")
    waiting_busy = unpublished_run(buyer, busy.node, dispatched_ago=60)
    done = unpublished_run(buyer, worked.node, dispatched_ago=60, status="succeeded")
    Run.objects.filter(pk=done.pk).update(finished_at=timezone.now())
    waiting_worked = unpublished_run(buyer, worked.node, dispatched_ago=60)

    assert sweeper.forget_stuck_dispatches(timezone.now()) == 0
    assert None not in set(Run.objects.filter(pk__in=[waiting_busy.pk, waiting_worked.pk])
                           .values_list("dispatched_at", flat=True))
