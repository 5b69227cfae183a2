"""What jobs tells buyers' webhooks (hooks' outbox): a job of theirs has finished; a ranked
run of a node they watch moved one of its figures.

job.finished is sent where job_finished is, after the last run's transaction commits (which
run is last is only known then, jobs.services.lifecycle._after_run); the outbox keeps one
delivery per job and webhook when two runs ending together both report it.
node.figures_changed is written in the transaction that stores the run, as certificates'
events are: with the run or not at all.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q

from contract import metrics
from hooks.services import outbox, watch
from jobs.models import BenchmarkJob, Run, Sample

log = logging.getLogger(__name__)

FIELDS = ("run_id", "metric", "value", "unit", "evidence", "evidence_source")


def job_finished(job: BenchmarkJob) -> None:
    try:
        runs = list(Run.objects.filter(job_id=job.pk).values("id", "node_id", "status", "error"))
        outbox.emit("job.finished", f"job:{job.pk}", {
            "job": job.pk, "status": job.overall_status(), "suite": job.suite,
            "profile": job.profile,
            "url": f"{settings.PUBLIC_API_URL}/api/v1/benchmarks/{job.pk}",
            "runs": [{"id": r["id"], "node": r["node_id"], "status": r["status"],
                      "error": r["error"][:500]} for r in runs],
        }, owner=job.owner_id)
    except Exception:  # noqa: BLE001 - the result is stored; a webhook must not fail its post
        log.exception("job %s finished: its webhook deliveries could not be written", job.pk)


def figures_changed(run: Run) -> None:
    """A ranked run just stored as succeeded: its figures against the node's previous ranked,
    succeeded run of the same profile (per metric, the latest run that has it), told to the
    webhooks watching the node when one moved by watch.CHANGE_FRACTION or more. Re-tests are
    ranked runs too: a figure that drops in a re-test is the node's stability changing."""
    if not (run.ranked and run.status == Run.Status.SUCCEEDED) or not watch.watched(run.node_id):
        return
    try:
        with transaction.atomic():  # a fault here must not undo the stored run
            _figures_changed(run)
    except Exception:  # noqa: BLE001 - the result is stored; a webhook must not fail its post
        log.exception("run %s: its node.figures_changed could not be written", run.pk)


def _figures_changed(run: Run) -> None:
    job = run.job
    after = _headlines(Sample.objects.filter(run_id=run.pk).values(*FIELDS), job.node_count)
    if not after:
        return
    earlier = Sample.objects.filter(
        Q(run__job__node_count=1) | ~Q(metric__startswith=f"{metrics.CLUSTER_FAMILY}."),
        run__node_id=run.node_id, run__ranked=True, run__status=Run.Status.SUCCEEDED,
        run__job__profile=job.profile, run__finished_at__lte=run.finished_at,
        metric__in=list(after)).exclude(run_id=run.pk)
    # Per metric, the latest earlier run that measured it (DISTINCT ON metric).
    latest = earlier.order_by("metric", "-run__finished_at", "-run_id").distinct("metric") \
        .values_list("metric", "run_id")
    if not latest:
        return
    pairs = Q()
    for metric, run_id in latest:
        pairs |= Q(metric=metric, run_id=run_id)
    before = _headlines(Sample.objects.filter(pairs).values(*FIELDS), 1)
    moved = watch.changes({m: s["value"] for m, s in before.items()},
                          {m: s["value"] for m, s in after.items()})
    if not moved:
        return
    outbox.emit("node.figures_changed", f"run:{run.pk}", {
        "node": run.node_id, "run": run.pk, "job": job.pk, "suite": job.suite,
        "profile": job.profile, "requested_by": run.requested_by,
        "finished_at": run.finished_at.isoformat() if run.finished_at else None,
        "threshold": watch.CHANGE_FRACTION,
        "url": f"{settings.PUBLIC_API_URL}/api/v1/nodes/{run.node_id}/history",
        "changes": [{"metric": c.key, "unit": after[c.key]["unit"], "before": c.before,
                     "after": c.after, "change": round(c.fraction, 4),
                     "previous_run": before[c.key]["run_id"],
                     "evidence": after[c.key]["evidence"],
                     "evidence_source": after[c.key]["evidence_source"]}
                    for c in sorted(moved, key=lambda c: c.key)],
    }, node=run.node_id)


def _headlines(rows: Any, node_count: int) -> dict[str, dict[str, Any]]:
    """metric -> the sample that is the run's figure of it (the worst of its peers', as on
    the board), of the figures that are the node's own (no link's, no cluster's)."""
    per_metric: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        if metrics.of_node(row["metric"], node_count):
            per_metric[row["metric"]].append(row)
    return {m: metrics.worst(samples, known.higher_is_better if (known := metrics.METRICS.get(m))
                             else True)
            for m, samples in per_metric.items()}
