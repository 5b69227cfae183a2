"""A node that goes offline: shown offline, its queued runs kept, run on return or expired."""

from __future__ import annotations

from typing import Any

import pytest

from jobs.models import Run
from jobs.services import submission, sweeper
from lab.procs import wait_for

pytestmark = pytest.mark.slow


def online(buyer: Any, node_id: int) -> bool:
    return bool(buyer.client().get(f"/api/v1/nodes/{node_id}").json()["online"])


def test_an_offline_nodes_runs_wait_for_it_or_expire_with_the_reason(
        live_server: Any, buyer: Any, enrol_node: Any, worker_factory: Any, settings: Any) -> None:
    settings.NODE_HEARTBEAT_SECONDS = 1
    settings.NODE_OFFLINE_AFTER_SECONDS = 3
    one = enrol_node("hz-1", api_url=live_server.url)
    worker = worker_factory(one.config_path, "w-offline-1")
    wait_for(lambda: online(buyer, one.node.pk), 15, "the node to show online")

    worker.kill()
    went_offline = wait_for(lambda: not online(buyer, one.node.pk), 15, "the node to show offline")
    print(f"\nshown offline {went_offline:.1f} s after kill -9 (offline after "
          f"{settings.NODE_OFFLINE_AFTER_SECONDS} s without a heartbeat)")

    waiting, _ = submission.submit(buyer.user, [one.node.pk], "noop")
    swept = sweeper.sweep()
    assert swept.timed_out == 0 and Run.objects.get(job=waiting).status == "queued"  # kept

    worker_factory(one.config_path, "w-offline-1-back")
    wait_for(lambda: Run.objects.get(job=waiting).status == "succeeded", 30, "the run on return")

    worker_factory.stop_all()
    # The beats it sent over the broker before it stopped count (beat runs this every few
    # seconds): the node shows offline only once the last of them is old enough.
    sweeper.sweep()
    wait_for(lambda: not online(buyer, one.node.pk), 15, "the node to go offline again")
    settings.RUN_QUEUE_TIMEOUT_SECONDS = 1
    expiring, _ = submission.submit(buyer.user, [one.node.pk], "noop")
    # Not before its second: the sweep that comes first leaves it queued.
    wait_for(lambda: sweeper.sweep().timed_out == 1, 10, "the queue timeout to expire the run")
    run = Run.objects.get(job=expiring)
    assert run.status == "failed"
    assert "not started within 1 s: node hz-1 is offline (last seen" in run.error
