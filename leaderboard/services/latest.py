"""Keeping the LatestResult summary current as results land."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from django.utils import timezone

from benchmarks import metrics
from leaderboard.models import LatestResult

if TYPE_CHECKING:
    from jobs.models import Run, Sample


def worst_per_metric(samples: Iterable[Sample]) -> list[Sample]:
    """One sample per metric: with several peers, a node is as good as its worst link."""
    chosen: dict[str, Sample] = {}
    for sample in samples:
        known = metrics.METRICS.get(sample.metric)
        current = chosen.get(sample.metric)
        if current is None or known is None:
            chosen[sample.metric] = sample
        elif (sample.value < current.value) == known.higher_is_better:
            chosen[sample.metric] = sample
    return list(chosen.values())


def record_latest(run: Run, samples: Iterable[Sample]) -> None:
    """Upsert the node's latest value per metric: one INSERT .. ON CONFLICT for the run."""
    rows = [LatestResult(node_id=run.node_id, metric=s.metric, profile=run.job.profile,
                         value=s.value, unit=s.unit, n=s.n, p5=s.p5, p95=s.p95, cv=s.cv,
                         run=run, measured_at=run.finished_at or timezone.now())
            for s in worst_per_metric(samples)]
    LatestResult.objects.bulk_create(
        rows, update_conflicts=True, unique_fields=["node", "metric", "profile"],
        update_fields=["value", "unit", "n", "p5", "p95", "cv", "run", "measured_at"])
