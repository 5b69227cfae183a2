"""Reference endpoints are a scheduled resource: one iperf3 test at a time, handed out.

An iperf3 server serves one test at a time and answers any other client "busy". N nodes of
one region measured at once all test against its reference; without a schedule the one
that waits longest gives up. The slot is the server's (host and iperf3 port): endpoints
registered on one server take turns with each other. A run asks for the slot before each
test (asking again extends it) and gives it back after the test, so nodes measured at once
take turns test by test; waiting runs are served in the order they first asked. A slot whose run finished or
whose time ran out is free. Taking it is one conditional upsert, so two runs asking at
once cannot both get it.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection
from django.utils import timezone

from config.errors import Conflict, Invalid, TooMany
from contract.suites import resolve_params, turn_seconds
from fleet.models import Node, ReferenceEndpoint
from jobs.models import BenchmarkJob, ReferenceQueue, ReferenceSlot, ReferenceTurn, Run
from jobs.services import evidence, iperf3_turns

MAX_SECONDS = 300  # one ask holds the slot at most this long; a longer test asks again
QUEUE_STALE_S = 10.0  # a waiting run asks every half second; one that stopped has left


@dataclass(frozen=True)
class SlotState:
    granted: bool
    wait_s: float  # until the holder's slot runs out at the latest
    # With the grant, where the server authenticates turns: username, password, public_key
    iperf3: dict[str, str] | None = None

    def as_dict(self) -> dict[str, object]:
        state: dict[str, object] = {"granted": self.granted, "wait_s": round(self.wait_s, 1)}
        return state | ({"iperf3": self.iperf3} if self.iperf3 else {})


_TAKE_SQL = """
INSERT INTO jobs_referenceslot (endpoint_id, run_id, expires_at, taken_at)
VALUES (%(endpoint)s, %(run)s, %(until)s, %(now)s)
ON CONFLICT (endpoint_id) DO UPDATE SET
    expires_at = EXCLUDED.expires_at,
    taken_at = CASE WHEN jobs_referenceslot.run_id = EXCLUDED.run_id
                    THEN jobs_referenceslot.taken_at ELSE EXCLUDED.taken_at END,
    run_id = EXCLUDED.run_id
WHERE jobs_referenceslot.run_id = EXCLUDED.run_id OR jobs_referenceslot.expires_at < %(now)s
   OR jobs_referenceslot.run_id IN (SELECT id FROM jobs_run WHERE status <> 'running')
RETURNING run_id, taken_at
"""


def take(node: Node, run_id: int, attempt_id: uuid.UUID, peer: str, seconds: float) -> SlotState:
    """The slot of the node's reference ``peer`` for ``seconds``, or how long to wait.

    Waiting runs are served in the order they first asked (a host that asks faster does
    not jump the queue); a turn lasts the run's test at most (contract.suites.turn_seconds),
    and a run that has held the slot longer than that (or REFERENCE_MAX_HOLD_SECONDS) while
    others wait must let go (429), so no host can keep a region's reference to itself.
    """
    endpoint, job = _endpoint(node, run_id, attempt_id, peer)
    now = timezone.now()
    # No longer than the test the run was asked for: a host asking for 300 s to keep its
    # neighbours off the reference gets its test's length.
    test_s = turn_seconds(resolve_params(job.params, job.profile))
    until = now + timedelta(seconds=max(1.0, min(float(seconds), MAX_SECONDS, test_s)))
    longest = min(settings.REFERENCE_MAX_HOLD_SECONDS, test_s)
    held = ReferenceSlot.objects.filter(endpoint_id=endpoint).first()
    mine = held is not None and held.run_id == run_id and held.expires_at >= now
    if not mine:
        queued, _ = ReferenceQueue.objects.get_or_create(
            endpoint_id=endpoint, run_id=run_id, defaults={"first_asked_at": now,
                                                           "last_asked_at": now})
        ReferenceQueue.objects.filter(pk=queued.pk).update(last_asked_at=now)
        if _first_in_line(endpoint, now) != run_id:
            return _wait(held, now)
    elif held is not None and _first_in_line(endpoint, now, excluding=run_id) is not None and (
            now - held.taken_at).total_seconds() > longest:
        raise TooMany(f"this run has held {peer} for more than {longest:g} s (its test, or "
                      "REFERENCE_MAX_HOLD_SECONDS) while other nodes wait; give it back and "
                      "ask again")
    with connection.cursor() as cursor:
        cursor.execute(_TAKE_SQL, {"endpoint": endpoint, "run": run_id, "until": until, "now": now})
        won = cursor.fetchone()
    if won is None:
        return _wait(ReferenceSlot.objects.filter(endpoint_id=endpoint).first(), now)
    _record_turn(endpoint, run_id, attempt_id, won[1], until)
    ReferenceQueue.objects.filter(endpoint_id=endpoint, run_id=run_id).delete()
    return SlotState(True, 0.0, _iperf3_credential(endpoint, run_id, won[1]))


def _iperf3_credential(server: int, run_id: int, taken_at: datetime) -> dict[str, str] | None:
    """The hold's own iperf3 credential, where the server authenticates turns."""
    key = (ReferenceEndpoint.objects.filter(pk=server)
           .values_list("iperf3_public_key", flat=True).first())
    if not key:
        return None
    user, password = iperf3_turns.credential(server, run_id, taken_at)
    return {"username": user, "password": password, "public_key": key}


