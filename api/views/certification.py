"""Certification: profiles, requests by a node's provider, certificates anyone can verify."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.permissions import AllowAny, IsAdminUser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.errors import error
from api.permissions import current_user
from api.serializers import (
    CertificateSerializer,
    CertificationProfileSerializer,
    CertificationRequestSerializer,
    CertificationSubmitSerializer,
    certificate_data,
)
from certification.models import Certificate, CertificationProfile, CertificationRequest
from certification.services import issuing as certification
from certification.services import signing
from fleet.models import Node


class ProfileListView(APIView):
    authentication_classes: list[type] = []
    permission_classes = [AllowAny]

    @extend_schema(responses={200: CertificationProfileSerializer(many=True)})
    def get(self, request: Request) -> Response:
        profiles = CertificationProfile.objects.filter(published=True).order_by("name", "-version")
        return Response(CertificationProfileSerializer(profiles, many=True).data)


class NodeCertificationView(APIView):
    @extend_schema(request=CertificationSubmitSerializer,
                   responses={202: CertificationRequestSerializer})
    def post(self, request: Request, node_id: int) -> Response:
        user = current_user(request)
        node = get_object_or_404(Node, pk=node_id, trial_of__isnull=True,
                                 provider__owners=user, status=Node.Status.ACTIVE)
        body = CertificationSubmitSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        peers = list(Node.objects.filter(pk__in=body.validated_data["peers"], status="active"))
        if len(peers) != len(set(body.validated_data["peers"])):
            return error("unknown or revoked peer node ids", 400, {"peers": "unknown ids"})
        cert_request = certification.request(node, body.validated_data["profile"], user, peers)
        return Response(CertificationRequestSerializer(cert_request, context={"request": request}).data,
                        status=status.HTTP_202_ACCEPTED)

    @extend_schema(responses={200: CertificationRequestSerializer(many=True)})
    def get(self, request: Request, node_id: int) -> Response:
        node = get_object_or_404(Node, pk=node_id, trial_of__isnull=True)
        requests = CertificationRequest.objects.filter(node=node).order_by("-id")[:50]
        return Response(CertificationRequestSerializer(requests, many=True,
                                                       context={"request": request}).data)


class CertificateView(APIView):
    authentication_classes: list[type] = []
    permission_classes = [AllowAny]

    @extend_schema(responses={200: CertificateSerializer})
    def get(self, request: Request, cert_id: int) -> Response:
        return Response(certificate_data(get_object_or_404(Certificate, pk=cert_id)))


class PublicKeyView(APIView):
    authentication_classes: list[type] = []
    permission_classes = [AllowAny]

    @extend_schema(responses={200: inline_serializer("PublicKey", {
        "algorithm": serializers.CharField(), "key_id": serializers.CharField(),
        "public_key_pem": serializers.CharField()})})
    def get(self, request: Request) -> Response:
        return Response({"algorithm": "Ed25519", "key_id": signing.key_id(),
                         "public_key_pem": signing.public_pem().decode()})


class RevokeView(APIView):
    """An operator's action (staff only): the certificate stops being valid at once."""

    permission_classes = [IsAdminUser]

    @extend_schema(request=inline_serializer("Revoke", {"reason": serializers.CharField()}),
                   responses={200: CertificateSerializer})
    def post(self, request: Request, cert_id: int) -> Response:
        cert = get_object_or_404(Certificate, pk=cert_id)
        reason = str(request.data.get("reason") or "").strip()
        if not reason:
            return error("say why: {\"reason\": \"...\"}", 400, {"reason": "required"})
        certification.revoke(cert, f"revoked by operator: {reason}")
        cert.refresh_from_db()
        return Response(certificate_data(cert))
