"""The shared leaderboard: nodes ranked like with like, region and provider views, history."""

from __future__ import annotations

import base64
import binascii
import json
from datetime import datetime
from typing import Any

from django.db.models import Q, QuerySet
from django.http import HttpResponse, HttpResponseBase, QueryDict
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.errors import error
from api.permissions import current_user
from api.renderers import CSVRenderer
from api.serializers import (
    GroupPageSerializer,
    HistorySerializer,
    LeaderboardPageSerializer,
    NodeReportSerializer,
    entries_data,
    evidence_label,
)
from board import diagnosis, page_cache, score, site_figures, stability_board
from board.models import LatestResult
from board.ranking import (
    DEFAULT_METRIC,
    HISTORY_MAX_PAGE,
    HISTORY_PAGE,
    Filters,
    entries,
    groups,
    history,
    host_reported,
    metric_of,
    node_values,
    profile_for,
    ranked,
)
from config.errors import Invalid
from fleet.models import Node
from jobs.services import site_probes

FILTER_PARAMS = [
    OpenApiParameter("metric", str, description=f"rank on this metric (default {DEFAULT_METRIC})"),
    OpenApiParameter("region", str, description="province (zhejiang) or city code (hangzhou)"),
    OpenApiParameter("provider", str), OpenApiParameter("provider_kind", str, enum=["local_dc", "cloud"]),
    OpenApiParameter("gpu_model", str, description='"none" for hosts without an NVIDIA GPU'),
    OpenApiParameter("profile", str, description="default: the profile with the most results"),
    OpenApiParameter("certified", bool, description="only nodes with a valid certificate"),
    OpenApiParameter("evidence", str, enum=["verified", "any"],
                     description="verified: only figures a reference endpoint's own record "
                                 "matched (the default for throughput and RTT to references); "
                                 "any: host-reported figures too"),
    OpenApiParameter("max_price", int, description="a monthly budget in CNY: only nodes priced "
                                                   "at or under it (unpriced nodes drop out)"),
    OpenApiParameter("format", str, enum=["json", "csv"]),
]
SITE_PARAMS = [
    OpenApiParameter("site", int, description="one of your sites: its figures beside each node "
                                              "(yours alone: another's site is a 404)"),
    OpenApiParameter("sort", str, enum=["site_rtt", "site_upload", "site_download"],
                     description="with site: the page in the order of that figure from your "
                                 "site (nodes it has not probed last); the ranks stay the "
                                 "board's"),
]
PAGE_SIZE = 100
# What a board page depends on, of its query (the filters and the cursor; ?format picks the
# renderer): the key of a kept page, and what its `next` link carries.
PAGE_PARAMS = ("metric", "region", "provider", "provider_kind", "gpu_model", "profile",
               "certified", "evidence", "max_price", "cursor", "format")


class LeaderboardBase(APIView):
    renderer_classes = [JSONRenderer, CSVRenderer]

    def filters(self) -> Filters:
        return Filters.from_query(self.request.query_params)


def encode_cursor(rank: int, value: float, node_id: int) -> str:
    return base64.urlsafe_b64encode(json.dumps([rank, value, node_id]).encode()).decode()


def decode_cursor(cursor: str) -> tuple[int, float, int]:
    try:
        rank, value, node_id = json.loads(base64.urlsafe_b64decode(cursor.encode()))
        return int(rank), float(value), int(node_id)
    except (ValueError, TypeError, binascii.Error):
        raise Invalid("invalid cursor; use the `next` link of the previous page",
                      field="cursor") from None


def after(rows: QuerySet[LatestResult], higher_is_better: bool, value: float,
          node_id: int) -> QuerySet[LatestResult]:
    """Keyset pagination: the rows that come after (value, node_id) in ranking order."""
    beyond = Q(value__lt=value) if higher_is_better else Q(value__gt=value)
    return rows.filter(beyond | Q(value=value, node_id__gt=node_id))


class LeaderboardView(LeaderboardBase):
    @extend_schema(parameters=[*FILTER_PARAMS, OpenApiParameter("cursor", str), *SITE_PARAMS],
                   responses={200: LeaderboardPageSerializer})
    def get(self, request: Request) -> HttpResponseBase:
        filters = self.filters()
        if from_a_site(request) or request.accepted_renderer.format != "json":
            return Response(self.page(filters))
        # The same for every reader until the record changes: kept (board/page_cache.py).
        own = own_params(request).items()
        body = page_cache.remembered(request.build_absolute_uri(request.path), own, lambda: (
            request.accepted_renderer.render(self.page(filters), request.accepted_media_type,
                                             self.get_renderer_context())))
        return HttpResponse(body, content_type=request.accepted_media_type)

    def page(self, filters: Filters) -> dict[str, Any]:
        request = self.request
        rows, profile = ranked(filters)  # ranked for everyone; a site's figures only beside
        first_rank = 1
        if request.query_params.get("cursor"):
            first_rank, value, node_id = decode_cursor(request.query_params["cursor"])
            rows = after(rows, metric_of(filters.metric).higher_is_better, value, node_id)
        evidence = filters.evidence_class()
        page = list(rows[:PAGE_SIZE + 1])
        more = len(page) > PAGE_SIZE
        page = page[:PAGE_SIZE]
        next_url = None
        if more:
            last = page[-1]
            # The page's own parameters only: a kept page's link is every reader's.
            query = QueryDict(mutable=True)
            query.update(own_params(request, SITE_KEYS))
            query["cursor"] = encode_cursor(first_rank + len(page), last.value, last.node_id)
            next_url = request.build_absolute_uri(f"{request.path}?{query.urlencode()}")
        results = entries_data(entries(page, profile, first_rank, filters.evidence))
        # Shown apart on the first page: figures only their host vouches for.
        apart = [] if request.query_params.get("cursor") else entries_data(
            entries(host_reported(filters, profile), profile, 0, filters.evidence))
        for row in apart:
            row["rank"] = None
        if from_a_site(request):
            results = from_site(request, results)
        return {"metric": filters.metric, "profile": profile, "evidence": evidence,
                "next": next_url, "results": results, "host_reported": apart}


