"""Server-rendered pages of the leaderboard."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from benchmarks import metrics
from fleet.models import Region
from leaderboard.services.ranking import DEFAULT_METRIC, Filters, UnknownMetric, ranked


def leaderboard_page(request: HttpRequest) -> HttpResponse:
    filters = Filters(metric=request.GET.get("metric", DEFAULT_METRIC),
                      region=request.GET.get("region", ""),
                      provider=request.GET.get("provider", ""))
    try:
        rows = list(ranked(filters)[:500])
        problem = ""
    except UnknownMetric as exc:
        rows, problem = [], str(exc)
    return render(request, "leaderboard/leaderboard.html", {
        "rows": rows, "filters": filters, "problem": problem,
        "metric": metrics.METRICS.get(filters.metric),
        "metrics": sorted(metrics.METRICS.values(), key=lambda m: m.name),
        "regions": Region.objects.order_by("province", "city"),
    }, status=400 if problem else 200)
