"""A buyer's own job: its runs, where they are, and their figures."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.utils.translation import gettext as _

from jobs.models import BenchmarkJob
from web import words
from web.page import (
    figure,
    node_url,
    unit_of,
)


def job_results(job: BenchmarkJob) -> list[dict[str, Any]]:
    """Each run's figures, by node, with a link to the node's page."""
    out = []
    for run in job.runs.select_related("node").prefetch_related("samples").order_by("node__name"):  # type: ignore[attr-defined]
        samples = sorted(run.samples.all(), key=lambda s: (s.metric, str(s.metadata.get("peer", ""))))
        out.append({"run": run, "node": run.node, "href": node_url(run.node_id),
                    "state": words.state(run.status),
                    "samples": [{"label": words.label(s.metric), "metric": s.metric,
                                 "value": figure(s.value, s.metric), "unit": unit_of(s.metric),
                                 "peer": s.metadata.get("peer", ""),
                                 "spread": f"{figure(s.p5, s.metric)}–{figure(s.p95, s.metric)}"
                                 if s.p5 is not None else ""}
                                for s in samples]})
    return out



@login_required
def job_page(request: HttpRequest, job_id: int) -> HttpResponse:
    job = get_object_or_404(BenchmarkJob, pk=job_id, owner=request.user)
    context: dict[str, Any] = {"job": job, "states": {k: _(v) for k, v in words.STATES.items()},
                               "results": job_results(job)}
    return render(request, "web/job.html", context)

