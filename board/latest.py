"""Keeping the board's summary rows current as ranked runs land.

A board value is not one run: it is the median of the node's last LEADERBOARD_RUNS ranked
runs of the profile within LEADERBOARD_WINDOW_DAYS, with the p5-p95 of those same runs (so
the value is inside its range), the newest run's own spread and the number of runs beside
it (the per-run values stay in the history). Two rules keep a provider from
steering it:

- runs its own provider asked for never replace figures from a buyer's or the platform's
  runs: they count only while the window has no other run of that metric;
- of the platform's runs (certification, re-tests), one a day counts;
- runs the platform ran beside others on the same machine (board.beside) are kept apart
  from runs measured alone: the value is the median of the alone ones, and of the shared
  ones, said to be, only where none was measured alone;
- each value is kept three times: from platform-verified figures only; from those and the
  buyer-measured ones (a buyer's trial agent on the node: the default board); from every
  figure, host-reported too.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from board import beside
from board.models import LatestResult
from contract import metrics
from contract.sample import percentile
from fleet.services import generation
from jobs.models import Run, Sample

if TYPE_CHECKING:
    from jobs.models import Sample as SampleRow


@dataclass(frozen=True)
class RunFigure:
    """One run's figure of one metric: with several reference peers, a node is as good as
    its worst."""

    run_id: int
    finished_at: Any
    requested_by: str
    value: float
    unit: str
    n: int
    p5: float | None
    p95: float | None
    cv: float | None
    verified: bool
    source: str
    grade: str  # the lowest rung of the ladder among its samples (Sample.LADDER)
    device: str = ""  # what the probe measured on (its metadata: "cpu" with no GPU)


# The evidence each board class keeps.
CLASSES = {LatestResult.VERIFIED: (Sample.PLATFORM_VERIFIED,),
           LatestResult.MEASURED: Sample.MEASURED, LatestResult.ANY: Sample.LADDER}


def lowest(grades: Iterable[str]) -> str:
    """The lowest rung of the evidence ladder among these (none: host-reported; an unknown
    one ranks below every rung)."""
    rank = {g: i for i, g in enumerate(Sample.LADDER)}
    return max(grades, key=lambda g: rank.get(g, len(Sample.LADDER)),
               default=Sample.HOST_REPORTED)


def run_figures(rows: Iterable[Any], kept: tuple[str, ...]) -> dict[str, list[RunFigure]]:
    """metric -> one figure per run, newest first (rows come newest first), of the samples
    whose evidence is one of ``kept``."""
    per_run: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        if row["evidence"] not in kept:
            continue
        per_run[(row["metric"], row["run_id"])].append(row)
    figures: dict[str, list[RunFigure]] = defaultdict(list)
    for (metric, run_id), samples in per_run.items():
        known = metrics.METRICS.get(metric)
        s = metrics.worst(samples, known.higher_is_better if known else True)
        figures[metric].append(RunFigure(
            run_id, s["run__finished_at"], s["run__requested_by"], s["value"], s["unit"], s["n"],
            s["p5"], s["p95"], s["cv"], all(x["evidence"] == Sample.PLATFORM_VERIFIED for x in samples),
            s["evidence_source"], lowest([x["evidence"] for x in samples]),
            str(s.get("metadata__device") or "")))
    return figures


def eligible(figures: list[RunFigure], k: int) -> list[RunFigure]:
    """The last k runs, a provider's own only when no one else measured the node, and at
    most one run a day that the platform asked for (the newest): each certification
    request is a platform run, and a provider asking for them at its best hour would fill
    the last k with that hour."""
    others = [f for f in figures if f.requested_by != Run.RequestedBy.PROVIDER]
    days: set[Any] = set()
    chosen = []
    for f in others or figures:  # newest first
        if f.requested_by == Run.RequestedBy.PLATFORM and f.finished_at is not None:
            day = timezone.localdate(f.finished_at)
            if day in days:
                continue
            days.add(day)
        chosen.append(f)
    return chosen[:k]


def spread(values: list[float]) -> tuple[float, float, float]:
    """The board value of these runs' figures and their p5-p95: the median and the
    percentiles of the same values, so the value is always inside its range (one run: the
    range is that run's figure; its own spread is the run's, beside it)."""
    ordered = sorted(values)
    return statistics.median(ordered), percentile(ordered, 5), percentile(ordered, 95)


def is_stand_in(metric: str, figures: list[RunFigure]) -> bool:
    """A GPU figure any of whose runs a CPU measured: it stands in for a GPU's."""
    return metric.startswith(f"{metrics.GPU_FAMILY}.") and any(f.device == "cpu" for f in figures)


