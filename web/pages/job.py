"""A buyer's own job: its runs, where they are, and their figures."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.utils.translation import gettext as _

from fleet.models import Region
from jobs.models import BenchmarkJob
from web import words
from web.page import (
    figure,
    node_url,
    unit_of,
)


def job_results(job: BenchmarkJob) -> list[dict[str, Any]]:
    """Each run's figures, by node, with a link to the node's page."""
    cities = dict(Region.objects.values_list("code", "city"))
    out = []
    for run in job.runs.select_related("node").prefetch_related("samples").order_by("node__name"):  # type: ignore[attr-defined]
        samples = sorted(run.samples.all(), key=lambda s: (s.metric, str(s.metadata.get("peer", ""))))
        out.append({"run": run, "node": run.node, "href": node_url(run.node_id),
                    "state": words.state(run.status),
                    "samples": [{"label": words.label(s.metric), "metric": s.metric,
                                 "value": figure(s.value, s.metric), "unit": unit_of(s.metric),
                                 "peer": words.peer(str(s.metadata.get("peer", "")), cities),
                                 "spread": f"{figure(s.p5, s.metric)}–{figure(s.p95, s.metric)}"
                                 if s.p5 is not None else ""}
                                for s in samples]})
    return out


# The list shows the newest jobs; older ones stay readable through the API's pages.
JOBS_SHOWN = 100


@login_required
def jobs_page(request: HttpRequest) -> HttpResponse:
    """The signed-in buyer's jobs, newest first: where a sign-in lands."""
    jobs = list(BenchmarkJob.objects.filter(owner=request.user.pk)
                .prefetch_related("runs__node").order_by("-created_at", "-pk")[:JOBS_SHOWN + 1])
    rows = [{"job": job, "state": words.state(job.overall_status()),
             "nodes": sorted(r.node.name for r in job.runs.all())}  # type: ignore[attr-defined]
            for job in jobs[:JOBS_SHOWN]]
    return render(request, "web/jobs.html", {"rows": rows, "more": len(jobs) > JOBS_SHOWN,
                                             "shown": JOBS_SHOWN})


@login_required
def job_page(request: HttpRequest, job_id: int) -> HttpResponse:
    job = get_object_or_404(BenchmarkJob, pk=job_id, owner=request.user)
    # The state as the page is served, as the API would give it: the script then follows it
    # (a page read before the script's first answer said "…").
    context: dict[str, Any] = {"job": job, "states": {k: _(v) for k, v in words.STATES.items()},
                               "status": job.overall_status(), "results": job_results(job)}
    return render(request, "web/job.html", context)

