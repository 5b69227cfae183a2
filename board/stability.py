"""Stable or shared? One figure of a node across the platform's re-tests at different hours.

A provider that sells shared bandwidth or network storage as dedicated shows it over a day:
its figures dip at the hours its neighbours are busy. Pure functions over the re-tests'
results (local time, value, or None for a re-test the node missed or refused) and the
node's pauses; the thresholds, each with its source, are in board/data/stability.yaml.

A pause is the provider's word and could hide its busy hours: a node paused for more than a
tenth of the window, or at the same hours day after day, is "not enough data", never
"stable"; a missed or refused re-test counts against the node, not as a gap.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import lru_cache
from pathlib import Path

from contract import rules as bounds

RULES_FILE = Path(__file__).resolve().parent / "data" / "stability.yaml"
STABLE, VARIES_BY_HOUR, VARIES, NOT_ENOUGH = "stable", "varies-by-hour", "varies", "not-enough-data"
VERDICTS = (STABLE, VARIES_BY_HOUR, VARIES, NOT_ENOUGH)


@lru_cache(maxsize=1)
def rules() -> dict[str, float]:
    return {name: b.value for name, b in bounds.load_bounds(RULES_FILE).items()}


@dataclass(frozen=True)
class Observation:
    at: datetime  # in the site's time zone: hours of the day are the buyer's hours
    value: float | None  # None: the node missed or refused this re-test


@dataclass(frozen=True)
class Pause:
    start: datetime
    end: datetime


@dataclass
class Stability:
    verdict: str
    retests: int  # re-tests with a figure
    hours: int  # distinct hours of the day they ran at
    missed: int
    cv: float | None = None
    by_hour: dict[int, float] = field(default_factory=dict)  # hour -> median
    worst_hours: list[int] = field(default_factory=list)
    hour_ratio: float | None = None  # worst hour's median / best hour's, or the reverse: <= 1
    spread: float | None = None  # largest hourly median / smallest
    value_spread: float | None = None  # largest re-test figure / smallest
    paused_share: float = 0.0
    recurring_pause_hour: int | None = None


def judge(observations: Sequence[Observation], higher_is_better: bool,
          pauses: Sequence[Pause] = (), window: tuple[datetime, datetime] | None = None) -> Stability:
    if not observations and not pauses:
        # Nothing to judge (most nodes of a board page, 300 times a page: #35): not enough,
        # whatever the rules ask for.
        return Stability(NOT_ENOUGH, 0, 0, 0)
    r = rules()
    present = [o for o in observations if o.value is not None]
    missed = len(observations) - len(present)
    values = [float(o.value) for o in present if o.value is not None]
    by_hour_values: dict[int, list[float]] = defaultdict(list)
    for o in present:
        by_hour_values[o.at.hour].append(float(o.value or 0.0))
    out = Stability(NOT_ENOUGH, len(present), len(by_hour_values), missed,
                    by_hour={h: statistics.median(v) for h, v in sorted(by_hour_values.items())})
    if window is not None:
        out.paused_share = paused_share(pauses, window)
    out.recurring_pause_hour = recurring_pause_hour(pauses)
    if values and statistics.fmean(values) > 0:
        out.cv = statistics.pstdev(values) / statistics.fmean(values)
        out.value_spread = max(values) / min(values) if min(values) > 0 else float("inf")
    medians = list(out.by_hour.values())
    if medians and max(medians) > 0:
        out.hour_ratio = min(medians) / max(medians)
        out.spread = max(medians) / min(medians) if min(medians) > 0 else float("inf")
        out.worst_hours = worst_hours(out.by_hour, higher_is_better)
    if (out.paused_share > r["max_paused_share"] or out.recurring_pause_hour is not None
            or out.retests < r["min_retests"] or out.hours < r["min_hours"]):
        return out
    if out.hour_ratio is not None and out.hour_ratio < r["hour_ratio"]:
        out.verdict = VARIES_BY_HOUR
    elif (out.cv is not None and out.cv > r["stable_cv"]) or (
            missed > r["max_missed_share"] * len(observations)):
        out.verdict = VARIES
    else:
        out.verdict = STABLE
    return out


def paused_share(pauses: Sequence[Pause], window: tuple[datetime, datetime]) -> float:
    if not pauses:  # most nodes: no arithmetic on aware datetimes, 300 times a board page (#35)
        return 0.0
    start, end = window
    total = (end - start).total_seconds()
    if total <= 0:
        return 0.0
    covered = sum(max(0.0, (min(p.end, end) - max(p.start, start)).total_seconds())
                  for p in pauses)
    return min(1.0, covered / total)


def recurring_pause_hour(pauses: Sequence[Pause]) -> int | None:
    """An hour of the day that pauses covered on ``recurring_pause_days`` different days."""
    if not pauses:
        return None
    days: dict[int, set[object]] = defaultdict(set)
    for p in pauses:
        t = p.start.replace(minute=0, second=0, microsecond=0)
        while t < p.end:
            days[t.hour].add(t.date())
            t += timedelta(hours=1)
    recurring = [h for h, d in days.items() if len(d) >= rules()["recurring_pause_days"]]
    return min(recurring) if recurring else None


def worst_hours(by_hour: dict[int, float], higher_is_better: bool) -> list[int]:
    """The hours in the worst quarter of the range between the worst and the best median."""
    lo, hi = min(by_hour.values()), max(by_hour.values())
    if higher_is_better:
        return [h for h, v in by_hour.items() if v <= lo + (hi - lo) * 0.25]
    return [h for h, v in by_hour.items() if v >= hi - (hi - lo) * 0.25]

