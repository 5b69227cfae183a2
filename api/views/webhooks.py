"""A buyer's webhooks: register, list, switch on or off, delete, ping, rotate the secret, and
read each one's delivery log."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.throttling import ScopedRateThrottle

from api.pagination import NewestFirst
from api.permissions import current_user
from api.webhook_serializers import (
    DeliverySerializer,
    NewWebhookSerializer,
    SecretSerializer,
    WebhookChangeSerializer,
    WebhookRequestSerializer,
    WebhookSerializer,
)
from hooks.models import Delivery, Webhook
from hooks.services import ping as pinging
from hooks.services import registry

# The actions that cost the platform work per call, per user: a registration resolves a name
# and may fan out events, a ping is a request the platform sends, a new secret is rare.
# Reading and switching on or off are free.
THROTTLE_SCOPES = {"create": "webhook", "secret": "webhook", "ping": "webhook-ping"}


class WebhookViewSet(mixins.ListModelMixin, mixins.DestroyModelMixin, viewsets.GenericViewSet):
    serializer_class = WebhookSerializer
    pagination_class = NewestFirst
    lookup_value_regex = r"[0-9]+"

    def get_throttles(self) -> list[Any]:
        scope = THROTTLE_SCOPES.get(self.action or "")
        if scope is None:
            return []
        self.throttle_scope = scope  # what ScopedRateThrottle reads
        return [ScopedRateThrottle()]

    def get_queryset(self) -> QuerySet[Webhook]:
        if getattr(self, "swagger_fake_view", False):  # schema generation has no user
            return Webhook.objects.none()
        # Another buyer's webhook answers 404, as if it did not exist.
        return Webhook.objects.filter(owner=current_user(self.request))

    @extend_schema(request=WebhookRequestSerializer, responses={201: NewWebhookSerializer})
    def create(self, request: Request) -> Response:
        body = WebhookRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        webhook = registry.register(current_user(request), body.validated_data["url"],
                                    body.validated_data["events"], body.validated_data["nodes"])
        return Response(NewWebhookSerializer(webhook).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=WebhookChangeSerializer, responses={200: WebhookSerializer})
    def partial_update(self, request: Request, pk: str | None = None) -> Response:
        webhook = self.get_object()
        body = WebhookChangeSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        webhook = registry.set_active(webhook, body.validated_data["active"])
        return Response(WebhookSerializer(webhook).data)

    @extend_schema(request=None, responses={202: DeliverySerializer})
    @action(detail=True, methods=["post"])
    def ping(self, request: Request, pk: str | None = None) -> Response:
        delivery = pinging.ping(self.get_object())
        return Response(DeliverySerializer(delivery).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(request=None, responses={200: SecretSerializer})
    @action(detail=True, methods=["post"])
    def secret(self, request: Request, pk: str | None = None) -> Response:
        webhook = registry.rotate_secret(self.get_object())
        return Response(SecretSerializer({"secret": webhook.secret}).data)

    @extend_schema(responses={200: DeliverySerializer(many=True)})
    @action(detail=True, methods=["get"], pagination_class=NewestFirst)
    def deliveries(self, request: Request, pk: str | None = None) -> Response:
        webhook = get_object_or_404(self.get_queryset(), pk=pk)
        page = self.paginate_queryset(Delivery.objects.filter(webhook=webhook))
        return self.get_paginated_response(DeliverySerializer(page, many=True).data)
