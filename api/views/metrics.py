"""Prometheus scrape endpoint: jobs by state, queue depth per node, run durations, rejections."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse

from jobs.services import observability


def metrics_view(request: HttpRequest) -> HttpResponse:
    return HttpResponse(observability.render(), content_type="text/plain; version=0.0.4")
