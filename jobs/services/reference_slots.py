"""Reference endpoints are a scheduled resource: one iperf3 test at a time, handed out.

An iperf3 server serves one test at a time and answers any other client "busy". N nodes of
one region measured at once all test against its reference; without a schedule the one
that waits longest gives up. A run asks for the slot before each test (the same run asking
again extends it), lets go after its last test to that reference, and waits meanwhile; a
slot whose run finished or whose time ran out is free. Taking it is one conditional upsert,
so two runs asking at once cannot both get it.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import timedelta

from django.db import connection
from django.utils import timezone

from fleet.models import Node
from jobs.models import ReferenceSlot, Run
from jobs.services import evidence

MAX_SECONDS = 300  # one ask holds the slot at most this long; a longer test asks again


class SlotError(Exception):
    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class SlotState:
    granted: bool
    wait_s: float  # until the holder's slot runs out at the latest

    def as_dict(self) -> dict[str, object]:
        return {"granted": self.granted, "wait_s": round(self.wait_s, 1)}


_TAKE_SQL = """
INSERT INTO jobs_referenceslot (endpoint_id, run_id, expires_at) VALUES (%(endpoint)s, %(run)s, %(until)s)
ON CONFLICT (endpoint_id) DO UPDATE SET run_id = EXCLUDED.run_id, expires_at = EXCLUDED.expires_at
WHERE jobs_referenceslot.run_id = EXCLUDED.run_id OR jobs_referenceslot.expires_at < %(now)s
   OR jobs_referenceslot.run_id IN (SELECT id FROM jobs_run WHERE status <> 'running')
RETURNING run_id
"""


def take(node: Node, run_id: int, attempt_id: uuid.UUID, peer: str, seconds: float) -> SlotState:
    """The slot of the node's reference ``peer`` for ``seconds``, or how long to wait."""
    endpoint = _endpoint(node, run_id, attempt_id, peer)
    now = timezone.now()
    until = now + timedelta(seconds=max(1.0, min(float(seconds), MAX_SECONDS)))
    with connection.cursor() as cursor:
        cursor.execute(_TAKE_SQL, {"endpoint": endpoint, "run": run_id, "until": until, "now": now})
        won = cursor.fetchone()
    if won is not None:
        return SlotState(True, 0.0)
    held = ReferenceSlot.objects.filter(endpoint_id=endpoint).values_list("expires_at", flat=True)
    return SlotState(False, max(0.0, (held[0] - now).total_seconds()) if held else 0.0)


def give_back(node: Node, run_id: int, attempt_id: uuid.UUID, peer: str) -> None:
    endpoint = _endpoint(node, run_id, attempt_id, peer)
    ReferenceSlot.objects.filter(endpoint_id=endpoint, run_id=run_id).delete()


def _endpoint(node: Node, run_id: int, attempt_id: uuid.UUID, peer: str) -> int:
    if not Run.objects.filter(pk=run_id, node=node, status=Run.Status.RUNNING,
                              current_attempt=attempt_id).exists():
        raise SlotError(f"attempt {attempt_id} is not running run {run_id} on this node", 409)
    endpoint = evidence.references_by_peer(node).get(peer)
    if endpoint is None:
        raise SlotError(f"{peer[:80]!r} is not one of this node's reference endpoints", 400)
    return int(endpoint.pk)
