"""Server-rendered pages: the leaderboard, the compare page, a workload's estimate, a node, a
provider, a job's progress and results, the certification profiles. Thin: the figures come
from the ranking, link, cluster and estimate services, the shapes on screen from
leaderboard.page and leaderboard.estimate_page."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.utils.translation import gettext as _

from certification.models import Certificate, CertificationProfile
from contract import metrics
from fleet.models import Node, Provider, Region
from jobs.models import BenchmarkJob
from leaderboard import estimate_page as estimates
from leaderboard import page, stability_page, words
from leaderboard.models import LatestResult
from leaderboard.services import clusters, diagnosis, links, score, stability_board
from leaderboard.services.ranking import (
    DEFAULT_METRIC,
    BadFilter,
    Filters,
    entries,
    groups,
    host_reported,
    node_values,
    profile_for,
    ranked,
)


def leaderboard_page(request: HttpRequest) -> HttpResponse:
    problem = ""
    try:
        filters = Filters.from_query(request.GET)
        rows, profile = ranked(filters)
        board = entries(list(rows[:200]), profile, evidence=filters.evidence)
        apart = entries(host_reported(filters, profile), profile, 0, filters.evidence)
        region_groups = groups(filters, "region")[0]
        kind_groups = groups(filters, "kind")[0]
        cluster_sections = page.clusters_within(
            clusters.board(region=filters.region, evidence=filters.evidence), filters)
        cluster_claims = [] if filters.evidence == "any" else [
            e for e in clusters.claims(region=filters.region) if page.within(e, filters)]
    except BadFilter as exc:
        filters = Filters(region=request.GET.get("region", ""))
        board, apart, region_groups, kind_groups, cluster_sections = [], [], [], [], []
        cluster_claims = []
        profile, problem = "", str(exc)
    metric = metrics.METRICS.get(filters.metric) or metrics.METRICS[DEFAULT_METRIC]
    values = node_values((e.row.node_id for e in board), profile, filters.evidence) if board else {}
    table = page.board_table(board, values, metric)
    board_links = links.latest_links(links.Selection())
    return render(request, "leaderboard/leaderboard.html", {
        **table, "filters": filters, "profile": profile, "apart": apart, "problem": problem,
        "metric": metric, "metric_label": words.label(metric.name),
        "metric_about": words.about(metric.name),
        "metric_choices": page.metric_choices(),
        "regions": Region.objects.order_by("province", "city"),
        "provinces": sorted(set(Region.objects.values_list("province", flat=True))),
        "providers": Provider.objects.order_by("name"),
        "gpu_models": sorted(set(Node.objects.exclude(gpu_model__in=("", "none"))  # none: no GPU
                                 .values_list("gpu_model", flat=True))),
        "ranking_chart": page.ranking_chart(board, metric),
        "region_chart": page.group_chart([g for g in region_groups if g.kind == "province"], metric),
        "city_chart": page.group_chart([g for g in region_groups if g.kind == "city"], metric),
        "kind_chart": page.group_chart(kind_groups, metric),
        "price_chart": page.price_chart(board, cluster_sections),
        "cluster_sections": cluster_sections, "cluster_claims": cluster_claims,
        "region_paths": links.region_paths(),
        # Every measured pair (the latest ranked test of each), up to MAX_MATRIX_NODES nodes.
        "link_chart": page.link_chart(board_links),
        "link_findings": clusters.link_findings(board_links),
        "job_form": estimates.form(request.GET),
        "stability_days": settings.STABILITY_WINDOW_DAYS,
    }, status=400 if problem else 200)


def estimate_page(request: HttpRequest) -> HttpResponse:
    """A buyer's own training job on every candidate of the board, cheapest or quickest
    first; the candidates without the figures it needs listed apart, with the reason."""
    problem, job, found = "", None, []
    try:
        job = estimates.job_from_query(request.GET, regions=estimates.region_choices())
        found = estimates.ranked(job)
    except estimates.BadJob as exc:
        problem = exc.message
    return render(request, "leaderboard/estimate.html", {
        "problem": problem, "job": job, "rows": [r for r in found if r.rank],
        "skipped": [r for r in found if not r.rank],
        "facts": estimates.workload_facts(job.workload, job.rank_by) if job else [],
        "job_form": estimates.form(request.GET),
        "regions": Region.objects.order_by("province", "city"),
        "provinces": sorted(set(Region.objects.values_list("province", flat=True))),
    }, status=400 if problem else 200)


def compare_page(request: HttpRequest) -> HttpResponse:
    """Two to four nodes or clusters side by side: per metric, the winner of each row, the
    diagnosis of each and the difference in price."""
    node_ids, cluster_ids, problem = page.compare_ids(request.GET)
    status = 400 if problem else 200
    candidates = [] if problem else page.candidates(node_ids, cluster_ids)
    if not problem and len(candidates) < len(node_ids) + len(cluster_ids):
        problem, status = _("Some of these nodes or clusters do not exist (or are no longer listed)."), 404
    comparison = page.comparison(candidates) if candidates and not problem else None
    # With a preset and steps, the buyer's own job estimated on each candidate as well.
    job_rows, job_problem = None, ""
    if comparison and estimates.wants_estimate(request.GET):
        try:
            job = estimates.compare_job(request.GET, [len(c.members) for c in candidates
                                                      if c.kind == "cluster"])
            job_rows = estimates.compare_rows(job, node_ids, cluster_ids,
                                              [(c.kind, c.pk) for c in candidates])
        except estimates.BadJob as exc:
            job_problem, status = exc.message, 400
    return render(request, "leaderboard/compare.html", {
        "candidates": candidates, "comparison": comparison, "problem": problem,
        "estimate": job_rows, "estimate_problem": job_problem,
        "job_form": estimates.form(request.GET, nodes_key="job_nodes"),
        "node_ids": ",".join(map(str, node_ids)), "cluster_ids": ",".join(map(str, cluster_ids)),
    }, status=status)


def node_page(request: HttpRequest, node_id: int) -> HttpResponse:
    node = get_object_or_404(Node.objects.select_related("provider", "region"), pk=node_id,
                             trial_of__isnull=True)
    profile = request.GET.get("profile") or profile_for(Filters(metric=DEFAULT_METRIC))
    # A node's own page diagnoses every figure it has, each marked with its evidence below;
    # it scores the measured ones only, as the board does.
    values = node_values([node.pk], profile, "any").get(node.pk, {})
    measured = node_values([node.pk], profile).get(node.pk, {})
    latest = LatestResult.objects.filter(node=node, profile=profile,
                                         evidence=LatestResult.ANY).order_by("metric")
    certificate = node.certificates.order_by("-issued_at").first()  # type: ignore[attr-defined]
    near = links.neighbourhood(node.pk, request.user)
    stable = stability_page.node_section(node)
    findings = diagnosis.diagnose(values) + stability_page.findings(stable)
    # Scored as the board scores it; unweighted (the default), its row reads "not measured"
    # with no figure beside it rather than a figure it does not count.
    measured = stability_board.scored(measured, stable["figures"])
    return render(request, "leaderboard/node.html", {
        "node": node, "profile": profile, "latest": page.metric_rows(latest),
        "histories": page.histories(node, request.user), "score": score.score(measured),
        "score_parts": page.score_parts(measured), "findings": findings, "stability": stable,
        "certificate": certificate, "inventory": page.inventory(node.inventory),
        "link_chart": page.link_chart(near), "link_findings": clusters.link_findings(near),
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
    nodes = list(provider.nodes.select_related("region").order_by("name"))
    certificates = list(Certificate.objects.filter(node__provider=provider).select_related("node")
                        .order_by("-issued_at")[:100])
    provider_links = links.latest_links(links.Selection(provider=provider.name))
    return render(request, "leaderboard/provider.html", {
        "provider": provider, "board": board, "nodes": nodes, "profile": profile,
        "metric": metrics.METRICS[filters.metric], "certificates": certificates,
        "summary": page.provider_summary(nodes, board, certificates),
        "link_chart": page.link_chart(provider_links),
        "link_findings": clusters.link_findings(provider_links),
    })


def certification_page(request: HttpRequest) -> HttpResponse:
    """The published certification profiles with their thresholds, and who holds one."""
    profiles = CertificationProfile.objects.order_by("name", "-version")
    return render(request, "leaderboard/certification.html", {
        "profiles": [page.profile_view(p) for p in profiles],
        "certified": page.certified_nodes(),
    })


@login_required
def job_page(request: HttpRequest, job_id: int) -> HttpResponse:
    job = get_object_or_404(BenchmarkJob, pk=job_id, owner=request.user)
    context: dict[str, Any] = {"job": job, "states": {k: _(v) for k, v in words.STATES.items()},
                               "results": page.job_results(job)}
    return render(request, "leaderboard/job.html", context)
