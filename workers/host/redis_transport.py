"""kombu's Redis transport, made to survive a Redis restart under a node's ACL.

kombu releases its unacked-restore mutex with redis-py's lock script. After a Redis restart
the script cache is empty, redis-py falls back to SCRIPT LOAD, and a node may not run that
(it could load any Lua). Instead of crashing the worker, skip that restore cycle: the
platform's sweeper loads the script again within one sweep, and the next cycle works.
Its BRPOP also waits longer when idle (BRPOP_TIMEOUT).
"""

from __future__ import annotations

import logging
import os
from typing import Any

import redis
from kombu.transport import TRANSPORT_ALIASES
from kombu.transport import redis as kombu_redis

log = logging.getLogger(__name__)

SCHEME = "noderedis"


class QoS(kombu_redis.QoS):  # type: ignore[misc]
    def restore_visible(self, *args: Any, **kwargs: Any) -> None:
        try:
            super().restore_visible(*args, **kwargs)
        except redis.exceptions.NoPermissionError as exc:
            log.warning("unacknowledged runs not restored this time (%s); the platform "
                        "reloads the lock script after a Redis restart", exc)


class Channel(kombu_redis.Channel):  # type: ignore[misc]
    QoS = QoS


# An idle worker's BRPOP returns empty after this many seconds and is sent again; a message
# arriving meanwhile returns it at once. kombu's 1 s made 10,000 idle hosts send 10,000
# commands a second to their brokers for nothing (make bench, fleet). A worker's shutdown
# waits for the BRPOP in flight, so the tests and the lab, which stop their workers at every
# teardown, set BENCH_BRPOP_TIMEOUT=1 (lab.procs.NODE_WORKER_ENV): a second instead of five.
BRPOP_TIMEOUT = int(os.environ.get("BENCH_BRPOP_TIMEOUT", "5"))


class Transport(kombu_redis.Transport):  # type: ignore[misc]
    Channel = Channel
    brpop_timeout = BRPOP_TIMEOUT


def node_broker_url(url: str) -> str:
    """The same Redis URL, routed through this transport."""
    TRANSPORT_ALIASES.setdefault(SCHEME, f"{__name__}:Transport")
    scheme, sep, rest = url.partition("://")
    return f"{SCHEME}://{rest}" if sep and scheme == "redis" else url
