"""Procurement: submit benchmark jobs, follow them, cancel them."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.throttling import ScopedRateThrottle

from api.errors import error
from api.pagination import NewestFirst
from api.permissions import current_user
from api.serializers import BenchmarkJobSerializer, BenchmarkRequestSerializer
from jobs.models import BenchmarkJob
from jobs.services import lifecycle, submission


class BenchmarkViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    serializer_class = BenchmarkJobSerializer
    pagination_class = NewestFirst
    throttle_scope = "submission"

    def get_throttles(self) -> list[Any]:
        # Submissions per user; reading one's own jobs is not throttled.
        return [ScopedRateThrottle()] if self.action == "create" else []

    def get_queryset(self) -> QuerySet[BenchmarkJob]:
        if getattr(self, "swagger_fake_view", False):  # schema generation has no user
            return BenchmarkJob.objects.none()
        # A client sees only its own jobs; another's answers 404, as if it did not exist.
        return (BenchmarkJob.objects.filter(owner=current_user(self.request))
                .prefetch_related("runs__node__provider", "runs__node__region", "runs__samples"))

    @extend_schema(
        request=BenchmarkRequestSerializer, responses={202: BenchmarkJobSerializer},
        parameters=[OpenApiParameter("Idempotency-Key", str, OpenApiParameter.HEADER,
                                     description="same key and body return the same job")],
    )
    def create(self, request: Request) -> Response:
        body = BenchmarkRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        job, created = submission.submit(
            current_user(request), body.validated_data["nodes"], body.validated_data["suite"],
            body.validated_data["params"],
            idempotency_key=request.headers.get("Idempotency-Key", "")[:128],
            profile=body.validated_data["profile"],
        )
        if not created:  # an earlier request's job, as it stands now
            job = self.get_queryset().get(pk=job.pk)
        data = BenchmarkJobSerializer(job, context={"request": request}).data
        return Response(data, status=status.HTTP_202_ACCEPTED, headers={"Location": data["url"]})

    @extend_schema(request=None, responses={200: BenchmarkJobSerializer,
                                            409: OpenApiResponse(description="already finished")})
    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, pk: str | None = None) -> Response:
        job = self.get_object()
        if not lifecycle.cancel(job):
            return error("the job has already finished: nothing to cancel",
                         status.HTTP_409_CONFLICT)
        job = self.get_queryset().get(pk=job.pk)
        return Response(BenchmarkJobSerializer(job, context={"request": request}).data)
