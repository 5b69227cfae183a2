"""The board (/): every ranked node under the buyer's filters with its columns, winners,
spread and stability, the charts by region and kind, price against score, the clusters and
the link matrix."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.template.defaultfilters import date
from django.urls import reverse
from django.utils.translation import gettext as _

from board import clusters, links
from board.estimate_board import Selection
from board.ranking import (
    DEFAULT_METRIC,
    BadFilter,
    Entry,
    Filters,
    Group,
    entries,
    gpu_unmeasured,
    groupings,
    host_reported,
    node_values,
    profile_for,
    ranked,
)
from contract import metrics
from fleet.models import Node, Provider, Region
from web import charts, my_site, stability_page, words
from web.page import (
    COLUMN_METRICS,
    best_of,
    figure,
    label_of,
    link_chart,
    newest_valid,
    node_url,
    unit_of,
)
from web.pages import estimate as estimates
from web.pages import verdict
from web.templatetags.board_extras import evidence_badge

RANKING_BARS = 15


def metric_choices() -> list[dict[str, str]]:
    return sorted(({"name": m.name, "label": words.label(m.name), "unit": words.unit(m.name)}
                   for m in metrics.METRICS.values() if not m.name.startswith("noop.")),
                  key=lambda c: (c["name"].split(".")[0], c["label"]))


def column(metric: str) -> dict[str, Any]:
    return {"name": metric, "label": label_of(metric), "unit": unit_of(metric),
            "about": words.about(metric), "higher": clusters.higher_is_better(metric)}


def board_table(board: list[Entry], values: Mapping[int, Mapping[str, float]],
                metric: metrics.Metric) -> dict[str, Any]:
    """The board's columns (with data, the ranked metric first), each row's cells with the
    column winners marked, the ranked metric's p5-p95 spread as a bar on one scale, and its
    stability across the platform's re-tests (a column only once a row has re-tests)."""
    names = [metric.name] + [m for m in COLUMN_METRICS if m != metric.name]
    cells = {m: [values.get(e.row.node_id, {}).get(m) for e in board] for m in names}
    cells[metric.name] = [e.row.value for e in board]
    shown = [m for m in names if any(v is not None for v in cells[m])] or [metric.name]
    winners = {m: best_of(cells[m], clusters.higher_is_better(m)) for m in shown}
    # Each column's words once (a phone's card labels its cells with them), not once a row.
    words_of = {m: {"label": label_of(m), "unit": unit_of(m)} for m in shown}
    top = max([e.row.p95 or e.row.value for e in board] or [0.0]) or 1.0
    tiers = newest_valid(e.row.node_id for e in board)
    prices = [e.price_per_score for e in board]
    cheapest = best_of(prices, higher=False)
    marks = stability_page.board_marks(board)  # the ranked figure across re-tests
    rows = []
    for i, e in enumerate(board):
        low, high = e.row.p5, e.row.p95
        node, price = e.row.node, e.row.node.monthly_price_cny
        rows.append({
            "entry": e, "tier": tiers.get(e.row.node_id), "node_url": node_url(e.row.node_id),
            "provider_url": reverse("provider-page", args=[e.row.node.provider_id]),
            # What the row shows, as words and figures already: the template reads each as
            # one key, not a chain of lookups and a filter (100 rows' cells were four fifths
            # of the page's rendering, #35).
            "name": node.name, "id": node.pk, "provider": node.provider.name,
            "kind": words.kind(node.provider.kind),
            "region": words.region(node.region.province, node.region.city),
            "evidence_badge": evidence_badge(e.row.grade),
            "evidence_why": words.evidence(e.row.grade),
            "score": figure(e.score.value), "price": figure(None if price is None else float(price)),
            "per_point": figure(e.price_per_score),
            "gpu": node.gpu_model if node.gpu_model not in ("", "none") else "",
            "measured": date(e.row.measured_at, "Y-m-d"),
            "cells": [{"text": figure(cells[m][i], m), "best": i in winners[m], **words_of[m]}
                      for m in shown],
            "spread": None if low is None or high is None else {
                "left": 100 * low / top, "width": max(1.0, 100 * (high - low) / top),
                "mark": 100 * e.row.value / top, "text": f"{figure(low)}–{figure(high)}"},
            "price_best": i in cheapest, "stability": marks[i],
            "gpu_unmeasured": gpu_unmeasured(e.row.node, values.get(e.row.node_id, {})),
        })
    return {"columns": [column(m) for m in shown], "table": rows,
            "has_gpu": any(e.row.node.gpu_model for e in board),
            "has_price": any(e.row.node.monthly_price_cny for e in board),
            "has_tier": bool(tiers), "has_stability": stability_page.shown(marks)}


