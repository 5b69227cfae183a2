"""One host with its own broker credentials fills Redis (noeviction): the sweeper measures
each node's keys and connections, switches the filler off, and every other node carries on."""

from __future__ import annotations

from typing import Any

import pytest
import redis
from django.test import Client

from jobs.models import Run
from jobs.services import submission, sweeper
from lab.procs import wait_for

pytestmark = pytest.mark.slow


def test_a_node_filling_the_broker_is_cut_off_and_the_others_keep_working(
        live_server: Any, buyer: Any, enrol_node: Any, worker_factory: Any, private_redis: Any,
        settings: Any) -> None:
    filler = enrol_node("hz-fill", api_url=live_server.url)
    other = enrol_node("hz-ok", api_url=live_server.url)
    worker_factory(other.config_path, "w-hz-ok")
    stranded, _ = submission.submit(buyer.user, [filler.node.pk], "noop")
    admin = private_redis.client()
    used = int(admin.info("memory")["used_memory"])
    admin.config_set("maxmemory", used + 32 * 2**20)
    try:
        attacker = redis.Redis.from_url(filler.config["broker_url"], socket_timeout=10)
        with pytest.raises(redis.exceptions.OutOfMemoryError):
            for i in range(200):
                attacker.hset(f"node:{filler.node.pk}:unacked", f"junk-{i}", "x" * 2**20)
        # The attack works: nobody can publish any more (this is what `main` stayed in).
        with pytest.raises(redis.exceptions.OutOfMemoryError):
            admin.rpush(f"node:{other.node.pk}:runs", "x" * 2**20)

        report = sweeper.sweep()
        assert report.suspended == 1

        with pytest.raises((redis.exceptions.AuthenticationError, redis.exceptions.ConnectionError,
                            redis.exceptions.ResponseError)):
            redis.Redis.from_url(filler.config["broker_url"], socket_timeout=5).ping()
        assert admin.memory_usage(f"node:{filler.node.pk}:unacked") is None  # freed
        run = stranded.runs.get()
        assert run.status == "failed" and "broker user suspended" in run.error
        assert "bytes in its broker keys" in run.error
        health = Client().get("/api/v1/health").json()
        assert any("hz-fill: broker user suspended" in w for w in health["warnings"])
        assert 'bench_node_broker_suspended{node="hz-fill"} 1' in Client().get(
            "/metrics").content.decode()

        # Every other node keeps working.
        job, _ = submission.submit(buyer.user, [other.node.pk], "noop")
        wait_for(lambda: Run.objects.get(job=job).status == "succeeded", 60,
                 "the other node's run")
        assert sweeper.sweep().suspended == 0  # nobody else is over budget
    finally:
        admin.config_set("maxmemory", 256 * 2**20)


def test_a_node_holding_too_many_broker_connections_is_cut_off(
        enrol_node: Any, private_redis: Any, settings: Any) -> None:
    """Connections are Redis's scarcest resource (maxclients): a host opening more than its
    share loses its user at the next sweep; a host within it keeps working."""
    settings.NODE_BROKER_MAX_CONNECTIONS = 4
    hog, fine = enrol_node("hz-hog"), enrol_node("hz-fine")
    held = [redis.Redis.from_url(hog.config["broker_url"], socket_timeout=5) for _ in range(6)]
    for client in held:
        client.ping()
    within = [redis.Redis.from_url(fine.config["broker_url"], socket_timeout=5) for _ in range(3)]
    for client in within:
        client.ping()
    assert sweeper.sweep().suspended == 1
    hog.node.refresh_from_db()
    fine.node.refresh_from_db()
    assert "6 broker connections (budget 4" in hog.node.broker_suspended_reason
    assert fine.node.broker_suspended_reason == ""
    with pytest.raises(redis.exceptions.ConnectionError):
        held[0].ping()  # its connections were closed
    assert within[0].ping()


def test_connections_are_counted_from_the_text_of_client_list_and_never_from_a_parse(
        private_redis: Any) -> None:
    """A parsed CLIENT LIST once counted every node's connections as 0: no host was ever
    over its connection budget. Bytes or decoded text count; a parsed reply is an error."""
    from fleet.services.broker import _connections_by_user

    as_bytes = redis.Redis.from_url(private_redis.admin_url)
    as_text = redis.Redis.from_url(private_redis.admin_url, decode_responses=True)
    as_bytes.ping()
    as_text.ping()
    assert _connections_by_user(as_bytes).get("default", 0) >= 2
    assert _connections_by_user(as_text).get("default", 0) >= 2

    class Parsing:  # what redis-py answers for CLIENT LIST sent as one word: dictionaries
        def execute_command(self, *args: str) -> Any:
            return as_bytes.client_list()

    with pytest.raises(TypeError, match="parsed"):
        _connections_by_user(Parsing())  # type: ignore[arg-type]
