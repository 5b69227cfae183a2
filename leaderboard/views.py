"""Server-rendered pages: the leaderboard, a node, a provider, a job's live progress."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.utils.translation import gettext as _

from certification.models import Certificate, CertificationProfile
from contract import metrics
from fleet.models import Node, Provider, Region
from jobs.models import BenchmarkJob, LinkResult
from leaderboard import charts
from leaderboard.models import LatestResult
from leaderboard.services import clusters, diagnosis, links, score
from leaderboard.services.ranking import (
    DEFAULT_METRIC,
    BadFilter,
    Filters,
    entries,
    groups,
    history,
    host_reported,
    node_values,
    profile_for,
    ranked,
)

# Metrics offered as sortable columns on the leaderboard (any metric can be picked above).
# (A node's row has only its own figures: links and clusters have views of their own.)
COLUMN_METRICS = ["network.tcp_throughput", "network.tcp_rtt", "storage.randread_iops",
                  "storage.checkpoint_write", "training.allreduce_busbw",
                  "training.comm_share", "training.samples_per_s"]
HISTORY_METRICS = ["network.tcp_throughput", "network.tcp_rtt", "storage.randread_iops",
                   "training.allreduce_busbw", "training.step_time"]


def leaderboard_page(request: HttpRequest) -> HttpResponse:
    filters = Filters.from_query(request.GET)
    problem = ""
    try:
        rows, profile = ranked(filters)
        board = entries(list(rows[:200]), profile, evidence=filters.evidence)
        apart = entries(host_reported(filters, profile), profile, 0, filters.evidence)
        region_groups = groups(filters, "region")[0]
        evidence = filters.evidence_class()
    except BadFilter as exc:
        board, apart, region_groups, profile, problem, evidence = [], [], [], "", str(exc), ""
    metric = metrics.METRICS.get(filters.metric)
    values = node_values((e.row.node_id for e in board), profile, filters.evidence) if board else {}
    columns = [metrics.METRICS[m] for m in COLUMN_METRICS]
    table = [{"entry": e, "cells": [values.get(e.row.node_id, {}).get(c.name) for c in columns]}
             for e in board]
    bars = [charts.Bar(g.name, g.median, g.p5, g.p95, f" ({g.nodes} {_('nodes')})")
            for g in region_groups]
    return render(request, "leaderboard/leaderboard.html", {
        "table": table, "columns": columns, "filters": filters, "profile": profile,
        "apart": apart, "evidence": evidence,
        "problem": problem, "metric": metric,
        "metrics": sorted(metrics.METRICS.values(), key=lambda m: m.name),
        "regions": Region.objects.order_by("province", "city"),
        "provinces": sorted(set(Region.objects.values_list("province", flat=True))),
        "providers": Provider.objects.order_by("name"),
        "gpu_models": sorted(set(Node.objects.exclude(gpu_model="").values_list("gpu_model", flat=True))),
        "region_chart": charts.bar_chart(bars, metric.unit if metric else ""),
        "cluster_sections": clusters.board(), "region_paths": links.region_paths(),
        # Every measured pair (the latest ranked test of each), up to MAX_MATRIX_NODES nodes.
        "link_chart": link_chart(board_links := links.latest_links(links.Selection())),
        "link_findings": clusters.link_findings(board_links),
    }, status=400 if problem else 200)


def link_chart(found: list[LinkResult]) -> str:
    grid = links.matrix(found)
    return charts.link_matrix([n["name"] for n in grid["nodes"]], [
        charts.LinkCell(li["from_name"], li["to_name"], li["throughput_gbps"], li["rtt_ms"],
                        li["confirmed"]) for li in grid["links"]])


def node_page(request: HttpRequest, node_id: int) -> HttpResponse:
    node = get_object_or_404(Node.objects.select_related("provider", "region"), pk=node_id)
    profile = request.GET.get("profile") or profile_for(Filters(metric=DEFAULT_METRIC))
    # A node's own page judges every figure it has, each marked with its evidence below.
    values = node_values([node.pk], profile, "any").get(node.pk, {})
    latest = LatestResult.objects.filter(node=node, profile=profile,
                                         evidence=LatestResult.ANY).order_by("metric")
    histories = []
    for name in HISTORY_METRICS:
        points = history(node, name)
        if points:
            unit = metrics.METRICS[name].unit
            histories.append({"metric": metrics.METRICS[name], "svg": charts.line_chart(
                [p["value"] for p in points],
                [p["measured_at"].strftime("%Y-%m-%d %H:%M") for p in points], unit)})
    certificate = node.certificates.order_by("-issued_at").first()  # type: ignore[attr-defined]
    near = links.neighbourhood(node.pk)
    return render(request, "leaderboard/node.html", {
        "link_chart": link_chart(near),
        "link_findings": clusters.link_findings(near),
        "node": node, "profile": profile, "latest": latest, "histories": histories,
        "score": score.score(values), "findings": diagnosis.diagnose(values),
        "certificate": certificate, "labels": {m: metrics.METRICS[m].label for m in metrics.METRICS},
    })


def provider_page(request: HttpRequest, provider_id: int) -> HttpResponse:
    provider = get_object_or_404(Provider, pk=provider_id)
    filters = Filters(metric=request.GET.get("metric") or DEFAULT_METRIC, provider=provider.name,
                      evidence=request.GET.get("evidence", ""))
    try:
        rows, profile = ranked(filters)
    except BadFilter:
        filters = Filters(provider=provider.name)
        rows, profile = ranked(filters)
    # Its nodes with figures only they vouch for follow, unranked (rank 0 shows as "–").
    board = (entries(list(rows[:200]), profile, evidence=filters.evidence)
             + entries(host_reported(filters, profile), profile, 0, filters.evidence))
    nodes = provider.nodes.select_related("region").order_by("name")
    certificates = (Certificate.objects.filter(node__provider=provider).select_related("node")
                    .order_by("-issued_at")[:100])
    provider_links = links.latest_links(links.Selection(provider=provider.name))
    return render(request, "leaderboard/provider.html", {
        "link_chart": link_chart(provider_links),
        "link_findings": clusters.link_findings(provider_links),
        "provider": provider, "board": board, "nodes": nodes, "profile": profile,
        "metric": metrics.METRICS[filters.metric], "certificates": certificates})


def certification_page(request: HttpRequest) -> HttpResponse:
    """The published certification profiles with their thresholds."""
    profiles = CertificationProfile.objects.order_by("name", "-version")
    return render(request, "leaderboard/certification.html", {"profiles": profiles})


@login_required
def job_page(request: HttpRequest, job_id: int) -> HttpResponse:
    job = get_object_or_404(BenchmarkJob, pk=job_id, owner=request.user)
    context: dict[str, Any] = {"job": job}
    return render(request, "leaderboard/job.html", context)
