"""Accepting a benchmark request: validate, record, and enqueue after commit."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.db.models import Count

from benchmarks.suites import SUITES, resolve_params
from fleet.models import Node
from jobs.models import BenchmarkJob, Run
from jobs.services.dispatch import publish_run


class SubmissionError(Exception):
    def __init__(self, message: str, status: int = 400, field: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.field = field


def request_digest(node_ids: Sequence[int], suite: str, params: dict[str, Any],
                   profile: str) -> str:
    body = json.dumps({"nodes": sorted(node_ids), "suite": suite, "params": params,
                       "profile": profile}, sort_keys=True)
    return hashlib.sha256(body.encode()).hexdigest()


def submit(owner: User, node_ids: Sequence[int], suite: str,
           params: dict[str, Any] | None = None, idempotency_key: str = "",
           profile: str = "default") -> tuple[BenchmarkJob, bool]:
    """Create a job with one run per node; returns (job, created)."""
    params = params or {}
    if suite not in SUITES:
        raise SubmissionError(f"unknown suite {suite!r}; choose one of {sorted(SUITES)}",
                              field="suite")
    resolve_params(params, profile)  # raises InvalidParams with per-field messages
    digest = request_digest(node_ids, suite, params, profile)
    if idempotency_key:
        existing = BenchmarkJob.objects.filter(owner=owner, idempotency_key=idempotency_key).first()
        if existing is not None:
            return _same_request(existing, digest), False

    unique_ids = list(dict.fromkeys(node_ids))
    nodes = {n.pk: n for n in Node.objects.filter(pk__in=unique_ids, status=Node.Status.ACTIVE)}
    missing = [i for i in unique_ids if i not in nodes]
    if missing:
        raise SubmissionError(f"unknown or revoked node ids: {missing}", field="nodes")
    _check_queue_bounds(unique_ids)

    try:
        with transaction.atomic():
            job = BenchmarkJob.objects.create(owner=owner, suite=suite, params=params,
                                              profile=profile,
                                              idempotency_key=idempotency_key,
                                              request_digest=digest)
            runs = Run.objects.bulk_create([Run(job=job, node_id=i) for i in unique_ids])
            for run in runs:
                # Published only once the rows are committed, so a node never claims a
                # run the database does not have yet.
                transaction.on_commit(
                    lambda r=run: publish_run(r.pk, r.node_id), robust=True  # type: ignore[misc]
                )
    except IntegrityError:
        # Two requests raced with the same Idempotency-Key: the other one won.
        existing = BenchmarkJob.objects.get(owner=owner, idempotency_key=idempotency_key)
        return _same_request(existing, digest), False
    return job, True


def _same_request(job: BenchmarkJob, digest: str) -> BenchmarkJob:
    if job.request_digest != digest:
        raise SubmissionError("this Idempotency-Key was used with a different request body",
                              status=409)
    return job


def _check_queue_bounds(node_ids: Sequence[int]) -> None:
    busy = (Run.objects.filter(node_id__in=node_ids, status=Run.Status.QUEUED)
            .values("node_id").annotate(n=Count("id"))
            .filter(n__gte=settings.NODE_MAX_QUEUED_RUNS))
    full = [row["node_id"] for row in busy]
    if full:
        raise SubmissionError(
            f"nodes {full} already have {settings.NODE_MAX_QUEUED_RUNS} queued runs; "
            "wait for them to finish", status=409, field="nodes")
