"""Keeping the LatestResult summary current as results land."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

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
    measured_at = run.finished_at
    for sample in worst_per_metric(samples):
        LatestResult.objects.update_or_create(
            node_id=run.node_id, metric=sample.metric, profile=run.job.profile,
            defaults={"value": sample.value, "unit": sample.unit, "n": sample.n,
                      "p5": sample.p5, "p95": sample.p95, "cv": sample.cv, "run": run,
                      "measured_at": measured_at},
        )