def ranking_chart(board: list[Entry], metric: metrics.Metric) -> str:
    top = board[:RANKING_BARS]
    return charts.bar_chart(
        [charts.Bar(e.row.node.name, e.row.value, e.row.p5, e.row.p95, best=e.rank == 1) for e in top],
        unit_of(metric.name), f"{words.label(metric.name)} ({unit_of(metric.name)})")


def group_label(g: Group) -> str:
    if g.kind == "kind":
        return words.kind(g.key)
    if g.kind == "city":
        return " · ".join(words.place(part) for part in g.name.split(" / "))
    return words.place(g.name)


def group_chart(found: list[Group], metric: metrics.Metric) -> str:
    # The middle node's own figure, named: never a mean of two nodes (#32).
    bars = [charts.Bar(group_label(g), g.median, g.p5, g.p95,
                       " " + _("(%(n)s nodes; the middle one: %(node)s)") % {"n": g.nodes,
                                                                            "node": g.node})
            for g in found]
    if bars:  # the better group in the accent colour
        pick = (max if metric.higher_is_better else min)(range(len(bars)), key=lambda i: bars[i].value)
        bars[pick] = charts.Bar(bars[pick].label, bars[pick].value, bars[pick].low, bars[pick].high,
                                bars[pick].note, best=True)
    return charts.bar_chart(bars, unit_of(metric.name),
                            _("the middle node's %(metric)s (%(unit)s), p5–p95 across nodes")
                            % {"metric": words.label(metric.name), "unit": unit_of(metric.name)})


Sections = list[tuple[tuple[int, str], list[clusters.ClusterEntry]]]


def price_chart(board: list[Entry], sections: Sections) -> str:
    """Price against score, one point per node with both (a cluster has no score of its own:
    its figures are on its table)."""
    points = [charts.Point(e.row.node.name, float(e.row.node.monthly_price_cny), e.score.value,
                           "node", node_url(e.row.node_id))
              for e in board if e.row.node.monthly_price_cny and e.score.value is not None]
    return charts.scatter_chart(points, _("price (CNY/month)"), _("training readiness score (0–100)"),
                                _("cheap and good"), {"node": _("node")})


def clusters_within(sections: Sections, filters: Filters) -> Sections:
    """The cluster sections under the board's filters that clusters have too: provider kind,
    provider, GPU model and budget (a cluster's price is its nodes' together)."""
    out = []
    for key, found in sections:
        kept = [e for e in found if within(e, filters)]
        for i, e in enumerate(kept):
            e.rank = i + 1
        if kept:
            out.append((key, kept))
    return out


def within(e: clusters.ClusterEntry, filters: Filters) -> bool:
    provider = e.result.provider
    return ((not filters.provider_kind or (provider is not None and provider.kind == filters.provider_kind))
            and (not filters.provider or (provider is not None
                                          and provider.name.lower() == filters.provider.lower()))
            and (not filters.gpu_model or e.result.gpu_model.lower() == filters.gpu_model.lower())
            and (filters.max_price is None or (e.price_cny_month is not None
                                               and e.price_cny_month <= filters.max_price)))



class BadPage(BadFilter):
    default_field = "page"


MAX_PAGE = 10_000


def page_number(query: Mapping[str, str]) -> int:
    """Which page of the board (1 when none is asked for)."""
    raw = str(query.get("page", "") or "1").strip()
    if not raw.isdigit() or not 1 <= int(raw) <= MAX_PAGE:
        raise BadPage(_("page is a whole number from 1 to %(most)s") % {"most": MAX_PAGE})
    return int(raw)


def pager(request: HttpRequest, page: int, more: bool) -> dict[str, str]:
    """The links to the pages beside this one, with the reader's other choices kept."""
    def to(number: int) -> str:
        query = request.GET.copy()
        query["page"] = str(number)
        return f"?{query.urlencode()}"

    return {"prev_url": to(page - 1) if page > 1 else "", "next_url": to(page + 1) if more else ""}


