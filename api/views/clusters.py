"""Clusters and links: the cluster board, link matrices, and the paths between regions."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.errors import error
from api.permissions import current_user
from api.renderers import CSVRenderer
from api.serializers import (
    ClusterBoardSerializer,
    LinkHistorySerializer,
    LinkMatrixSerializer,
    RegionPathPageSerializer,
)
from board import clusters, links, site_figures
from contract import metrics
from jobs.models import BenchmarkJob

FORMAT = OpenApiParameter("format", str, enum=["json", "csv"])


class ClusterBoardView(APIView):
    renderer_classes = [JSONRenderer, CSVRenderer]

    @extend_schema(parameters=[
        OpenApiParameter("metric", str, enum=clusters.choices(),
                         description=f"rank on this (default {clusters.DEFAULT_METRIC})"),
        OpenApiParameter("size", int, description="nodes per cluster"),
        OpenApiParameter("gpu_model", str, description='"" for clusters without NVIDIA GPUs'),
        OpenApiParameter("region", str), OpenApiParameter("profile", str),
        OpenApiParameter("evidence", str, enum=["verified", "measured", "any"], description=(
            "measured (default): clusters a buyer measured with trial agents; any: the "
            "providers' own runs too")), FORMAT],
        responses={200: ClusterBoardSerializer})
    def get(self, request: Request) -> Response:
        query = request.query_params
        metric = query.get("metric") or clusters.DEFAULT_METRIC
        size = query.get("size") or ""
        if size and not size.isdigit():
            return error("size must be a whole number of nodes", 400, {"size": size[:32]})
        evidence = query.get("evidence") or ""
        where = (int(size) if size else None, query.get("gpu_model"), query.get("region") or "",
                 query.get("profile") or "")
        sections = clusters.board(metric, *where, evidence=evidence)
        unit = "Gbit/s" if metric == clusters.SLOWEST_LINK else metrics.METRICS[metric].unit
        # Listed apart, unranked: what only the providers' hosts measured.
        apart = [] if evidence == "any" else clusters.claims(*where)
        return Response({"metric": metric, "unit": unit, "evidence": evidence or "measured",
                         "results": [cluster_data(e, metric) for _, entries in sections
                                     for e in entries],
                         "host_reported": [cluster_data(e, metric) | {"rank": None}
                                           for e in apart]})


def cluster_data(e: clusters.ClusterEntry, metric: str) -> dict[str, Any]:
    result = e.result
    return {
        "rank": e.rank, "size": result.size, "gpu_model": result.gpu_model, "cluster": result.key,
        "name": clusters.name(result), "nodes": [{"id": n.pk, "name": n.name}
                                                 for n in sorted(result.nodes.all(), key=lambda n: n.name)],
        "provider": result.provider.name if result.provider else "",
        "region": result.region.code if result.region else "", "job": result.job_id,
        "profile": result.profile, "measured_at": result.measured_at, "value": e.value(metric),
        "slowest_link_gbps": result.slowest_link_gbps,
        "allreduce_busbw_largest": e.value("training.allreduce_busbw_largest"),
        "step_time_ms": e.value("training.step_time"), "comm_share": e.value("training.comm_share"),
        "samples_per_s": e.value("training.samples_per_s"), "price_cny_month": e.price_cny_month,
        "price_per_throughput": e.price_per_throughput, "evidence": result.grade,
        "runs": e.runs,
        "diagnosis": [f.__dict__ for f in e.findings],
        "id": result.pk}  # last: CSV readers keep the columns they had


class LinkMatrixView(APIView):
    renderer_classes = [JSONRenderer, CSVRenderer]

    @extend_schema(parameters=[
        OpenApiParameter("job", int, description="every link one job measured"),
        OpenApiParameter("provider", str, description="links between this provider's nodes"),
        OpenApiParameter("region", str, description="links within a region (code or province)"),
        OpenApiParameter("node", int, description="the links one node is in"), FORMAT],
        responses={200: LinkMatrixSerializer})
    def get(self, request: Request) -> Response:
        selection = links.Selection.from_query(request.query_params)
        user = current_user(request)
        if selection.job is not None and not user.is_staff and not BenchmarkJob.objects.filter(
                pk=selection.job, owner=user).exists():
            # A job's links, unranked ones too, are its owner's; the board's are everyone's.
            return error(f"no job {selection.job} of yours", 404, {"job": str(selection.job)})
        found = links.latest_links(selection)
        grid = links.matrix(found)
        return Response({"nodes": grid["nodes"], "results": grid["links"],
                         "diagnosis": [f.__dict__ for f in clusters.part_findings(
                             found, selection.job)]})


class RegionPathsView(APIView):
    renderer_classes = [JSONRenderer, CSVRenderer]

    @extend_schema(parameters=[FORMAT], responses={200: RegionPathPageSerializer})
    def get(self, request: Request) -> Response:
        # The buyer's own sites' rows after the platform's, for them alone.
        own = site_figures.site_paths(request.user) if request.user.is_authenticated else []
        return Response({"results": [p.__dict__ for p in [*links.region_paths(), *own]]})


class LinkHistoryView(APIView):
    renderer_classes = [JSONRenderer, CSVRenderer]

    @extend_schema(parameters=[OpenApiParameter("from_node", int, required=True),
                               OpenApiParameter("to_node", int, required=True), FORMAT],
                   responses={200: LinkHistorySerializer})
    def get(self, request: Request) -> Response:
        ends = {name: request.query_params.get(name) or "" for name in ("from_node", "to_node")}
        bad = {k: f"{k} must be a node id" for k, v in ends.items() if not v.isdigit()}
        if bad:
            return error("give from_node and to_node: the link's sender and receiver", 400, bad)
        return Response({"results": [links.link_data(li) for li in links.history(
            int(ends["from_node"]), int(ends["to_node"]))]})
