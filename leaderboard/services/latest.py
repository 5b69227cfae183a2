"""Keeping the LatestResult summary current as results land."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from leaderboard.models import LatestResult

if TYPE_CHECKING:
    from jobs.models import Run, Sample


def record_latest(run: Run, samples: Iterable[Sample]) -> None:
    measured_at = run.finished_at
    for sample in samples:
        LatestResult.objects.update_or_create(
            node_id=run.node_id, metric=sample.metric,
            defaults={"value": sample.value, "unit": sample.unit, "n": sample.n,
                      "p5": sample.p5, "p95": sample.p95, "cv": sample.cv, "run": run,
                      "measured_at": measured_at},
        )
