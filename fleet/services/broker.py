"""The broker side of node confinement: per-node Redis users and key prefixes.

Each node gets a Redis user whose ACL reaches only the keys kombu uses for its one queue
under ``node:<id>:`` (``node_keys``), and its liveness key; its Celery worker uses kombu's
``global_keyprefix`` so every key it touches is one of them. The platform publishes into the
same keys through its admin connection, and the sweeper keeps each node within its memory
and connection budget.

Nodes' queues may live on several Redis servers (NODE_BROKERS): a node is assigned one at
enrolment (``assign``) and keeps it; everything here takes the broker's name.
"""

from __future__ import annotations

import hashlib
import logging
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

import redis
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db.models import Count
from redis.lock import Lock

from contract.tasks import LIVENESS_KEY

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
    queue = queue_key(node_id)
    prefix = key_prefix(node_id)
    return [queue, *(f"{queue}{PRIORITY_SEP}{step}" for step in (3, 6, 9)),
            f"{prefix}unacked", f"{prefix}unacked_index", f"{prefix}unacked_mutex",
            f"{prefix}_kombu.binding.{settings.NODE_QUEUE}",
            f"{prefix}_kombu.binding_permanent.{settings.NODE_QUEUE}", liveness_key(node_id)]


def queue_key(node_id: int) -> str:
    """The list a run is pushed to (priority 0, kombu's bare queue name under the prefix)."""
    return f"{key_prefix(node_id)}{settings.NODE_QUEUE}"


def liveness_key(node_id: int) -> str:
    return f"{key_prefix(node_id)}{LIVENESS_KEY}"


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
    """The platform's own Redis (REDIS_URL): its Celery queue and counters."""
    return _client_at(settings.REDIS_URL)


@lru_cache(maxsize=64)
def _client_at(url: str) -> redis.Redis:
    return redis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=5)


DEFAULT = "default"


@dataclass(frozen=True)
class Broker:
    name: str
    admin_url: str  # how the platform reaches it, as its admin user
    public_url: str  # how a host dials it (credentials replaced by the node's own)

    def client(self) -> redis.Redis:
        return _client_at(self.admin_url)


class UnknownBroker(ImproperlyConfigured):
    pass


def brokers() -> dict[str, Broker]:
    """The configured brokers by name, in order; one, "default", unless NODE_BROKERS is set."""
    if not settings.NODE_BROKERS:
        return {DEFAULT: Broker(DEFAULT, settings.REDIS_URL, settings.NODE_BROKER_URL)}
    return {name: Broker(name, url, settings.NODE_BROKER_PUBLIC_URLS.get(name, url))
            for name, url in settings.NODE_BROKERS.items()}


def get(name: str) -> Broker:
    try:
        return brokers()[name]
    except KeyError:
        raise UnknownBroker(
            f"broker {name!r} holds nodes but is not in NODE_BROKERS "
            f"({', '.join(brokers())}); add it back (name={name})") from None


def assign() -> str:
    """The broker a new node goes to: the one holding the fewest active nodes (ties: the
    first listed). Stored on the node for good; its host dials that broker from then on."""
    return spread(1)[0]


def spread(count: int) -> list[str]:
    """Brokers for ``count`` new nodes, each in turn to the one then holding the fewest."""
    from fleet.models import Node  # the model module imports nothing of this one

    names = list(brokers())
    if len(names) == 1:
        return names * count
    held = dict(Node.objects.filter(status=Node.Status.ACTIVE, broker__in=names)
                .values("broker").annotate(n=Count("id")).values_list("broker", "n"))
    chosen = []
    for _ in range(count):
        name = min(names, key=lambda n: (held.get(n, 0), names.index(n)))
        held[name] = held.get(name, 0) + 1
        chosen.append(name)
    return chosen


def acl_rule(node_id: int, password: str) -> list[str]:
    return [
        "reset", "on", f">{password}", *(f"~{_glob_literal(k)}" for k in node_keys(node_id)),
        "resetchannels", "-@all", *NODE_COMMANDS.split(),
    ]


def create_node_user(node_id: int, password: str, broker: str = DEFAULT) -> str:
    """Create (or reset) the node's Redis user on its broker; returns its name."""
    create_node_users({node_id: password}, broker)
    return broker_user_name(node_id)


def create_node_users(passwords: dict[int, str], broker: str = DEFAULT) -> None:
    """Several nodes' users in one pipeline and one ACL SAVE (which rewrites the whole file:
    one per user made enrolling 10,000 simulated hosts quadratic)."""
    client = get(broker).client()
    pipe = client.pipeline(transaction=False)
    for node_id, password in passwords.items():
        pipe.execute_command("ACL", "SETUSER", broker_user_name(node_id),
                             *acl_rule(node_id, password))
    pipe.execute()
    _persist_acl(client)
    ensure_lock_script(client)


@dataclass(frozen=True)
class BrokerUse:
    node_id: int
    bytes: int
    connections: int


