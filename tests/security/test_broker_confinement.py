"""With its own Redis credentials a node reaches only ``node:<id>:*``, and nothing else."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import redis

DENIED: list[tuple[str, Callable[[redis.Redis, int], Any]]] = [
    ("LRANGE other node's queue", lambda c, o: c.lrange(f"node:{o}:runs", 0, -1)),
    ("RPUSH other node's queue", lambda c, o: c.rpush(f"node:{o}:runs", "forged")),
    ("BRPOP other node's queue", lambda c, o: c.brpop([f"node:{o}:runs"], timeout=1)),
    ("HGETALL other node's unacked", lambda c, o: c.hgetall(f"node:{o}:unacked")),
    ("HGET other node's unacked", lambda c, o: c.hget(f"node:{o}:unacked", "tag")),
    ("SET other node's liveness key", lambda c, o: c.set(f"node:{o}:alive", "1", ex=60)),
    ("GET unprefixed key", lambda c, o: c.get("platform")),
    ("SET unprefixed key", lambda c, o: c.set("platform", "x")),
    ("KEYS", lambda c, o: c.keys("*")),
    ("SCAN", lambda c, o: c.scan(0)),
    ("FLUSHALL", lambda c, o: c.flushall()),
    ("CONFIG GET", lambda c, o: c.config_get("*")),
    ("ACL LIST", lambda c, o: c.acl_list()),
    ("INFO", lambda c, o: c.info()),
    ("CLIENT LIST", lambda c, o: c.client_list()),
    ("PUBLISH", lambda c, o: c.publish("celeryev", "x")),
    ("SCRIPT LOAD", lambda c, o: c.script_load("return 1")),
    ("EVAL", lambda c, o: c.eval("return 1", 0)),
]


@pytest.fixture
def two_nodes(enrol_node: Any) -> tuple[Any, Any]:
    return enrol_node("hz-1"), enrol_node("hz-2")


def node_client(enrolled: Any) -> redis.Redis:
    return redis.Redis.from_url(enrolled.config["broker_url"], socket_timeout=5)


def test_a_node_can_use_its_own_queue_and_no_other_key(two_nodes: tuple[Any, Any]) -> None:
    one, _ = two_nodes
    client = node_client(one)
    assert client.rpush(f"node:{one.node.pk}:runs", "x") == 1
    assert client.llen(f"node:{one.node.pk}:runs") == 1
    assert client.set(f"node:{one.node.pk}:alive", "1", ex=90)  # its heartbeat
    # Only the keys kombu uses for its queue: nothing else under its own prefix either.
    for key in (f"node:{one.node.pk}:probe", f"node:{one.node.pk}:runs-junk",
                f"node:{one.node.pk}:unacked:x"):
        with pytest.raises(redis.exceptions.NoPermissionError):
            client.set(key, "x" * 1024)


@pytest.mark.parametrize(("what", "command"), DENIED, ids=[d[0] for d in DENIED])
def test_a_node_is_refused_outside_its_prefix(two_nodes: tuple[Any, Any], what: str,
                                              command: Callable[[redis.Redis, int], Any]) -> None:
    one, two = two_nodes
    with pytest.raises(redis.exceptions.NoPermissionError):
        command(node_client(one), two.node.pk)


@pytest.mark.parametrize("method", ["subscribe", "psubscribe"])
def test_a_node_cannot_listen_on_any_channel(two_nodes: tuple[Any, Any], method: str) -> None:
    one, _ = two_nodes
    pubsub = node_client(one).pubsub()
    with pytest.raises(redis.exceptions.NoPermissionError):
        getattr(pubsub, method)("*" if method == "psubscribe" else "celery")
        pubsub.get_message(timeout=2)


def test_the_default_user_needs_a_password(private_redis: Any) -> None:
    anonymous = redis.Redis(port=private_redis.port)
    with pytest.raises(redis.exceptions.AuthenticationError):
        anonymous.ping()
