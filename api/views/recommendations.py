"""Where to rent for a training job, and why: the verdict for procurement tools."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.throttling import ScopedRateThrottle
from rest_framework.views import APIView

from api.recommendation_serializers import RecommendationQuerySerializer, RecommendationSerializer
from board import verdict


class RecommendationView(APIView):
    throttle_classes = [ScopedRateThrottle]
    throttle_scope = "estimate"  # the same work as an estimate, and a little more

    @extend_schema(parameters=[RecommendationQuerySerializer],
                   responses={200: RecommendationSerializer})
    def get(self, request: Request) -> Response:
        query = RecommendationQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        found = verdict.recommend(query.workload(), query.selection(),
                                  query.validated_data["rank_by"])
        return Response(verdict.verdict_data(found))