# Sums MEMORY USAGE over each node's keys inside Redis: a pipeline of ten commands per node
# was most of the sweeper's pass at 10,000 nodes (make bench, fleet). Run per chunk, so
# Redis is never blocked long. no-writes: a full (noeviction) Redis still runs it, which is
# when the sweeper needs it most.
_MEMORY_SCRIPT = """#!lua flags=no-writes
local per, out = tonumber(ARGV[1]), {}
for i = 1, #KEYS, per do
  local total = 0
  for j = i, i + per - 1 do total = total + (redis.call('MEMORY', 'USAGE', KEYS[j]) or 0) end
  out[#out + 1] = total
end
return out
"""
_CHUNK = 1000
_USER_FIELD = re.compile(rb" user=(\S+)")


def broker_use(node_ids: list[int], broker: str = DEFAULT) -> list[BrokerUse]:
    """Each node's keys' memory (MEMORY USAGE) and its user's connections, in one pass."""
    client = get(broker).client()
    per_node = len(node_keys(0))
    usage: list[int] = []
    script = client.register_script(_MEMORY_SCRIPT)
    for start in range(0, len(node_ids), _CHUNK):
        keys = [k for node_id in node_ids[start:start + _CHUNK] for k in node_keys(node_id)]
        usage.extend(int(u) for u in script(keys=keys, args=[per_node]))
    connections = _connections_by_user(client)
    return [BrokerUse(node_id, usage[i], connections.get(broker_user_name(node_id), 0))
            for i, node_id in enumerate(node_ids)]


def _connections_by_user(client: redis.Redis) -> dict[str, int]:
    # CLIENT LIST read raw: redis-py's parse makes a dict of 20 fields per connection, a
    # second's work at 20,000 connections; only the user is needed. Sent as two words, the
    # command has no reply parser in redis-py ("CLIENT LIST" as one has).
    raw = client.execute_command("CLIENT", "LIST")
    if isinstance(raw, str):  # a client made with decode_responses
        raw = raw.encode()
    if not isinstance(raw, bytes):
        # Parsed, it would match no user and every node would hold 0 connections: no budget.
        raise TypeError(f"CLIENT LIST came back parsed ({type(raw).__name__}), not as text")
    counts: dict[str, int] = {}
    for user in _USER_FIELD.findall(raw):
        name = user.decode()
        counts[name] = counts.get(name, 0) + 1
    return counts


# Each liveness key's idle time, then the key deleted, inside Redis: a pipeline of two
# commands per node cost the sweeper more than all the rest of its pass at 10,000 nodes.
# allow-oom: taking keys frees memory, and a full broker must not make every node offline.
# A small integer value (0..9999) is one object Redis shares among every key that holds it,
# so its idle time is the last time any of those keys was read, not this key's: such a key
# is taken but not counted (the worker's value is the time, a large integer of its own).
_LIVENESS_SCRIPT = """#!lua flags=allow-oom
local out = {}
for i, key in ipairs(KEYS) do
  local idle = redis.call('OBJECT', 'IDLETIME', key)
  if idle then
    if redis.call('OBJECT', 'REFCOUNT', key) > 1 then idle = false end
    redis.call('DEL', key)
  end
  out[i] = idle or -1
end
return out
"""


def take_liveness(node_ids: list[int], broker: str = DEFAULT) -> dict[int, int]:
    """The nodes whose worker set its liveness key since the last call, each with how many
    seconds ago (OBJECT IDLETIME: Redis's own clock, not a time the host wrote). The keys are
    taken (deleted), so each beat counts once and a host cannot leave one standing for good,
    whatever TTL it sets; a value Redis shares between keys has no idle time of its own and
    is not counted. One pass over the broker, in chunks."""
    script = get(broker).client().register_script(_LIVENESS_SCRIPT)
    seen: dict[int, int] = {}
    for start in range(0, len(node_ids), _CHUNK):
        chunk = node_ids[start:start + _CHUNK]
        idle = script(keys=[liveness_key(node_id) for node_id in chunk])
        seen.update((node_id, int(i)) for node_id, i in zip(chunk, idle, strict=True) if i >= 0)
    return seen


def suspend_node_user(node_id: int, broker: str = DEFAULT) -> None:
    """Over its budget: the user is switched off, its connections closed, its keys freed."""
    client = get(broker).client()
    client.execute_command("ACL", "SETUSER", broker_user_name(node_id), "off")
    client.execute_command("CLIENT", "KILL", "USER", broker_user_name(node_id))
    client.delete(*node_keys(node_id))
    _persist_acl(client)


def delete_node_user(node_id: int, broker: str = DEFAULT) -> None:
    client = get(broker).client()
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


def node_broker_url(node_id: int, password: str | None, broker: str = DEFAULT) -> str:
    """The broker URL a host dials: the node's own user, or the shared one without ACLs."""
    public = get(broker).public_url
    parts = urlsplit(public)
    if password is None:
        return public
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
