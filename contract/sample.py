"""What a probe returns: samples with their spread, as the probe contract says."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from contract import metrics
from contract import precision as contract_precision


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


def coefficient_of_variation(values: Sequence[float]) -> float:
    mean = statistics.fmean(values)
    return statistics.stdev(values) / mean if len(values) > 1 and mean else 0.0


def outward(end: float, wider: Callable[[float, float], float]) -> float:
    """An interval's end kept to 6 digits, never rounded inward (``wider``: min for the low
    end, max for the high): repetitions that agree exactly (a throttled disk's latency
    percentiles, one fio histogram bucket each time) have an interval of one point, which the
    nearest 6 digits can put beside the median; the intake refuses an interval without it."""
    return float(wider(end, float(f"{end:.6g}")))


def summarise(metric: str, values: Sequence[float], metadata: dict[str, Any] | None = None,
              unit: str | None = None,
              precision: float = contract_precision.DEFAULT_PRECISION) -> Sample:
    """One sample from repeated measurements of ``metric``: median, p5/p95, min/max, CV,
    and (of two or more) the 95% interval of the median it reached against the +/-
    ``precision`` asked for: "noisy" when wider (contract/precision.py)."""
    if not values:
        raise ValueError(f"no measurements for {metric}")
    ordered = sorted(values)
    cv = coefficient_of_variation(ordered)
    meta = dict(metadata or {})
    reached = contract_precision.interval(ordered)
    if reached is not None:
        meta["interval"] = [outward(reached[0], min), outward(reached[1], max)]
        meta["precision"] = precision
        if not contract_precision.within(ordered, precision):
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


def at_precision(sample: Sample, precision: float) -> Sample:
    """The sample judged against the +/- ``precision`` its run's profile states (a share of
    the median): every probe's figures alike, whichever precision its probe summarised at."""
    reached = sample.metadata.get("interval")
    if not reached:
        return sample
    meta = {k: v for k, v in sample.metadata.items() if k != "noisy"}
    meta["precision"] = precision
    if (reached[1] - reached[0]) / 2 > precision * abs(sample.value) * (1 + 1e-5):
        meta["noisy"] = True  # (1 + 1e-5): the interval is kept to 6 digits
    return replace(sample, metadata=meta)