def pooled(figures: list[RunFigure], shared: set[int], k: int) -> tuple[list[RunFigure], int]:
    """The runs a board value is the median of, and how many were kept apart: of the
    eligible runs, those measured alone; all of them when none was (the row says so)."""
    alone = [f for f in figures if f.run_id not in shared]
    newest = eligible(figures, k)
    if not alone:
        return newest, 0
    return eligible(alone, k), sum(1 for f in newest if f.run_id in shared)


def board_row(node_id: int, metric: str, profile: str, evidence: str,
              figures: list[RunFigure], shared: Collection[int] = frozenset(),
              apart: int = 0) -> LatestResult:
    latest = figures[0]
    values = [f.value for f in figures]
    value, p5, p95 = spread(values)
    return LatestResult(
        node_id=node_id, metric=metric, profile=profile, evidence=evidence,
        value=value, unit=latest.unit, n=latest.n, p5=p5, p95=p95, within_p5=latest.p5,
        within_p95=latest.p95, cv=latest.cv, run_id=latest.run_id, measured_at=latest.finished_at,
        runs=len(figures), run_min=min(values), run_max=max(values),
        verified=all(f.verified for f in figures), grade=lowest([f.grade for f in figures]),
        stand_in=is_stand_in(metric, figures),
        shared=all(f.run_id in shared for f in figures), runs_apart=apart,
        evidence_source=next((f.source for f in figures if f.source), ""),
        requested_by=",".join(sorted({f.requested_by for f in figures})))


def refresh(node_id: int, profile: str, metric_names: set[str]) -> None:
    """Recompute the node's board rows of these metrics from its ranked runs, its buyers'
    trial agents' among them."""
    since = timezone.now() - timedelta(days=settings.LEADERBOARD_WINDOW_DAYS)
    names = {m for m in metric_names if m not in metrics.LINK_METRICS}
    rows = [row for row in Sample.objects.filter(
        Q(run__node_id=node_id) | Q(run__node__trial_of_id=node_id), run__ranked=True,
        run__status=Run.Status.SUCCEEDED, run__job__profile=profile, run__finished_at__gte=since,
        metric__in=names)
        .order_by("-run__finished_at", "-run_id")
        .values("metric", "value", "unit", "n", "p5", "p95", "cv", "evidence", "evidence_source",
                "run_id", "run__started_at", "run__finished_at", "run__requested_by",
                "run__job__node_count", "metadata__device")
        # A node's row has only its own figures: not its links, not a cluster's training.
        if metrics.of_node(row["metric"], row["run__job__node_count"])]
    shared = beside.shared(node_id, {(r["run_id"], r["run__started_at"], r["run__finished_at"])
                                     for r in rows})
    out = []
    for evidence, kept in CLASSES.items():
        for metric, figures in run_figures(rows, kept).items():
            chosen, apart = pooled(figures, shared, settings.LEADERBOARD_RUNS)
            out.append(board_row(node_id, metric, profile, evidence, chosen, shared, apart))
    LatestResult.objects.bulk_create(
        out, update_conflicts=True, unique_fields=["node", "metric", "profile", "evidence"],
        update_fields=["value", "unit", "n", "p5", "p95", "within_p5", "within_p95", "cv", "run",
                       "measured_at", "runs", "run_min", "run_max", "verified", "grade",
                       "evidence_source", "requested_by", "stand_in", "shared", "runs_apart"])
    generation.changed()  # a bulk write sends no post_save


def record_latest(run: Run, samples: Iterable[SampleRow]) -> None:
    """After a ranked run succeeded (its row already saved): refresh what it measured."""
    refresh(run.node.measured_node_id, run.job.profile, {s.metric for s in samples})
