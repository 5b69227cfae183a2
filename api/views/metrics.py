"""Prometheus scrape endpoint: django-prometheus' request and database metrics, and ours
(runs by state, queue depth per node, run durations, results rejected by reason)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from prometheus_client import REGISTRY

from jobs.services.observability import PlatformCollector

_registered = False


def metrics_view(request: HttpRequest) -> HttpResponse:
    global _registered
    if not _registered:
        REGISTRY.register(PlatformCollector())  # type: ignore[arg-type]
        _registered = True
    from django_prometheus.exports import ExportToDjangoView

    return ExportToDjangoView(request)  # type: ignore[no-any-return]
