"""The catalogue of enrolled nodes that procurement can benchmark."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db.models import Q, QuerySet
from rest_framework import viewsets

from api.pagination import OldestFirst
from api.serializers import NodeSerializer
from fleet.models import Node


class NodeViewSet(viewsets.ReadOnlyModelViewSet[Node]):
    serializer_class = NodeSerializer
    pagination_class = OldestFirst
    filterset_fields = {"region__code": ["exact"], "region__province": ["iexact"],
                        "provider__name": ["iexact"], "status": ["exact"]}

    def get_queryset(self) -> QuerySet[Node]:
        # A buyer's trial agents are that buyer's to see: to anyone else they do not exist.
        user = self.request.user
        mine = Q(trial_buyer=user) if user.is_authenticated and isinstance(user, User) else Q(pk__in=[])
        return Node.objects.select_related("provider", "region").filter(
            Q(trial_of__isnull=True) | mine)
