"""A run is published as one LPUSH of the message kombu itself would push (one connection
per broker, not one per node): the two are the same but for their fresh ids."""

from __future__ import annotations

import base64
import json
from typing import Any

from django.conf import settings

from config.celery_app import app
from contract.tasks import EXECUTE_RUN_TASK
from jobs.services import dispatch

FRESH_IDS = {("headers", "id"), ("headers", "root_id"), ("properties", "correlation_id"),
             ("properties", "delivery_tag")}


def without_ids(message: dict[str, Any]) -> dict[str, Any]:
    out = json.loads(json.dumps(message))
    for part, key in FRESH_IDS:
        assert out[part].pop(key)  # present, and then set aside
    out["body"] = json.loads(base64.b64decode(out["body"]))
    return out


def test_the_pushed_message_is_the_one_kombu_pushes(private_redis: Any) -> None:
    prefix = "node:987654:"
    connection = app.connection_for_write(transport_options={"global_keyprefix": prefix})
    try:
        app.send_task(EXECUTE_RUN_TASK, args=[42], queue=settings.NODE_QUEUE,
                      connection=connection, ignore_result=True)
    finally:
        connection.release()
    theirs = json.loads(private_redis.client().rpop(f"{prefix}{settings.NODE_QUEUE}"))
    ours = json.loads(dispatch.task_message(42))
    assert without_ids(ours) == without_ids(theirs)
    assert without_ids(ours)["body"][0] == [42]
    assert ours["headers"]["id"] == ours["headers"]["root_id"] == ours["properties"][
        "correlation_id"]


def test_a_publish_lands_on_the_nodes_queue_of_its_broker(private_redis: Any) -> None:
    assert dispatch.publish_run(7, 987655)
    raw = private_redis.client().lpop(f"node:987655:{settings.NODE_QUEUE}")
    assert json.loads(base64.b64decode(json.loads(raw)["body"]))[0] == [7]
