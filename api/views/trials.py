"""A buyer's trial of a provider's node: the token its own agent enrols with."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.throttling import ScopedRateThrottle
from rest_framework.views import APIView

from api.permissions import current_user
from api.serializers import TrialTokenRequestSerializer, TrialTokenSerializer
from fleet.models import Node
from fleet.services import trials


class TrialTokenView(APIView):
    throttle_classes = [ScopedRateThrottle]
    throttle_scope = "enrolment-token"

    @extend_schema(request=TrialTokenRequestSerializer, responses={201: TrialTokenSerializer})
    def post(self, request: Request, node_id: int) -> Response:
        node = get_object_or_404(Node.objects.select_related("provider", "region"), pk=node_id)
        body = TrialTokenRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        token, plain = trials.create_token(node, current_user(request), body.validated_data["hours"])
        data = {"token": plain, "node": node.pk, "agent_name": token.node_name,
                "trial_ends_at": token.trial_ends_at, "expires_at": token.expires_at,
                "command": f"benchctl enroll --trial --url {request.build_absolute_uri('/')[:-1]} "
                           f"--token {plain}"}
        return Response(TrialTokenSerializer(data).data, status=status.HTTP_201_CREATED)
