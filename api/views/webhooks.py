"""A buyer's webhooks: register, list, delete, and read each one's delivery log."""

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
    WebhookRequestSerializer,
    WebhookSerializer,
)
from hooks.models import Delivery, Webhook
from hooks.services import registry


class WebhookViewSet(mixins.ListModelMixin, mixins.DestroyModelMixin, viewsets.GenericViewSet):
    serializer_class = WebhookSerializer
    pagination_class = NewestFirst
    throttle_scope = "webhook"
    lookup_value_regex = r"[0-9]+"

    def get_throttles(self) -> list[Any]:
        # Registrations per user (each resolves a name and may fan out events); reading is free.
        return [ScopedRateThrottle()] if self.action == "create" else []

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
                                    body.validated_data["events"])
        return Response(NewWebhookSerializer(webhook).data, status=status.HTTP_201_CREATED)

    @extend_schema(responses={200: DeliverySerializer(many=True)})
    @action(detail=True, methods=["get"], pagination_class=NewestFirst)
    def deliveries(self, request: Request, pk: str | None = None) -> Response:
        webhook = get_object_or_404(self.get_queryset(), pk=pk)
        page = self.paginate_queryset(Delivery.objects.filter(webhook=webhook))
        return self.get_paginated_response(DeliverySerializer(page, many=True).data)
