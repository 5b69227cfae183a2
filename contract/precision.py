"""How precise a median of repetitions is, and the rule that repeats a measurement until it
is precise enough (#35): answers at a stated precision in the least time.

A figure is the median of its repetitions. Its 95% confidence interval is the median plus or
minus Student's t (n - 1 degrees of freedom) times the median's standard error, which for
normally spread repetitions is sqrt(pi / 2) times the mean's, s / sqrt(n) (Kenney and
Keeping, Mathematics of Statistics, 1962, section 7.13). A measurement repeats until that
interval is within the profile's precision (+/- 2% by default, as a share of the median), or
until its maximum of repetitions: then the figure says "noisy", with the interval it reached.
Phoronix Test Suite repeats on the same idea with a standard-deviation rule (3.5%); a stated
interval says what the figure is worth in the figure's own unit.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")

# +/- this share of the median, unless the profile states another (contract.suites).
DEFAULT_PRECISION = 0.02
MEDIAN_SE = math.sqrt(math.pi / 2)

# Student's t, two-sided 95% (the 0.975 quantile), by degrees of freedom; beyond 30 the
# normal's 1.96 is within 4% of it.
T_975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
         2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
         2.060, 2.056, 2.052, 2.048, 2.045, 2.042)


def t_975(degrees: int) -> float:
    return T_975[degrees - 1] if degrees <= len(T_975) else 1.96


def half_width(values: Sequence[float]) -> float | None:
    """Half the 95% confidence interval of the values' median; None for fewer than two."""
    if len(values) < 2:
        return None
    n = len(values)
    return t_975(n - 1) * MEDIAN_SE * statistics.stdev(values) / math.sqrt(n)


def interval(values: Sequence[float]) -> tuple[float, float] | None:
    """The 95% confidence interval of the values' median; None for fewer than two."""
    half = half_width(values)
    if half is None:
        return None
    middle = statistics.median(values)
    return middle - half, middle + half


def within(values: Sequence[float], precision: float) -> bool:
    """The median's interval is inside +/- ``precision`` of it. A median of 0 is precise only
    with no spread at all (a share of nothing bounds nothing)."""
    half = half_width(values)
    if half is None:
        return False
    return half <= precision * abs(statistics.median(values))


def repeat_to_precision(measure: Callable[[], T], key: Callable[[T], float], least: int,
                        most: int, precision: float) -> list[T]:
    """``measure`` ``least`` times, then again while the median of ``key`` over the results
    is not within ``precision``, ``most`` times at most (never fewer than ``least``)."""
    results = [measure() for _ in range(least)]
    while len(results) < most and not within([key(r) for r in results], precision):
        results.append(measure())
    return results
