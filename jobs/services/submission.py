"""Accepting a benchmark request: validate, record, and enqueue after commit."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from contextlib import nullcontext
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import IntegrityError, connection, transaction
from django.db.models import Exists, OuterRef
from django.db.models.expressions import RawSQL
from django.utils import timezone

from config.errors import Conflict, Invalid, TooMany
from contract.suites import MEASURING_SUITES, SUITES, is_canonical, resolve_params
from fleet.models import Node, Provider
from fleet.services import trials
from jobs.models import BenchmarkJob, Run
from jobs.services.dispatch import publish_run

# What a submission's response shows of its nodes (NodeSerializer): the rest, the
# inventory above all, is not read.
RESPONSE_NODE_FIELDS = ("id", "name", "status", "enrolled_at", "last_seen_at", "revoked_reason",
                        "provider__name", "provider__kind", "region__code", "region__province",
                        "region__city", "broker", "trial_of", "trial_buyer", "trial_ends_at")


def request_digest(node_ids: Sequence[int], suite: str, params: dict[str, Any],
                   profile: str) -> str:
    body = json.dumps({"nodes": sorted(node_ids), "suite": suite, "params": params,
                       "profile": profile}, sort_keys=True)
    return hashlib.sha256(body.encode()).hexdigest()


def submit(owner: User, node_ids: Sequence[int], suite: str,
           params: dict[str, Any] | None = None, idempotency_key: str = "",
           profile: str = "default", by_platform: bool = False) -> tuple[BenchmarkJob, bool]:
    """Create a job with one run per node; returns (job, created).

    A created job comes with its runs and their nodes attached, ready to serialise. Each
    run records who asked for it (the platform, the node's own provider, or a buyer) and
    whether its figures may rank (a published profile as published; the platform's own
    runs choose their parameters themselves, so they rank whenever they measure).
    """
    params = params or {}
    if suite not in SUITES:
        raise Invalid(f"unknown suite {suite!r}; choose one of {sorted(SUITES)}", field="suite")
    resolve_params(params, profile)  # raises InvalidParams with per-field messages
    digest = request_digest(node_ids, suite, params, profile)
    if idempotency_key:
        existing = BenchmarkJob.objects.filter(owner=owner, idempotency_key=idempotency_key).first()
        if existing is not None:
            return _same_request(existing, digest), False

    unique_ids = list(dict.fromkeys(node_ids))
    # One query for the nodes, what the response shows of them, and their queue depth.
    nodes = {n.pk: n for n in Node.objects.filter(pk__in=unique_ids, status=Node.Status.ACTIVE)
             .select_related("provider", "region").only(*RESPONSE_NODE_FIELDS)
             .annotate(queued=_queued_runs(), mine=_queued_runs(owner.pk),
                       own=Exists(Provider.owners.through.objects.filter(
                           provider_id=OuterRef("provider_id"), user_id=owner.pk)))}
    # A buyer's trial agent measures for that buyer only: to anyone else it does not exist.
    missing = [i for i in unique_ids if i not in nodes
               or (nodes[i].is_trial_agent
                   and (by_platform or nodes[i].trial_buyer_id != owner.pk))]
    if missing:
        raise Invalid(f"unknown or revoked node ids: {missing}", field="nodes")
    _check_queue_bounds(nodes.values())
    over = [i for i in unique_ids if trials.ended(nodes[i])]
    if over:
        raise Conflict(f"the trial of node(s) {over} has ended; ask for a new trial token "
                       "(POST /api/v1/nodes/ID/trial-tokens)")

    try:
        # Inside a caller's transaction, a savepoint keeps a lost Idempotency-Key race from
        # breaking it; on its own, the insert is one statement and atomic by itself.
        with transaction.atomic() if connection.in_atomic_block else nullcontext():
            ranked = (suite in MEASURING_SUITES if by_platform
                      else is_canonical(suite, params, profile))
            requested = [Run.RequestedBy.PLATFORM if by_platform
                         else Run.RequestedBy.PROVIDER if getattr(nodes[i], "own", False)
                         else Run.RequestedBy.BUYER for i in unique_ids]
            job, runs = _insert(owner, suite, profile, params, idempotency_key, digest,
                                unique_ids, ranked, [str(r) for r in requested])
    except IntegrityError:
        # Two requests raced with the same Idempotency-Key: the other one won.
        existing = BenchmarkJob.objects.get(owner=owner, idempotency_key=idempotency_key)
        return _same_request(existing, digest), False
    for run in runs:
        # Published only once the rows are committed (now, or when the caller's transaction
        # commits), so a node never claims a run the database does not have yet.
        transaction.on_commit(
            lambda r=run: publish_run(r.pk, r.node_id, nodes[r.node_id].broker),  # type: ignore[misc]
            robust=True
        )
    _attach(job, runs, nodes)
    return job, True


# The job and its runs in one statement: BEGIN, two INSERTs and COMMIT through the ORM
# were a quarter of a submission's time (make bench). Runs are numbered in request order.
_INSERT_JOB_SQL = """
WITH job AS (
    INSERT INTO jobs_benchmarkjob (owner_id, suite, profile, params, created_at,
                                   idempotency_key, request_digest, node_count)
    VALUES (%(owner)s, %(suite)s, %(profile)s, %(params)s::jsonb, %(now)s, %(key)s, %(digest)s,
            cardinality(%(nodes)s::bigint[]))
    RETURNING id
)
INSERT INTO jobs_run (job_id, node_id, status, progress, error, attempts, queued_at,
                      dispatched_at, inventory, ranked, requested_by, fault)
SELECT job.id, n.node_id, 'queued', '{}'::jsonb, '', 0, %(now)s, %(now)s, '{}'::jsonb,
       %(ranked)s, n.requested_by, ''
FROM job, unnest(%(nodes)s::bigint[], %(requested)s::text[])
     WITH ORDINALITY AS n(node_id, requested_by, position)
ORDER BY n.position
RETURNING id, job_id, node_id
"""


def _insert(owner: User, suite: str, profile: str, params: dict[str, Any], key: str,
            digest: str, node_ids: list[int], ranked: bool,
            requested: list[str]) -> tuple[BenchmarkJob, list[Run]]:
    """Write the job and one run per node, dispatched_at set: the publish follows."""
    now = timezone.now()
    fields = {"owner": owner, "suite": suite, "profile": profile, "params": params,
              "idempotency_key": key, "request_digest": digest, "node_count": len(node_ids)}
    with connection.cursor() as cursor:
        cursor.execute(_INSERT_JOB_SQL, {
            "owner": owner.pk, "suite": suite, "profile": profile, "params": json.dumps(params),
            "now": now, "key": key, "digest": digest, "nodes": node_ids, "ranked": ranked,
            "requested": requested})
        rows = cursor.fetchall()
    job = BenchmarkJob(pk=rows[0][1], created_at=now, **fields)
    by_node = dict(zip(node_ids, requested, strict=True))
    return job, [Run(pk=run_id, job=job, node_id=node_id, status=Run.Status.QUEUED,
                     progress={}, error="", attempts=0, queued_at=now, dispatched_at=now,
                     inventory={}, ranked=ranked, requested_by=by_node[node_id])
                 for run_id, _, node_id in rows]


def _same_request(job: BenchmarkJob, digest: str) -> BenchmarkJob:
    if job.request_digest != digest:
        raise Conflict("this Idempotency-Key was used with a different request body")
    return job


def _queued_runs(owner_id: int | None = None) -> RawSQL:
    # A correlated count on the (node, status) index; as a Subquery expression it cost more
    # to build in Python than to run (make bench). With an owner: that user's runs only.
    if owner_id is None:
        return RawSQL("SELECT count(*) FROM jobs_run r WHERE r.node_id = fleet_node.id"
                      " AND r.status = %s", (Run.Status.QUEUED.value,))
    # Each queued run's job looked up by its key: as a JOIN, the planner (its statistics a
    # step behind a queue filling fast) scanned all the owner's jobs for every queued run,
    # 35 ms at 300 queued and growing with the owner's history (py-spy, make bench: the
    # largest cost of a submission). A scalar subquery cannot be turned into that join.
    return RawSQL("SELECT count(*) FROM jobs_run r WHERE r.node_id = fleet_node.id"
                  " AND r.status = %s"
                  " AND (SELECT j.owner_id FROM jobs_benchmarkjob j WHERE j.id = r.job_id) = %s",
                  (Run.Status.QUEUED.value, owner_id))


def _check_queue_bounds(nodes: Iterable[Node]) -> None:
    nodes = list(nodes)
    full = [n.pk for n in nodes if getattr(n, "queued", 0) >= settings.NODE_MAX_QUEUED_RUNS]
    if full:
        raise Conflict(
            f"nodes {full} already have {settings.NODE_MAX_QUEUED_RUNS} queued runs; "
            "wait for them to finish", field="nodes")
    mine = [n.pk for n in nodes
            if getattr(n, "mine", 0) >= settings.USER_MAX_QUEUED_RUNS_PER_NODE]
    if mine:
        raise TooMany(
            f"you already have {settings.USER_MAX_QUEUED_RUNS_PER_NODE} queued runs on nodes "
            f"{mine}; wait for them to finish", field="nodes",
            retry_after=settings.RUN_LEASE_SECONDS)


def _attach(job: BenchmarkJob, runs: list[Run], nodes: Mapping[int, Node]) -> None:
    """Give the new job what its response shows (runs, their nodes) without reading it back.

    Re-reading a job just written, with its prefetches, was six queries and half of a
    submission's time (py-spy under wrk, make bench).
    """
    for run in runs:
        run.node = nodes[run.node_id]
    prefetched = job.runs.all()
    prefetched._result_cache = runs  # what Django's own prefetch_related leaves behind
    prefetched._prefetch_done = True  # type: ignore[attr-defined]
    job._prefetched_objects_cache = {"runs": prefetched}  # type: ignore[attr-defined]
