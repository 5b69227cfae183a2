"""A buyer's own training job: its step time and cost on each candidate, ranked."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.throttling import ScopedRateThrottle
from rest_framework.views import APIView

from api.estimate_serializers import EstimatePageSerializer, EstimateRequestSerializer
from api.permissions import current_user
from board import estimate_board
from jobs.services import site_probes

MODEL_DOC = "README.md#what-would-my-job-take-and-cost (board/estimate.py)"


class EstimateView(APIView):
    throttle_classes = [ScopedRateThrottle]
    throttle_scope = "estimate"

    @extend_schema(request=EstimateRequestSerializer, responses={200: EstimatePageSerializer})
    def post(self, request: Request) -> Response:
        body = EstimateRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        site_id = body.validated_data["workload"].get("site")
        site = site_probes.site_of(current_user(request), site_id) if site_id else None
        workload = body.build_workload(site)
        found = estimate_board.rank(workload, body.selection(), body.validated_data["rank_by"])
        return Response({"workload": estimate_board.workload_data(workload),
                         "rank_by": body.validated_data["rank_by"], "model": MODEL_DOC,
                         "results": [estimate_board.candidate_data(c) for c in found]})
