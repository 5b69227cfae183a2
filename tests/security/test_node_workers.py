"""Real node workers on a shared Redis: each runs only its own node's runs."""

from __future__ import annotations

import re
import time
from typing import Any

import pytest
import redis
import requests

from jobs.models import Run, Sample
from jobs.services import submission
from lab.procs import wait_for

pytestmark = pytest.mark.slow


def claimed_runs(log: str) -> set[int]:
    return {int(m) for m in re.findall(r"run (\d+) claimed", log)}


def test_two_workers_each_run_only_their_own_nodes_runs(
        live_server: Any, buyer: Any, enrol_node: Any, worker_factory: Any) -> None:
    one, two = enrol_node("hz-1", api_url=live_server.url), enrol_node("hz-2", api_url=live_server.url)
    w1, w2 = worker_factory.many([(one.config_path, "w-hz-1"), (two.config_path, "w-hz-2")])
    jobs = [submission.submit(buyer.user, [one.node.pk, two.node.pk], "noop")[0] for _ in range(3)]
    ids = [j.pk for j in jobs]
    wait_for(lambda: not Run.objects.filter(job_id__in=ids).exclude(status="succeeded").exists(),
             60, "all six runs to succeed")
    mine1 = set(Run.objects.filter(job_id__in=ids, node=one.node).values_list("pk", flat=True))
    mine2 = set(Run.objects.filter(job_id__in=ids, node=two.node).values_list("pk", flat=True))
    assert claimed_runs(w1.log()) == mine1
    assert claimed_runs(w2.log()) == mine2
    assert "not claimed" not in w1.log() + w2.log()


def test_a_killed_worker_gets_its_run_again_after_restart(
        live_server: Any, buyer: Any, enrol_node: Any, worker_factory: Any, settings: Any) -> None:
    one, two = enrol_node("hz-1", api_url=live_server.url), enrol_node("hz-2", api_url=live_server.url)
    w1, w2 = worker_factory.many([(one.config_path, "w-kill-hz-1"),
                                  (two.config_path, "w-kill-hz-2")])
    job, _ = submission.submit(buyer.user, [one.node.pk], "noop", {"noop_seconds": 6})
    run = job.runs.get()
    wait_for(lambda: Run.objects.get(pk=run.pk).status == "running", 30, "the run to start")

    w1.kill()  # kill -9 of the whole process group, mid-probe
    killed_at = time.monotonic()
    worker_factory(one.config_path, "w-kill-hz-1-again")
    wait_for(lambda: Run.objects.get(pk=run.pk).attempts == 2, 60, "the run to be claimed again")
    redelivered = time.monotonic() - killed_at
    wait_for(lambda: Run.objects.get(pk=run.pk).status == "succeeded", 60, "the run to finish")

    bound = (settings.NODE_VISIBILITY_TIMEOUT + settings.NODE_UNACKED_RESTORE_INTERVAL
             + settings.RUN_LEASE_SECONDS)
    print(f"\nredelivered {redelivered:.1f} s after kill -9 (visibility "
          f"{settings.NODE_VISIBILITY_TIMEOUT} s + restore interval "
          f"{settings.NODE_UNACKED_RESTORE_INTERVAL} s)")
    assert redelivered <= bound + 10
    assert Sample.objects.filter(run=run).count() == 1
    assert run.pk not in claimed_runs(w2.log())


def test_revoking_a_node_stops_its_key_and_broker_user_at_once(
        live_server: Any, buyer: Any, provider_owner: Any, enrol_node: Any) -> None:
    one = enrol_node("hz-1", api_url=live_server.url)
    job, _ = submission.submit(buyer.user, [one.node.pk], "noop")
    broker = redis.Redis.from_url(one.config["broker_url"])
    assert broker.ping()

    response = requests.post(f"{live_server.url}/api/v1/nodes/{one.node.pk}/revoke",
                             headers=provider_owner.headers, timeout=10)
    assert response.status_code == 200 and response.json()["status"] == "revoked"

    with pytest.raises((redis.exceptions.AuthenticationError, redis.exceptions.ConnectionError)):
        redis.Redis.from_url(one.config["broker_url"]).ping()
    with pytest.raises(redis.exceptions.ConnectionError):
        broker.ping()  # its open connection was closed too
    heartbeat = requests.post(f"{live_server.url}/api/v1/node/heartbeat", headers=one.headers,
                              timeout=10)
    assert heartbeat.status_code in (401, 403)
    run = job.runs.get()
    assert (run.status, run.error) == ("failed", "node revoked")


def test_a_probe_past_its_time_limit_fails_and_the_worker_takes_the_next_run(
        live_server: Any, buyer: Any, enrol_node: Any, worker_factory: Any) -> None:
    one = enrol_node("hz-1", api_url=live_server.url)
    worker_factory(one.config_path, "w-limit-hz-1")
    hung, _ = submission.submit(buyer.user, [one.node.pk], "noop",
                                {"noop_command_seconds": 600, "probe_time_limit": 5})
    after, _ = submission.submit(buyer.user, [one.node.pk], "noop")
    wait_for(lambda: Run.objects.get(job=after).status == "succeeded", 60, "the next run")
    run = Run.objects.get(job=hung)
    assert (run.status, run.error) == ("failed", "timed out after 5 s")
    assert "sleep 600" not in subprocess_list()


def subprocess_list() -> str:
    import subprocess

    return subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True, check=True).stdout
