"""Publishing runs into a node's own key prefix on its broker.

Redis is only a delivery mechanism. A run is written with dispatched_at already set (the
time its publish was attempted), so a good publish costs no further write; a failed one
clears it, and the sweeper publishes every run without it again from the database, as it
does runs an online, idle node has left queued (a message lost some other way).

A publish is one LPUSH of the message kombu itself would push (``task_message``) onto the
node's queue key, over one pooled connection per broker. Publishing through kombu needed a
connection per node, since its key prefix belongs to the connection: with 10,000 nodes that
was 10,000 connections per web process, past Redis's maxclients (make bench, fleet).
"""

from __future__ import annotations

import base64
import logging

from celery.utils import uuid
from django.conf import settings
from kombu import serialization
from kombu.utils import json

from config.celery_app import app
from contract.tasks import EXECUTE_RUN_TASK
from fleet.services import broker
from jobs.models import Run

log = logging.getLogger(__name__)


def task_message(run_id: int) -> str:
    """What ``app.send_task(EXECUTE_RUN_TASK, [run_id], queue=NODE_QUEUE)`` makes kombu's
    Redis transport push: a Celery protocol-2 task message in kombu's JSON envelope
    (tests/jobs/test_dispatch_message.py compares the two)."""
    task_id = uuid()
    headers, properties, body, _ = app.amqp.create_task_message(
        task_id, EXECUTE_RUN_TASK, [run_id], {}, reply_to=app.thread_oid, ignore_result=True)
    content_type, content_encoding, payload = serialization.dumps(body, serializer="json")
    data = payload.encode() if isinstance(payload, str) else payload
    return json.dumps({
        "body": base64.b64encode(data).decode(),
        "content-encoding": content_encoding,
        "content-type": content_type,
        "headers": headers,
        "properties": {**properties, "delivery_mode": 2,
                       "delivery_info": {"exchange": "", "routing_key": settings.NODE_QUEUE},
                       "priority": 0, "body_encoding": "base64", "delivery_tag": uuid()},
    })


def publish_run(run_id: int, node_id: int, broker_name: str = broker.DEFAULT) -> bool:
    """Send one run to its node's queue; True when the broker took it.

    The caller has set the run's dispatched_at; it is cleared here when the publish fails.
    """
    message = task_message(run_id)
    try:
        client = broker.get(broker_name).client()
        try:
            client.lpush(broker.queue_key(node_id), message)
        except Exception:  # noqa: BLE001 - retried once below, on a fresh pooled connection
            # A stale connection (Redis restarted) is dropped from the pool by the failure.
            client.lpush(broker.queue_key(node_id), message)
    except Exception as exc:  # noqa: BLE001 - any broker failure leaves it to the sweeper
        log.warning("publishing run %s to node %s (broker %s) failed: %s", run_id, node_id,
                    broker_name, exc, extra={"run_id": run_id, "node_id": node_id})
        Run.objects.filter(pk=run_id, status=Run.Status.QUEUED).update(dispatched_at=None)
        return False
    log.info("published run %s to node %s", run_id, node_id,
             extra={"run_id": run_id, "node_id": node_id})
    return True
