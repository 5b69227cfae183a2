"""The catalogue of enrolled nodes that procurement can benchmark."""

from __future__ import annotations

from django.db.models import QuerySet
from rest_framework import viewsets

from api.pagination import OldestFirst
from api.serializers import NodeSerializer
from fleet.models import Node
from fleet.services import catalogue


class NodeViewSet(viewsets.ReadOnlyModelViewSet[Node]):
    serializer_class = NodeSerializer
    pagination_class = OldestFirst
    filterset_fields = {"region__code": ["exact"], "region__province": ["iexact"],
                        "provider__name": ["iexact"], "status": ["exact"]}

    def get_queryset(self) -> QuerySet[Node]:
        return catalogue.visible_to(self.request.user).select_related("provider", "region")