def leaderboard_page(request: HttpRequest) -> HttpResponse:
    problem = ""
    # "From my site" (?site=ID, the reader's own; anyone else's is a 404): its figures
    # beside each row, the rows in the order of one of them when sorted so (the ranks stay).
    site, sort = my_site.chosen(request), my_site.sort_of(request.GET)
    page, more = 1, False
    try:
        filters = Filters.from_query(request.GET)
        page = page_number(request.GET)
        rows, profile = ranked(filters)
        per_page = settings.BOARD_HTML_ROWS
        first = (page - 1) * per_page
        page_rows = list(rows[first:first + per_page + 1])
        more = len(page_rows) > per_page
        board = entries(page_rows[:per_page], profile, first + 1, evidence=filters.evidence)
        # The host's claims once, on the first page (as the API's board lists them).
        apart = entries(host_reported(filters, profile), profile, 0,
                        filters.evidence) if page == 1 else []
        grouped = groupings(filters, ("region", "kind"))[0]
        region_groups, kind_groups = grouped["region"], grouped["kind"]
        cluster_sections = clusters_within(
            clusters.board(region=filters.region, evidence=filters.evidence), filters)
        cluster_claims = [] if filters.evidence == "any" else [
            e for e in clusters.claims(region=filters.region) if within(e, filters)]
    except BadFilter as exc:
        filters = Filters(region=request.GET.get("region", ""))
        board, apart, region_groups, kind_groups, cluster_sections = [], [], [], [], []
        cluster_claims = []
        profile, problem = "", str(exc)
    metric = metrics.METRICS.get(filters.metric) or metrics.METRICS[DEFAULT_METRIC]
    values = node_values((e.row.node_id for e in board), profile, filters.evidence) if board else {}
    table = board_table(board, values, metric)
    if site is not None:
        table["table"] = my_site.beside(table["table"], site, lambda r: r["entry"].row.node_id,
                                        sort)
    board_links = links.latest_links(links.Selection())
    # The verdict for the default job (multi-node data-parallel training) on the board's
    # candidates: the answer first, the table under it.
    found = verdict.box(verdict.default_job(), Selection(
        region=filters.region, provider=filters.provider, gpu_model=filters.gpu_model,
        max_price=filters.max_price, evidence=filters.evidence)) if not problem else None
    return render(request, "web/leaderboard.html", {
        **table, "filters": filters, "profile": profile, "apart": apart, "problem": problem,
        "metric": metric, "metric_label": words.label(metric.name),
        "metric_about": words.about(metric.name),
        "metric_choices": metric_choices(),
        "regions": Region.objects.order_by("province", "city"),
        "provinces": sorted(set(Region.objects.values_list("province", flat=True))),
        "providers": Provider.objects.order_by("name"),
        # The few models, told apart in the database (not 10,000 nodes' rows read to a set).
        "gpu_models": list(Node.objects.exclude(gpu_model__in=("", "none"))  # none: no GPU
                           .order_by("gpu_model").values_list("gpu_model", flat=True)
                           .distinct()),
        "ranking_chart": ranking_chart(board, metric),
        "region_chart": group_chart([g for g in region_groups if g.kind == "province"], metric),
        "city_chart": group_chart([g for g in region_groups if g.kind == "city"], metric),
        "kind_chart": group_chart(kind_groups, metric),
        "price_chart": price_chart(board, cluster_sections),
        "cluster_sections": cluster_sections, "cluster_claims": cluster_claims,
        "region_paths": links.region_paths(),
        # Every measured pair (the latest ranked test of each), up to MAX_MATRIX_NODES nodes.
        "link_chart": link_chart(board_links),
        "link_findings": clusters.link_findings(board_links),
        "job_form": estimates.form(request.GET, sites=my_site.choices(request)),
        "verdict": found,
        "stability_days": settings.STABILITY_WINDOW_DAYS,
        **profile_choices(filters, profile),
        "site": site, "site_sort": sort if site else "", "my_sites": my_site.choices(request),
        "site_sorts": my_site.sort_links(request.GET),
        "site_url": reverse("site-page", args=[site.pk]) if site else "",
        "page": page, **pager(request, page, more),
    }, status=400 if problem else 200)


def profile_choices(filters: Filters, profile: str) -> dict[str, Any]:
    """The test profiles to choose from, by their names in the reader's language (a text
    box showed the raw id "default" as its placeholder, #34), and the one the board ranks
    when none is chosen: the most measured for the metric."""
    codes = [c for c in words.PROFILES if c != "retest"]  # re-tests are the stability chart's
    if filters.profile and filters.profile not in codes:
        codes.append(filters.profile)  # a link with another profile keeps it
    busiest = profile_for(Filters(metric=filters.metric)) if filters.profile else profile
    return {"profile_codes": codes, "busiest_profile": busiest}

