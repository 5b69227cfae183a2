"""Stable or shared: a node's figures across the platform's re-tests, and the provider's
pause of them (maintenance), which the board shows and the stability figure judges."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.shortcuts import get_object_or_404
from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.permissions import current_user
from api.stability_serializers import NodeStabilitySerializer, PauseRequestSerializer, PauseSerializer
from board import stability_board
from fleet.models import Node, RetestPause
from jobs.models import Retest
from jobs.services import retests

SHOWN_RETESTS = 100


class NodeStabilityView(APIView):
    @extend_schema(responses={200: NodeStabilitySerializer})
    def get(self, request: Request, node_id: int) -> Response:
        node = get_object_or_404(Node, pk=node_id, trial_of__isnull=True)
        return Response(stability_data(node))


def stability_data(node: Node) -> dict[str, Any]:
    now = timezone.now()
    node_stability = stability_board.of_node(node.pk, now)
    found = node_stability.figures
    # Only what has happened: a plan that showed ahead would tell the host when to behave.
    past = (Retest.objects.filter(node=node, due_at__lte=now).exclude(status=Retest.Status.PLANNED)
            .order_by("-due_at")[:SHOWN_RETESTS])
    current = node_stability.paused_now
    return {
        "node": node.pk, "window_days": settings.STABILITY_WINDOW_DAYS,
        "paused_now": pause_data(current) if current else None,
        "figures": [{"metric": m, "badge": stability_board.badge(s), **stability_board.data(s)}
                    for m, s in found.items()],
        "diagnosis": [f.__dict__ for m, s in found.items()
                      if (f := stability_board.finding(m, s)) is not None],
        "retests": [{"due_at": r.due_at, "status": r.status, "reason": r.reason, "job": r.job_id}
                    for r in past],
        "pauses": [pause_data(p) for p in node_stability.pauses],
    }


def pause_data(p: RetestPause) -> dict[str, Any]:
    return {"start": p.start, "end": p.end, "reason": p.reason}


class RetestPauseView(APIView):
    """The node's provider pauses its re-tests for maintenance (at most RETEST_MAX_PAUSE_HOURS
    at once). Every pause is kept and judged: paused too long, or at the same hours day after
    day, and the node's stability reads "not enough data"."""

    @extend_schema(request=PauseRequestSerializer, responses={201: PauseSerializer})
    def post(self, request: Request, node_id: int) -> Response:
        user = current_user(request)
        node = get_object_or_404(Node, pk=node_id, trial_of__isnull=True,
                                 provider__owners=user)
        body = PauseRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        pause = retests.pause(node, body.validated_data["hours"], body.validated_data["reason"], user)
        return Response(pause_data(pause), status=status.HTTP_201_CREATED)


class RetestResumeView(APIView):
    @extend_schema(request=None, responses={200: NodeStabilitySerializer})
    def post(self, request: Request, node_id: int) -> Response:
        node = get_object_or_404(Node, pk=node_id, trial_of__isnull=True,
                                 provider__owners=current_user(request))
        retests.resume(node)
        return Response(stability_data(node))
