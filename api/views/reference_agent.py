"""The endpoints a platform reference's agent calls with its reference key: its servers'
own records of the tests they served (jobs.services.reference_records), the addresses its
servers let in (fleet.services.reference_allowlist), and its iperf3 server's authentication:
the public key it runs with, and the turns it lets in (jobs.services.iperf3_turns)."""

from __future__ import annotations

import time

from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.auth import ReferenceKeyAuthentication
from api.permissions import IsReference
from api.serializers import (
    ReferenceAllowlistSerializer,
    ReferenceIperf3KeySerializer,
    ReferenceIperf3UsersSerializer,
    ReferenceRecordsSerializer,
    ReferenceRecordsStoredSerializer,
)
from fleet.models import ReferenceEndpoint
from fleet.services import reference_allowlist, reference_keys
from jobs.services import iperf3_turns, reference_records


class ReferenceRecordsView(APIView):
    authentication_classes = [ReferenceKeyAuthentication]
    permission_classes = [IsReference]

    @extend_schema(request=ReferenceRecordsSerializer,
                   responses={200: ReferenceRecordsStoredSerializer})
    def post(self, request: Request) -> Response:
        assert isinstance(request.auth, ReferenceEndpoint)
        body = ReferenceRecordsSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        stored = reference_records.ingest(request.auth, data["iperf3"], data["echo"],
                                          data["through"])
        return Response(stored.as_dict())


class ReferenceAllowlistView(APIView):
    authentication_classes = [ReferenceKeyAuthentication]
    permission_classes = [IsReference]

    @extend_schema(responses={200: ReferenceAllowlistSerializer})
    def get(self, request: Request) -> Response:
        generated_at = time.time()  # read first: every node enrolled by then is listed
        body = {"addresses": reference_allowlist.addresses(), "generated_at": generated_at}
        return Response(ReferenceAllowlistSerializer(body).data)


class ReferenceIperf3KeyView(APIView):
    authentication_classes = [ReferenceKeyAuthentication]
    permission_classes = [IsReference]

    @extend_schema(request=ReferenceIperf3KeySerializer, responses={200: ReferenceIperf3KeySerializer})
    def put(self, request: Request) -> Response:
        assert isinstance(request.auth, ReferenceEndpoint)
        body = ReferenceIperf3KeySerializer(data=request.data)
        body.is_valid(raise_exception=True)
        reference_keys.set_iperf3_public_key(request.auth, body.validated_data["public_key"])
        return Response(body.validated_data)


class ReferenceIperf3UsersView(APIView):
    authentication_classes = [ReferenceKeyAuthentication]
    permission_classes = [IsReference]

    @extend_schema(responses={200: ReferenceIperf3UsersSerializer})
    def get(self, request: Request) -> Response:
        assert isinstance(request.auth, ReferenceEndpoint)
        now = timezone.now()
        body = {"users": iperf3_turns.users(request.auth.server_id(), now),
                "generated_at": now.timestamp()}
        return Response(ReferenceIperf3UsersSerializer(body).data)
