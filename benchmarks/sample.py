"""What a probe returns: samples with their spread, as the probe contract says."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from benchmarks import metrics


@dataclass(frozen=True)
class Sample:
    metric: str
    value: float  # the median of the repetitions
    unit: str
    n: int = 1
    p5: float | None = None
    p95: float | None = None
    min: float | None = None
    max: float | None = None
    cv: float | None = None  # coefficient of variation, stdev / mean
    metadata: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile (numpy's default) of already sorted values."""
    if not sorted_values:
        raise ValueError("percentile of no values")
    pos = (len(sorted_values) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = math.ceil(pos)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def summarise(metric: str, values: Sequence[float], metadata: dict[str, Any] | None = None) -> Sample:
    """One sample from repeated measurements of ``metric``: median, p5/p95, min/max, CV."""
    if not values:
        raise ValueError(f"no measurements for {metric}")
    ordered = sorted(values)
    mean = statistics.fmean(ordered)
    cv = statistics.stdev(ordered) / mean if len(ordered) > 1 and mean else 0.0
    return Sample(
        metric=metric,
        value=statistics.median(ordered),
        unit=metrics.get(metric).unit,
        n=len(ordered),
        p5=percentile(ordered, 5),
        p95=percentile(ordered, 95),
        min=ordered[0],
        max=ordered[-1],
        cv=cv,
        metadata=dict(metadata or {}),
    )