SITE_KEYS = ("site", "sort")


def from_a_site(request: Request) -> bool:
    """Asked with one of the caller's sites: figures of that buyer's own, never kept."""
    return any(request.query_params.get(k) for k in SITE_KEYS)


def own_params(request: Request, also: tuple[str, ...] = ()) -> dict[str, str]:
    """The page's own parameters of the query (and ``also``): junk ones left out."""
    return {k: str(v) for k, v in request.query_params.items() if k in (*PAGE_PARAMS, *also)}


def from_site(request: Request, results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The page with the caller's own site's figures beside each node, ordered by one of
    them when asked: the site's owner's alone (anyone else's site reads as missing)."""
    raw, sort = request.query_params.get("site", ""), request.query_params.get("sort", "")
    if not raw.isdigit():
        raise Invalid("site is one of your sites' ids (GET /api/v1/sites)", field="site")
    if sort and sort not in site_figures.SORTS:
        raise Invalid(f"sort is one of {', '.join(site_figures.SORTS)}", field="sort")
    site = site_probes.site_of(current_user(request), int(raw))
    return site_figures.beside(results, site, sort)


class GroupView(LeaderboardBase):
    by = "region"

    @extend_schema(parameters=FILTER_PARAMS, responses={200: GroupPageSerializer})
    def get(self, request: Request) -> Response:
        filters = self.filters()
        rows, profile = groups(filters, self.by)
        return Response({"metric": filters.metric, "profile": profile, "unit":
                         metric_of(filters.metric).unit, "results": [r.__dict__ for r in rows]})


class RegionView(GroupView):
    by = "region"


class ProviderView(GroupView):
    by = "provider"


class NodeHistoryView(LeaderboardBase):
    @extend_schema(parameters=[OpenApiParameter("metric", str), OpenApiParameter("format", str),
                               OpenApiParameter("cursor", str),
                               OpenApiParameter("page_size", int, description="at most 2000")],
                   responses={200: HistorySerializer})
    def get(self, request: Request, node_id: int) -> Response:
        node = get_object_or_404(Node, pk=node_id, trial_of__isnull=True)
        metric = request.query_params.get("metric") or DEFAULT_METRIC
        raw_size = request.query_params.get("page_size") or str(HISTORY_PAGE)
        if not raw_size.isdigit():
            return error("page_size must be a whole number", 400, {"page_size": raw_size[:32]})
        size = max(1, min(int(raw_size), HISTORY_MAX_PAGE))
        after = history_cursor(request.query_params.get("cursor", ""))
        points = history(node, metric, after, size + 1, viewer=request.user)
        next_url = None
        if len(points) > size:
            points = points[:size]
            query = request.query_params.copy()
            query["cursor"] = base64.urlsafe_b64encode(json.dumps(
                [points[-1]["measured_at"].isoformat(), points[-1]["sample"]]).encode()).decode()
            next_url = request.build_absolute_uri(f"{request.path}?{query.urlencode()}")
        return Response({"node": node.pk, "metric": metric, "next": next_url, "results": points})


def history_cursor(cursor: str) -> tuple[Any, int] | None:
    if not cursor:
        return None
    try:
        when, sample_id = json.loads(base64.urlsafe_b64decode(cursor.encode()))
        return datetime.fromisoformat(when), int(sample_id)
    except (ValueError, TypeError, binascii.Error):
        raise Invalid("invalid cursor; use the `next` link of the previous page",
                      field="cursor") from None


class NodeReportView(APIView):
    """A node's latest figures with the score, its parts and the diagnosis."""

    @extend_schema(parameters=[OpenApiParameter("profile", str)],
                   responses={200: NodeReportSerializer})
    def get(self, request: Request, node_id: int) -> Response:
        node = get_object_or_404(Node.objects.select_related("provider", "region"), pk=node_id,
                                 trial_of__isnull=True)
        profile = request.query_params.get("profile") or profile_for(Filters(metric=DEFAULT_METRIC))
        # Every figure, each marked with its evidence (as the node's page shows them).
        values = node_values([node.pk], profile, "any").get(node.pk, {})
        measured = node_values([node.pk], profile).get(node.pk, {})
        # Scored as the board and the node's page score it (measured figures, stability
        # where weighted).
        found = stability_board.figures([node.pk], stability_board.WATCHED)[node.pk]
        return Response(report_data(node, profile, stability_board.scored(values, found),
                                    stability_board.scored(measured, found)))


def report_data(node: Node, profile: str, values: dict[str, float],
                measured: dict[str, float]) -> dict[str, Any]:
    latest = LatestResult.objects.filter(node=node, profile=profile,
                                         evidence=LatestResult.ANY).order_by("metric")
    return {
        "node": node.pk, "profile": profile,
        "metrics": [{"metric": r.metric, "value": r.value, "unit": r.unit, "p5": r.p5,
                     "p95": r.p95, "n": r.n, "measured_at": r.measured_at, "runs": r.runs,
                     "evidence": evidence_label(r), "requested_by": r.requested_by}
                    for r in latest],
        "score": score.score(measured).as_dict(),
        "diagnosis": [f.__dict__ for f in diagnosis.diagnose(values)],
    }
