"""Redis restarts with no persistence while 100 runs are queued: all finish, each once."""

from __future__ import annotations

from typing import Any

import pytest
from django.db.models import Count

from jobs.models import Run, Sample
from jobs.services import submission, sweeper
from lab.procs import wait_for

pytestmark = pytest.mark.slow


def test_queued_runs_survive_a_redis_restart_and_run_once(
        live_server: Any, buyer: Any, enrol_node: Any, worker_factory: Any,
        private_redis: Any) -> None:
    one = enrol_node("hz-1", api_url=live_server.url)
    worker = worker_factory(one.config_path, "w-redis-1")
    worker.stop()  # so the queue is still full when Redis goes
    jobs = [submission.submit(buyer.user, [one.node.pk], "noop", {"noop_seconds": 0.01})[0]
            for _ in range(100)]
    assert private_redis.client().llen(f"node:{one.node.pk}:runs") == 100
    private_redis.restart()  # --save "" --appendonly no: every queued message is gone
    assert private_redis.client().llen(f"node:{one.node.pk}:runs") == 0

    # A worker started before the platform noticed the restart must not crash on it.
    worker_factory(one.config_path, "w-redis-1-after")
    report = sweeper.sweep()  # what Celery beat runs every SWEEP_INTERVAL_SECONDS
    queued = Run.objects.filter(job__in=jobs, status="queued").count()
    assert report.republished >= queued > 0

    ids = [j.pk for j in jobs]
    wait_for(lambda: Run.objects.filter(job_id__in=ids, status="succeeded").count() == 100,
             180, "all 100 runs to succeed", interval=0.5)
    per_run = Sample.objects.filter(run__job_id__in=ids).values("run").annotate(n=Count("id"))
    assert sorted(row["n"] for row in per_run) == [1] * 100
    assert set(Run.objects.filter(job_id__in=ids).values_list("attempts", flat=True)) == {1}


def test_a_running_worker_carries_on_after_a_redis_restart(
        live_server: Any, buyer: Any, enrol_node: Any, worker_factory: Any,
        private_redis: Any) -> None:
    one = enrol_node("hz-1", api_url=live_server.url)
    worker = worker_factory(one.config_path, "w-redis-live")
    private_redis.restart()
    job, _ = submission.submit(buyer.user, [one.node.pk], "noop")
    sweeper.sweep()  # reloads the lock script; the run was published after the restart anyway
    wait_for(lambda: Run.objects.get(job=job).status == "succeeded", 60, "the run after restart")
    assert worker.alive()
