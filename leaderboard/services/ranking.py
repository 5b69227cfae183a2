"""Ranking nodes on one metric, like with like: one profile, filters, spread and staleness."""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db.models import Count, Q, QuerySet
from django.utils import timezone

from benchmarks import metrics
from benchmarks.sample import percentile
from fleet.models import Node
from jobs.models import Sample
from leaderboard.models import LatestResult
from leaderboard.services import diagnosis, score

DEFAULT_METRIC = "network.tcp_throughput"
# Price-performance is per unit of this: the training throughput the probe measured.
THROUGHPUT_METRIC = "training.samples_per_s"


class UnknownMetric(ValueError):
    pass


@dataclass(frozen=True)
class Filters:
    metric: str = DEFAULT_METRIC
    region: str = ""  # a province ("zhejiang") or a city/region code ("hangzhou")
    provider: str = ""
    provider_kind: str = ""
    gpu_model: str = ""
    profile: str = ""  # empty: the profile with the most results for the metric
    certified: bool = False

    @classmethod
    def from_query(cls, query: Any) -> Filters:
        return cls(metric=query.get("metric") or DEFAULT_METRIC, region=query.get("region", ""),
                   provider=query.get("provider", ""), provider_kind=query.get("provider_kind", ""),
                   gpu_model=query.get("gpu_model", ""), profile=query.get("profile", ""),
                   certified=str(query.get("certified", "")).lower() in ("1", "true", "yes"))


def metric_of(name: str) -> metrics.Metric:
    metric = metrics.METRICS.get(name)
    if metric is None:
        raise UnknownMetric(f"unknown metric {name!r}; known: {', '.join(sorted(metrics.METRICS))}")
    return metric


def profile_for(filters: Filters) -> str:
    if filters.profile:
        return filters.profile
    busiest = (LatestResult.objects.filter(metric=filters.metric).values("profile")
               .annotate(n=Count("id")).order_by("-n", "profile").first())
    return str(busiest["profile"]) if busiest else "default"


def filtered(filters: Filters, profile: str) -> QuerySet[LatestResult]:
    rows = (LatestResult.objects.filter(metric=filters.metric, profile=profile,
                                        node__status=Node.Status.ACTIVE)
            .select_related("node__provider", "node__region"))
    if filters.region:
        rows = rows.filter(Q(node__region__code__iexact=filters.region)
                           | Q(node__region__province__iexact=filters.region)
                           | Q(node__region__city__iexact=filters.region))
    if filters.provider:
        rows = rows.filter(node__provider__name__iexact=filters.provider)
    if filters.provider_kind:
        rows = rows.filter(node__provider__kind=filters.provider_kind)
    if filters.gpu_model:
        rows = rows.filter(node__gpu_model__iexact=filters.gpu_model)
    if filters.certified:
        rows = rows.filter(node__certificates__revoked_at__isnull=True,
                           node__certificates__expires_at__gt=timezone.now()).distinct()
    return rows


def ranked(filters: Filters) -> tuple[QuerySet[LatestResult], str]:
    """Nodes' latest values of ``filters.metric`` in one profile, best first."""
    metric = metric_of(filters.metric)
    profile = profile_for(filters)
    order = ("-value", "node_id") if metric.higher_is_better else ("value", "node_id")
    return filtered(filters, profile).order_by(*order), profile


def is_stale(measured_at: Any) -> bool:
    return bool(measured_at < timezone.now() - timedelta(days=settings.LEADERBOARD_STALE_DAYS))


def node_values(node_ids: Iterable[int], profile: str) -> dict[int, dict[str, float]]:
    """Every latest value of these nodes in one profile: node -> metric -> value."""
    values: dict[int, dict[str, float]] = defaultdict(dict)
    for node_id, metric, value in LatestResult.objects.filter(
            node_id__in=list(node_ids), profile=profile).values_list("node_id", "metric", "value"):
        values[node_id][metric] = value
    return values


@dataclass
class Entry:
    """One leaderboard row: the ranked value, and what a buyer decides on beside it."""

    rank: int
    row: LatestResult
    stale: bool
    score: score.Score
    price_per_score: float | None
    price_per_throughput: float | None
    findings: list[diagnosis.Finding] = field(default_factory=list)


def entries(rows: list[LatestResult], profile: str, first_rank: int = 1) -> list[Entry]:
    values = node_values((r.node_id for r in rows), profile)
    out = []
    for i, row in enumerate(rows):
        v = values.get(row.node_id, {})
        s = score.score(v)
        price = row.node.monthly_price_cny
        throughput = v.get(THROUGHPUT_METRIC)
        out.append(Entry(
            rank=first_rank + i, row=row, stale=is_stale(row.measured_at), score=s,
            price_per_score=round(price / s.value, 2) if price and s.value else None,
            price_per_throughput=round(price / throughput, 4) if price and throughput else None,
            findings=diagnosis.diagnose(v)))
    return out


@dataclass(frozen=True)
class Group:
    key: str
    name: str
    kind: str  # province, city, provider
    nodes: int
    median: float
    p5: float
    p95: float
    provider_kind: str = ""


def groups(filters: Filters, by: str) -> tuple[list[Group], str]:
    """Median and spread across nodes of each province and city, or of each provider."""
    metric = metric_of(filters.metric)
    profile = profile_for(filters)
    buckets: dict[tuple[str, str, str, str], list[float]] = defaultdict(list)
    for row in filtered(filters, profile):
        node = row.node
        if by == "provider":
            buckets[("provider", str(node.provider_id), node.provider.name, node.provider.kind)].append(
                row.value)
        else:
            buckets[("province", node.region.province.lower(), node.region.province, "")].append(row.value)
            buckets[("city", node.region.code, f"{node.region.province} / {node.region.city}", "")].append(
                row.value)
    out = []
    for (kind, key, label, provider_kind), vals in buckets.items():
        ordered = sorted(vals)
        out.append(Group(key=key, name=label, kind=kind, nodes=len(ordered),
                         median=statistics.median(ordered), p5=percentile(ordered, 5),
                         p95=percentile(ordered, 95), provider_kind=provider_kind))
    out.sort(key=lambda g: (g.kind != "province", -g.median if metric.higher_is_better else g.median))
    return out, profile


def history(node: Node, metric_name: str) -> list[dict[str, Any]]:
    """Every succeeded measurement of one metric on one node, oldest first."""
    metric_of(metric_name)
    samples = (Sample.objects.filter(run__node=node, metric=metric_name, run__status="succeeded")
               .select_related("run__job").order_by("run__finished_at", "id"))
    return [{"measured_at": s.run.finished_at, "value": s.value, "unit": s.unit, "p5": s.p5,
             "p95": s.p95, "n": s.n, "profile": s.run.job.profile, "run": s.run_id,
             "peer": s.metadata.get("peer")} for s in samples]