def _record_turn(endpoint: int, run_id: int, attempt_id: uuid.UUID, taken_at: datetime,
                 until: datetime) -> None:
    """The turn kept for evidence: a new row when the hold began now, else extended."""
    extended = ReferenceTurn.objects.filter(endpoint_id=endpoint, run_id=run_id,
                                            started_at=taken_at).update(ended_at=until)
    if not extended:
        ReferenceTurn.objects.create(endpoint_id=endpoint, run_id=run_id, attempt=attempt_id,
                                     started_at=taken_at, ended_at=until)


def _first_in_line(endpoint: int, now: datetime, excluding: int | None = None) -> int | None:
    """The run that has waited longest and still asks (a run that stopped asking, or
    finished, has left the queue)."""
    line = (ReferenceQueue.objects.filter(endpoint_id=endpoint, run__status=Run.Status.RUNNING,
                                          last_asked_at__gte=now - timedelta(seconds=QUEUE_STALE_S))
            .order_by("first_asked_at", "run_id"))
    if excluding is not None:
        line = line.exclude(run_id=excluding)
    first = line.values_list("run_id", flat=True).first()
    return int(first) if first is not None else None


def _wait(held: ReferenceSlot | None, now: datetime) -> SlotState:
    return SlotState(False, max(0.0, (held.expires_at - now).total_seconds()) if held else 0.0)


def give_back(node: Node, run_id: int, attempt_id: uuid.UUID, peer: str) -> None:
    endpoint, _ = _endpoint(node, run_id, attempt_id, peer)
    now = timezone.now()
    ReferenceTurn.objects.filter(endpoint_id=endpoint, run_id=run_id, ended_at__gt=now).update(
        ended_at=now)
    ReferenceSlot.objects.filter(endpoint_id=endpoint, run_id=run_id).delete()
    ReferenceQueue.objects.filter(endpoint_id=endpoint, run_id=run_id).delete()


def _endpoint(node: Node, run_id: int, attempt_id: uuid.UUID,
              peer: str) -> tuple[int, BenchmarkJob]:
    """The server whose turn ``peer`` is, and the running run's job (one query for both)."""
    job = (BenchmarkJob.objects.only("params", "profile")
           .filter(runs__pk=run_id, runs__node=node, runs__status=Run.Status.RUNNING,
                   runs__current_attempt=attempt_id).first())
    if job is None:
        raise Conflict(f"attempt {attempt_id} is not running run {run_id} on this node")
    endpoint = evidence.references_by_peer(node).get(peer)
    if endpoint is None:
        raise Invalid(f"{peer[:80]!r} is not one of this node's reference endpoints")
    # The turn is the iperf3 server's, which serves one test at a time, not the endpoint's:
    # endpoints on one server (a node's own relayed path beside its region's reference, as
    # the lab registers them) share its slot. Each with a slot of its own, two nodes tested
    # the one server at once, and one of them ran out of busy retries (make demo).
    return endpoint.server_id(), job
