"""Liveness without the web tier: a node worker sets its key on its broker, the sweeper takes
every node's key in one pass. What a host could try with it, and what stops it."""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

import pytest
import redis
from django.utils import timezone

from fleet.models import Node
from fleet.services import broker
from jobs.services import sweeper
from lab.procs import wait_for
from workers.host.api_client import NodeApi
from workers.host.node_app import Heartbeat


def key(node: Node) -> str:
    return f"node:{node.pk}:alive"


def long_ago(node: Node) -> None:
    Node.objects.filter(pk=node.pk).update(last_seen_at=timezone.now() - timedelta(hours=1))


def seen_recently(node: Node) -> bool:
    node.refresh_from_db()
    return node.online


@pytest.mark.slow
def test_a_workers_heartbeat_goes_over_its_broker_and_the_sweeper_marks_it_seen(
        live_server: Any, enrol_node: Any, worker_factory: Any, private_redis: Any,
        settings: Any) -> None:
    settings.NODE_HEARTBEAT_SECONDS = 1
    one = enrol_node("hz-live", api_url=live_server.url)
    worker_factory(one.config_path, "w-live")
    admin = private_redis.client()
    wait_for(lambda: admin.exists(key(one.node)), 15, "the worker's liveness key")
    long_ago(one.node)
    assert sweeper.sweep().seen == 1
    assert seen_recently(one.node)
    assert not admin.exists(key(one.node))  # taken: the next beat must set it again
    wait_for(lambda: admin.exists(key(one.node)), 15, "the next beat")


def test_a_key_set_to_live_for_a_year_counts_once(enrol_node: Any) -> None:
    """A host sets its key with a year's TTL and stops its worker: one sighting, then it is
    offline like any silent node (the TTL is the host's, so the platform never reads it)."""
    one = enrol_node("hz-forever")
    host = redis.Redis.from_url(one.config["broker_url"], socket_timeout=5)
    assert host.set(key(one.node), int(time.time()), ex=365 * 86400)
    long_ago(one.node)
    assert sweeper.sweep().seen == 1 and seen_recently(one.node)
    long_ago(one.node)
    assert sweeper.sweep().seen == 0
    assert not seen_recently(one.node)


def test_a_value_redis_shares_between_keys_is_not_a_sighting(enrol_node: Any) -> None:
    """Redis keeps one object for each small integer, whose idle time is the last read of any
    key holding it: a host that sets "1" would borrow other keys' reads. Taken, not counted."""
    one = enrol_node("hz-shared")
    host = redis.Redis.from_url(one.config["broker_url"], socket_timeout=5)
    assert host.set(key(one.node), "1", ex=60)
    long_ago(one.node)
    assert sweeper.sweep().seen == 0
    assert not seen_recently(one.node)
    assert not broker.admin_client().exists(key(one.node))


def test_a_host_cannot_keep_another_node_online(enrol_node: Any) -> None:
    one, two = enrol_node("hz-a"), enrol_node("hz-b")
    host = redis.Redis.from_url(one.config["broker_url"], socket_timeout=5)
    with pytest.raises(redis.exceptions.NoPermissionError):
        host.set(key(two.node), "1", ex=60)
    long_ago(two.node)
    sweeper.sweep()
    assert not seen_recently(two.node)


def test_a_beat_the_broker_refuses_goes_over_https(live_server: Any, enrol_node: Any) -> None:
    """A node enrolled before its ACL allowed the key (or whose broker is down) still shows
    online: the beat falls back to the HTTPS heartbeat."""
    one = enrol_node("hz-old-acl", api_url=live_server.url)
    long_ago(one.node)
    beat = Heartbeat(NodeApi(live_server.url, one.api_key), 30, one.config["broker_url"],
                     f"node:{one.node.pk}:not-in-its-acl")
    assert beat.beat() == "https"
    assert seen_recently(one.node)
    assert Heartbeat(NodeApi(live_server.url, one.api_key), 30, one.config["broker_url"],
                     key(one.node)).beat() == "broker"
