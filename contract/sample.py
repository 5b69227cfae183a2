"""What a probe returns: samples with their spread, as the probe contract says."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, TypeVar

from contract import metrics

T = TypeVar("T")


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

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Sample:
        """The sample ``as_dict`` gave: how samples measured in a child process come back."""
        return cls(**data)


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile (numpy's default) of already sorted values."""
    if not sorted_values:
        raise ValueError("percentile of no values")
    pos = (len(sorted_values) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = math.ceil(pos)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def per_second(amount: float, seconds: float) -> float:
    """``amount`` / ``seconds``, where a step too fast for a coarse clock (0 s) counts as 1 ns."""
    return amount / max(seconds, 1e-9)


# Phoronix Test Suite's rule: above 3.5% CV, run more (up to twice as many) and flag it.
NOISY_CV = 0.035


def coefficient_of_variation(values: Sequence[float]) -> float:
    mean = statistics.fmean(values)
    return statistics.stdev(values) / mean if len(values) > 1 and mean else 0.0


def summarise(metric: str, values: Sequence[float], metadata: dict[str, Any] | None = None,
              unit: str | None = None) -> Sample:
    """One sample from repeated measurements of ``metric``: median, p5/p95, min/max, CV."""
    if not values:
        raise ValueError(f"no measurements for {metric}")
    ordered = sorted(values)
    cv = coefficient_of_variation(ordered)
    meta = dict(metadata or {})
    if cv > NOISY_CV and len(ordered) > 1:
        meta["noisy"] = True
    return Sample(
        metric=metric,
        value=statistics.median(ordered),
        unit=unit or metrics.get(metric).unit,
        n=len(ordered),
        p5=percentile(ordered, 5),
        p95=percentile(ordered, 95),
        min=ordered[0],
        max=ordered[-1],
        cv=cv,
        metadata=meta,
    )


def single(metric: str, value: float, n: int, metadata: dict[str, Any] | None = None) -> Sample:
    """A figure that is already a summary (a peak, a ratio of medians), with its sample count."""
    return Sample(metric=metric, value=value, unit=metrics.get(metric).unit, n=n,
                  metadata=dict(metadata or {}))


def repeat_until_stable(measure: Callable[[], T], key: Callable[[T], float],
                        repetitions: int) -> list[T]:
    """Run ``measure`` ``repetitions`` times, and up to twice as often while the CV of
    ``key`` over the results stays above NOISY_CV."""
    results = [measure() for _ in range(repetitions)]
    while (len(results) < 2 * repetitions and len(results) > 1
           and coefficient_of_variation([key(r) for r in results]) > NOISY_CV):
        results.append(measure())
    return results
