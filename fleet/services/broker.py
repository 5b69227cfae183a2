"""The broker side of node confinement: per-node Redis users and key prefixes.

Each node gets a Redis user whose ACL reaches only the keys kombu uses for its one queue
under ``node:<id>:`` (``node_keys``); its Celery worker uses kombu's ``global_keyprefix`` so
every key it touches is one of them. The platform publishes into the same keys through its
admin connection, and the sweeper keeps each node within its memory and connection budget.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from functools import lru_cache
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

import redis
from django.conf import settings
from redis.lock import Lock

log = logging.getLogger(__name__)

# What a node worker needs, and nothing more: no KEYS/SCAN, no pub/sub channels, no
# SCRIPT LOAD/EVAL (a node could block the server with Lua), no CONFIG/ACL/CLIENT/INFO.
NODE_COMMANDS = (
    "+ping +brpop +llen +sadd +zadd +zrange +zrem +hset +hget +hdel +rpush "
    "+multi +exec +watch +unwatch +set +get +del +evalsha"
)
# The exact keys kombu uses for a node's one queue (seen with MONITOR during a run): the
# queue and its priority lists (kombu's default steps 3, 6, 9, "\x06\x16" separated), the
# unacked hash, its index and mutex, and the binding tables. Nothing else under the prefix.
PRIORITY_SEP = "\x06\x16"


def node_keys(node_id: int) -> list[str]:
    queue = f"{key_prefix(node_id)}{settings.NODE_QUEUE}"
    prefix = key_prefix(node_id)
    return [queue, *(f"{queue}{PRIORITY_SEP}{step}" for step in (3, 6, 9)),
            f"{prefix}unacked", f"{prefix}unacked_index", f"{prefix}unacked_mutex",
            f"{prefix}_kombu.binding.{settings.NODE_QUEUE}",
            f"{prefix}_kombu.binding_permanent.{settings.NODE_QUEUE}"]


def _glob_literal(key: str) -> str:
    # An ACL key pattern is a glob: the key's own *?[]\ must match only themselves.
    return "".join(f"\\{c}" if c in "*?[]\\" else c for c in key)


def broker_user_name(node_id: int) -> str:
    return f"node-{node_id}"


def key_prefix(node_id: int) -> str:
    return f"node:{node_id}:"


def node_transport_options(node_id: int) -> dict[str, Any]:
    return {
        "global_keyprefix": key_prefix(node_id),
        "visibility_timeout": settings.NODE_VISIBILITY_TIMEOUT,
        "unacked_restore_interval": settings.NODE_UNACKED_RESTORE_INTERVAL,
        # 1: scan on every interval, so a dead worker's runs come back within the interval.
        "unacked_restore_throttle": 1,
        "unacked_mutex_expire": settings.NODE_UNACKED_MUTEX_EXPIRE,
    }


@lru_cache(maxsize=1)
def admin_client() -> redis.Redis:
    return redis.Redis.from_url(settings.REDIS_URL, socket_timeout=5, socket_connect_timeout=5)


def acl_rule(node_id: int, password: str) -> list[str]:
    return [
        "reset", "on", f">{password}", *(f"~{_glob_literal(k)}" for k in node_keys(node_id)),
        "resetchannels", "-@all", *NODE_COMMANDS.split(),
    ]


def create_node_user(node_id: int, password: str) -> str:
    """Create (or reset) the node's Redis user; returns its name."""
    client = admin_client()
    user = broker_user_name(node_id)
    client.execute_command("ACL", "SETUSER", user, *acl_rule(node_id, password))
    _persist_acl(client)
    ensure_lock_script(client)
    return user


@dataclass(frozen=True)
class BrokerUse:
    node_id: int
    bytes: int
    connections: int


def broker_use(node_ids: list[int]) -> list[BrokerUse]:
    """Each node's keys' memory (MEMORY USAGE) and its user's connections, in one pass."""
    client = admin_client()
    pipe = client.pipeline(transaction=False)
    for node_id in node_ids:
        for key in node_keys(node_id):
            pipe.memory_usage(key)
    usage = pipe.execute()
    connections: dict[str, int] = {}
    for entry in client.client_list():
        user = str(entry.get("user", ""))
        connections[user] = connections.get(user, 0) + 1
    per_node = len(node_keys(0))
    return [BrokerUse(node_id, sum(u or 0 for u in usage[i * per_node:(i + 1) * per_node]),
                      connections.get(broker_user_name(node_id), 0))
            for i, node_id in enumerate(node_ids)]


def suspend_node_user(node_id: int) -> None:
    """Over its budget: the user is switched off, its connections closed, its keys freed."""
    client = admin_client()
    client.execute_command("ACL", "SETUSER", broker_user_name(node_id), "off")
    client.execute_command("CLIENT", "KILL", "USER", broker_user_name(node_id))
    client.delete(*node_keys(node_id))
    _persist_acl(client)


def delete_node_user(node_id: int) -> None:
    client = admin_client()
    # Redis also closes every connection authenticated as that user: the worker stops at once.
    client.execute_command("ACL", "DELUSER", broker_user_name(node_id))
    _persist_acl(client)


def _persist_acl(client: redis.Redis) -> None:
    # Node users must survive a Redis restart; that needs Redis started with --aclfile.
    try:
        client.execute_command("ACL", "SAVE")
    except redis.ResponseError as exc:
        log.debug("ACL SAVE not available (%s); node users live until Redis restarts", exc)


def ensure_lock_script(client: redis.Redis | None = None) -> bool:
    """Load redis-py's lock-release script, which node workers may only EVALSHA.

    kombu releases its unacked-restore mutex with this script; nodes are not allowed
    SCRIPT LOAD, so after every Redis start the platform loads it for them. Returns True
    when the script was missing: Redis restarted (or was flushed) since we last looked.
    """
    client = client or admin_client()
    # Redis names scripts by SHA-1; this is an identifier, not a security use.
    sha = hashlib.sha1(Lock.LUA_RELEASE_SCRIPT.encode(), usedforsecurity=False).hexdigest()
    if client.script_exists(sha)[0]:
        return False
    client.script_load(Lock.LUA_RELEASE_SCRIPT)
    return True


def node_broker_url(node_id: int, password: str | None) -> str:
    """The broker URL a host dials: the node's own user, or the shared one without ACLs."""
    parts = urlsplit(settings.NODE_BROKER_URL)
    if password is None:
        return settings.NODE_BROKER_URL
    host = parts.hostname or "127.0.0.1"
    netloc = f"{quote(broker_user_name(node_id))}:{quote(password)}@{host}"
    if parts.port:
        netloc += f":{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def acl_mode_warning() -> str | None:
    if settings.NODE_BROKER_ACL:
        return None
    return (
        "INSECURE: NODE_BROKER_ACL is off, so every node shares one Redis user and could "
        "read or take other nodes' jobs. Use a password-protected Redis in production."
    )
