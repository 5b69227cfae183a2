"""Ranking nodes on one metric, with provider and region beside each."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Q, QuerySet

from benchmarks import metrics
from leaderboard.models import LatestResult

DEFAULT_METRIC = "network.tcp_throughput"


class UnknownMetric(ValueError):
    pass


@dataclass(frozen=True)
class Filters:
    metric: str = DEFAULT_METRIC
    region: str = ""  # a province ("zhejiang") or a city/region code ("hangzhou")
    provider: str = ""


def ranked(filters: Filters) -> QuerySet[LatestResult]:
    """Nodes' latest values of ``filters.metric``, best first."""
    metric = metrics.METRICS.get(filters.metric)
    if metric is None:
        raise UnknownMetric(f"unknown metric {filters.metric!r}; known: "
                            f"{', '.join(sorted(metrics.METRICS))}")
    rows = (LatestResult.objects.filter(metric=metric.name, node__status="active")
            .select_related("node__provider", "node__region"))
    if filters.region:
        rows = rows.filter(Q(node__region__code__iexact=filters.region)
                           | Q(node__region__province__iexact=filters.region)
                           | Q(node__region__city__iexact=filters.region))
    if filters.provider:
        rows = rows.filter(node__provider__name__iexact=filters.provider)
    return rows.order_by("-value" if metric.higher_is_better else "value", "node_id")
