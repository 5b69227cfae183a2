"""A provider's page: its nodes on the board (ranked and host-reported apart), prices,
certificates and links."""

from __future__ import annotations

import statistics
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.utils.translation import gettext as _

from board import clusters, links
from board.ranking import (
    DEFAULT_METRIC,
    BadFilter,
    Entry,
    Filters,
    entries,
    host_reported,
    ranked,
)
from certification.models import Certificate
from contract import metrics
from fleet.models import Node, Provider
from web import charts, words
from web.page import (
    link_chart,
)


def provider_summary(nodes: list[Node], board: list[Entry], certs: list[Certificate]) -> dict[str, Any]:
    prices = sorted(n.monthly_price_cny for n in nodes if n.monthly_price_cny)
    scores = [e.score.value for e in board if e.score.value is not None]
    tiers: dict[str, int] = {}
    holders: set[int] = set()
    for c in certs:
        if c.valid and c.node_id not in holders:
            holders.add(c.node_id)
            tiers[words.tier(c.tier)] = tiers.get(words.tier(c.tier), 0) + 1
    return {"nodes": len(nodes),
            "regions": sorted({words.region(n.region.province, n.region.city) for n in nodes}),
            "price": (f"{charts.number(prices[0])}–{charts.number(prices[-1])}" if len(prices) > 1
                      and prices[0] != prices[-1] else charts.number(prices[0])) if prices else "–",
            "median_score": charts.number(statistics.median(scores)) if scores else "–",
            "tiers": ", ".join(f"{t} × {n}" for t, n in tiers.items()) or _("none")}



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
    return render(request, "web/provider.html", {
        "provider": provider, "board": board, "nodes": nodes, "profile": profile,
        "metric": metrics.METRICS[filters.metric], "certificates": certificates,
        "summary": provider_summary(nodes, board, certificates),
        "link_chart": link_chart(provider_links),
        "link_findings": clusters.link_findings(provider_links),
    })

