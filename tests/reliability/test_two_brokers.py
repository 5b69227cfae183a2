"""Two brokers (NODE_BROKERS): nodes are spread over them at enrolment, each node's runs go to
its own broker, and one broker's restart touches only its own nodes."""

from __future__ import annotations

from typing import Any

import pytest
import redis

from jobs.models import Run
from jobs.services import submission, sweeper
from lab.procs import wait_for

pytestmark = pytest.mark.slow


def queued(server: Any, node_id: int) -> int:
    return int(server.client().llen(f"node:{node_id}:runs"))


def test_nodes_are_spread_over_the_brokers_and_each_dials_its_own(
        enrol_node: Any, two_brokers: Any) -> None:
    first, second = two_brokers
    nodes = [enrol_node(f"hz-{i}") for i in range(4)]
    assert [n.node.broker for n in nodes] == ["default", "b", "default", "b"]
    for enrolled, server in zip(nodes, [first, second, first, second], strict=True):
        assert f":{server.port}/" in enrolled.config["broker_url"]
        own = redis.Redis.from_url(enrolled.config["broker_url"], socket_timeout=5)
        assert own.set(f"node:{enrolled.node.pk}:alive", "1", ex=60)
        # Its user exists on its broker only.
        other = second if server is first else first
        assert other.client().acl_getuser(f"node-{enrolled.node.pk}") is None


def test_a_brokers_restart_touches_only_its_own_nodes(
        live_server: Any, buyer: Any, enrol_node: Any, worker_factory: Any,
        two_brokers: Any) -> None:
    first, second = two_brokers
    on_first = enrol_node("hz-first", api_url=live_server.url)
    on_second = enrol_node("hz-second", api_url=live_server.url)
    assert (on_first.node.broker, on_second.node.broker) == ("default", "b")
    first_worker = worker_factory(on_first.config_path, "w-first")
    second_worker = worker_factory(on_second.config_path, "w-second")
    second_worker.stop()  # so its queue is still full when its broker goes

    waiting = [submission.submit(buyer.user, [on_second.node.pk], "noop")[0] for _ in range(20)]
    assert queued(second, on_second.node.pk) == 20
    second.restart()  # no persistence: broker b's queues are gone
    assert queued(second, on_second.node.pk) == 0

    # Broker "default" and its node never noticed: its runs go on while b is recovered.
    ok, _ = submission.submit(buyer.user, [on_first.node.pk], "noop")
    wait_for(lambda: Run.objects.get(job=ok).status == "succeeded", 60, "the first node's run")
    report = sweeper.sweep()
    assert report.republished == 20  # b's runs only; nothing of "default" was republished
    assert queued(second, on_second.node.pk) == 20
    assert first_worker.alive()

    worker_factory(on_second.config_path, "w-second-after")
    ids = [j.pk for j in waiting]
    wait_for(lambda: Run.objects.filter(job_id__in=ids, status="succeeded").count() == 20, 120,
             "broker b's runs after its restart", interval=0.5)
    assert set(Run.objects.filter(job_id__in=ids).values_list("attempts", flat=True)) == {1}


def test_a_broker_down_holds_back_only_its_own_nodes(
        transactional_db: Any, buyer: Any, enrol_node: Any, two_brokers: Any,
        settings: Any) -> None:
    _, second = two_brokers
    on_first, on_second = enrol_node("hz-up"), enrol_node("hz-down")
    settings.NODE_BROKERS = {**settings.NODE_BROKERS, "b": "redis://default:x@127.0.0.1:1/0"}
    job, _ = submission.submit(buyer.user, [on_second.node.pk], "noop")
    assert Run.objects.get(job=job).dispatched_at is None  # left to the sweeper
    report = sweeper.sweep()
    assert report.brokers_down == ["b"] and report.republished == 0
    fine, _ = submission.submit(buyer.user, [on_first.node.pk], "noop")
    assert Run.objects.get(job=fine).dispatched_at is not None
    settings.NODE_BROKERS = {**settings.NODE_BROKERS, "b": second.admin_url}
    assert sweeper.sweep().republished == 1
    assert queued(second, on_second.node.pk) == 1


def test_nodes_on_a_broker_taken_out_of_the_list_are_named_in_health(
        enrol_node: Any, two_brokers: Any, settings: Any, client: Any) -> None:
    enrol_node("hz-kept")
    enrol_node("hz-stranded")
    settings.NODE_BROKERS = {"default": settings.NODE_BROKERS["default"]}
    warnings = client.get("/api/v1/health").json()["warnings"]
    assert "1 active nodes are on broker 'b', which NODE_BROKERS does not list" in warnings
