"""Prometheus scrape endpoint: django-prometheus' request and database metrics, and ours
(runs by state, queue depth per node, run durations, results rejected by reason)."""

from __future__ import annotations

import hmac

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from prometheus_client import REGISTRY

from jobs.services.observability import PlatformCollector

_registered = False


def allowed(request: HttpRequest) -> bool:
    token = settings.METRICS_TOKEN
    if not token:
        return not settings.PRODUCTION
    given = request.headers.get("Authorization", "").removeprefix("Bearer ").strip()
    return hmac.compare_digest(given.encode(), token.encode())


def metrics_view(request: HttpRequest) -> HttpResponse:
    if not allowed(request):
        # Queue depths per node and rejection counts are for the operator's scraper only.
        return HttpResponse("send Authorization: Bearer <METRICS_TOKEN>\n", status=403,
                            content_type="text/plain")
    global _registered
    if not _registered:
        REGISTRY.register(PlatformCollector())  # type: ignore[arg-type]
        _registered = True
    from django_prometheus.exports import ExportToDjangoView

    return ExportToDjangoView(request)  # type: ignore[no-any-return]
