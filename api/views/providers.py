"""Provider actions: enrolment tokens for new hosts, revoking a node."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.throttling import ScopedRateThrottle
from rest_framework.views import APIView

from api.errors import error
from api.permissions import current_user
from api.serializers import (
    EnrolmentTokenRequestSerializer,
    EnrolmentTokenSerializer,
    NodePriceSerializer,
    NodeSerializer,
)
from fleet.models import Node, Provider, Region
from fleet.services import enrolment, revocation


class EnrolmentTokenView(APIView):
    throttle_classes = [ScopedRateThrottle]
    throttle_scope = "enrolment-token"
    @extend_schema(request=EnrolmentTokenRequestSerializer,
                   responses={201: EnrolmentTokenSerializer})
    def post(self, request: Request, provider_id: int) -> Response:
        provider = get_object_or_404(Provider, pk=provider_id, owners=current_user(request))
        body = EnrolmentTokenRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        region = Region.objects.filter(code=body.validated_data["region"]).first()
        if region is None:
            return error("unknown region", 400, {"region": "no region with this code"})
        token, plain = enrolment.create_token(provider, region, body.validated_data["node_name"],
                                              current_user(request))
        data = {"token": plain, "node_name": token.node_name, "region": region.code,
                "expires_at": token.expires_at}
        return Response(EnrolmentTokenSerializer(data).data, status=status.HTTP_201_CREATED)


class NodeRevokeView(APIView):
    @extend_schema(request=None, responses={200: NodeSerializer})
    def post(self, request: Request, node_id: int) -> Response:
        node = get_object_or_404(Node, pk=node_id, trial_of__isnull=True,
                                 provider__owners=current_user(request))
        revocation.revoke(node, reason=str(request.data.get("reason", "")) or "revoked by provider")
        node.refresh_from_db()
        return Response(NodeSerializer(node).data)


class NodePriceView(APIView):
    """The node's provider states its monthly price, for price-performance."""

    @extend_schema(request=NodePriceSerializer, responses={200: NodeSerializer})
    def post(self, request: Request, node_id: int) -> Response:
        node = get_object_or_404(Node, pk=node_id, trial_of__isnull=True,
                                 provider__owners=current_user(request))
        body = NodePriceSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        node.monthly_price_cny = body.validated_data["monthly_price_cny"]
        node.save(update_fields=["monthly_price_cny"])
        return Response(NodeSerializer(node).data)
