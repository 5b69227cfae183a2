"""Liveness and configuration warnings (e.g. running without per-node broker users)."""

from __future__ import annotations

from django.db import connection
from django.db.models import Count
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from fleet.models import Node
from fleet.services.broker import acl_mode_warning, brokers


class HealthView(APIView):
    authentication_classes: list[type] = []
    permission_classes = [AllowAny]

    @extend_schema(responses={200: inline_serializer("Health", {
        "status": serializers.CharField(), "database": serializers.CharField(),
        "node_broker_acl": serializers.BooleanField(),
        "warnings": serializers.ListField(child=serializers.CharField())})})
    def get(self, request: Request) -> Response:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        warning = acl_mode_warning()
        suspended = [f"node {name}: {reason}" for name, reason in Node.objects.exclude(
            broker_suspended_reason="").values_list("name", "broker_suspended_reason")[:100]]
        # A broker taken out of NODE_BROKERS strands its nodes: nothing reaches them.
        stranded = [f"{n} active nodes are on broker {name!r}, which NODE_BROKERS does not list"
                    for name, n in Node.objects.filter(status=Node.Status.ACTIVE)
                    .exclude(broker__in=list(brokers())).values("broker")
                    .annotate(n=Count("id")).values_list("broker", "n")]
        return Response({"status": "ok", "database": "ok", "node_broker_acl": warning is None,
                         "warnings": ([warning] if warning else []) + suspended + stranded})
