"""Publishing runs into a node's own key prefix on Redis.

Redis is only a delivery mechanism. A run is written with dispatched_at already set (the
time its publish was attempted), so a good publish costs no further write; a failed one
clears it, and the sweeper publishes every run without it again from the database, as it
does runs an online, idle node has left queued (a message lost some other way).
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from django.conf import settings
from kombu import Connection

from config.celery_app import app
from contract.tasks import EXECUTE_RUN_TASK
from fleet.services.broker import node_transport_options
from jobs.models import Run

log = logging.getLogger(__name__)

# One open broker connection per node, reused: connecting and authenticating on every
# publish was the largest cost of a submission (make bench, dispatch latency).
_connections: dict[tuple[str, int], Connection] = {}
_lock = threading.Lock()


def _connection(node_id: int) -> Any:
    key = (settings.REDIS_URL, node_id)
    conn = _connections.get(key)
    if conn is None:
        conn = app.connection_for_write(transport_options=node_transport_options(node_id))
        _connections[key] = conn
    return conn


def publish_run(run_id: int, node_id: int) -> bool:
    """Send one run to its node's queue; True when the broker took it.

    The caller has set the run's dispatched_at; it is cleared here when the publish fails.
    """
    try:
        with _lock:
            conn = _connection(node_id)
            try:
                app.send_task(EXECUTE_RUN_TASK, args=[run_id], queue=settings.NODE_QUEUE,
                              connection=conn, ignore_result=True)
            except Exception:  # noqa: BLE001 - retried once below on a fresh connection
                # A stale connection (Redis restarted): drop it and try once on a new one.
                _connections.pop((settings.REDIS_URL, node_id), None)
                conn.release()
                app.send_task(EXECUTE_RUN_TASK, args=[run_id], queue=settings.NODE_QUEUE,
                              connection=_connection(node_id), ignore_result=True)
    except Exception as exc:  # noqa: BLE001 - any broker failure leaves it to the sweeper
        log.warning("publishing run %s to node %s failed: %s", run_id, node_id, exc,
                    extra={"run_id": run_id, "node_id": node_id})
        Run.objects.filter(pk=run_id, status=Run.Status.QUEUED).update(dispatched_at=None)
        return False
    log.info("published run %s to node %s", run_id, node_id,
             extra={"run_id": run_id, "node_id": node_id})
    return True
