"""The shared leaderboard: nodes ranked on their latest value of one metric."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.errors import error
from api.serializers import LeaderboardEntrySerializer
from leaderboard.services.ranking import DEFAULT_METRIC, Filters, UnknownMetric, ranked


def filters_from(request: Request) -> Filters:
    q = request.query_params
    return Filters(metric=q.get("metric", DEFAULT_METRIC), region=q.get("region", ""),
                   provider=q.get("provider", ""))


class LeaderboardView(APIView):
    @extend_schema(
        parameters=[OpenApiParameter("metric", str, description=f"default {DEFAULT_METRIC}"),
                    OpenApiParameter("region", str, description="province or city code"),
                    OpenApiParameter("provider", str)],
        responses={200: LeaderboardEntrySerializer(many=True)},
    )
    def get(self, request: Request) -> Response:
        try:
            rows = list(ranked(filters_from(request))[:500])
        except UnknownMetric as exc:
            return error(str(exc), 400, {"metric": str(exc)})
        ranks = {row.pk: i + 1 for i, row in enumerate(rows)}
        return Response(LeaderboardEntrySerializer(rows, many=True, context={"ranks": ranks}).data)
