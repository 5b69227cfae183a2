"""A host exchanges its one-time token for its credentials."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.throttling import ScopedRateThrottle
from rest_framework.views import APIView

from api.serializers import EnrolRequestSerializer, NodeCredentialsSerializer
from fleet.services import enrolment


class EnrolView(APIView):
    # The one-time token is the credential here.
    authentication_classes: list[type] = []
    permission_classes = [AllowAny]
    throttle_classes = [ScopedRateThrottle]
    throttle_scope = "enrolment"  # per IP: guessing tokens costs an hour per 20 tries

    @extend_schema(request=EnrolRequestSerializer, responses={201: NodeCredentialsSerializer})
    def post(self, request: Request) -> Response:
        body = EnrolRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        creds = enrolment.redeem(body.validated_data["token"], body.validated_data["address"],
                                 body.validated_data["inventory"], body.validated_data["iperf3_port"],
                                 # The host's source as DRF sees it (NUM_PROXIES honoured).
                                 observed_address=ScopedRateThrottle().get_ident(request),
                                 trial=body.validated_data["trial"])
        return Response(NodeCredentialsSerializer(creds.as_config()).data,
                        status=status.HTTP_201_CREATED)
